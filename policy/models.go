package policy

import "time"

// Owner is the retry package's owner (retry/owner.go) as a state
// machine: an attempt cap, a non-blocking admission limiter on attempts
// in flight, a shared budget of integer credits paid before the backoff
// and refunded when the paid retry is not made, and a backoff. The
// bounded, recorded, none and custom policies are Owners with different
// parameters.
type Owner struct {
	name     string
	attempts int
	backoff  Backoff
	lim      *limiter
	budget   *BudgetRules
	credits  int64
	rnd      Rand
}

// NewOwner returns an Owner; a nil budget or limit 0 leaves that part out.
func NewOwner(name string, attempts int, b Backoff, limit int, budget *BudgetRules, rnd Rand) *Owner {
	o := &Owner{name: name, attempts: max(attempts, 1), backoff: b, budget: budget, rnd: rnd}
	if limit > 0 {
		o.lim = &limiter{limit: limit}
	}
	return o
}

// Bounded is the seed's bounded owner (sim.BoundedClient, docs/scenarios.md):
// 3 attempts, 4 admission slots, a retry budget of 1 credit per original
// and 10 per retry capped at 200 (starting empty), full-jitter backoff from
// 25 ms doubling to 200 ms. The deadline and per-attempt timeout are the
// hop's, not the policy's.
func Bounded(rnd Rand) *Owner {
	return NewOwner("bounded", 3, Backoff{Kind: "full_jitter", Base: 25 * time.Millisecond, Cap: 200 * time.Millisecond},
		4, &BudgetRules{Earn: 1, Cost: 10, Cap: 200}, rnd)
}

// Recorded is the policy the recording shows for a hop (Base): its attempt
// cap, backoff, limiter and budget, driven like the retry owner.
func Recorded(b Base, rnd Rand) *Owner {
	return NewOwner("recorded", b.MaxAttempts, b.Backoff, b.Limit, b.Budget, rnd)
}

// None never retries and never sheds.
func None() *Owner { return NewOwner("none", 1, Backoff{}, 0, nil, nil) }

// Name implements Policy.
func (o *Owner) Name() string { return o.name }

// MaxAttempts implements Policy.
func (o *Owner) MaxAttempts() int { return o.attempts }

// Credits is the budget's balance in credits (0 without a budget).
func (o *Owner) Credits() int64 { return o.credits }

// Start earns the original's credit, up to the cap.
func (o *Owner) Start(_ time.Duration, _ *Op) Reason {
	if o.budget != nil {
		o.credits = min(o.credits+o.budget.Earn, max(o.budget.Cap, o.credits))
	}
	return Allowed
}

// Acquire takes a limiter slot; the paid-for retry is being made.
func (o *Owner) Acquire(_ time.Duration, op *Op) Reason {
	if !o.lim.acquire() {
		return ReasonLimiter
	}
	op.paid = false
	return Allowed
}

// Release frees the slot.
func (o *Owner) Release(_ time.Duration, _ *Op, _ Outcome) { o.lim.release() }

// Backoff draws the delay before the next attempt.
func (o *Owner) Backoff(op *Op) time.Duration { return o.backoff.Delay(op.Attempts, o.rnd) }

// Retry pays the retry's cost from the budget.
func (o *Owner) Retry(_ time.Duration, op *Op, _ Outcome) Reason {
	if o.budget == nil {
		return Allowed
	}
	if o.credits < o.budget.Cost {
		return ReasonBudget
	}
	o.credits -= o.budget.Cost
	op.paid = true
	return Allowed
}

// End refunds a retry paid for but not made.
func (o *Owner) End(_ time.Duration, op *Op, _ Outcome) {
	if op.paid && o.budget != nil {
		o.credits = min(o.credits+o.budget.Cost, max(o.budget.Cap, o.credits))
		op.paid = false
	}
}

// Envoy is Envoy's retry budget with the circuit breaker's retry limit
// (envoy.config.cluster.v3.CircuitBreakers.Thresholds): a retry may start
// while the retries in progress stay under max(BudgetPercent % of the
// active plus pending requests, MinRetryConcurrency); without a budget,
// under MaxRetries. Published defaults: budget_percent 20 %,
// min_retry_concurrency 3, max_retries 3; the route's num_retries 1 (2
// attempts); backoff base_interval 25 ms, max_interval 10 x base, the n-th
// retry uniform in [0, (2^n-1) x base]. A retry is "in progress" from the
// decision to retry until the request's next retry decision or its end
// (Envoy's RetryStateImpl holds the retries resource that long).
type Envoy struct {
	attempts            int
	backoff             Backoff
	useBudget           bool
	budgetPercent       float64
	minRetryConcurrency int
	maxRetries          int
	active, retries     int
	rnd                 Rand
}

// NewEnvoy returns Envoy's defaults.
func NewEnvoy(rnd Rand) *Envoy {
	return &Envoy{
		attempts: 2, useBudget: true, budgetPercent: 20, minRetryConcurrency: 3, maxRetries: 3,
		backoff: Backoff{Kind: "envoy", Base: 25 * time.Millisecond, Cap: 250 * time.Millisecond}, rnd: rnd,
	}
}

// Name implements Policy.
func (e *Envoy) Name() string { return "envoy" }

// MaxAttempts implements Policy.
func (e *Envoy) MaxAttempts() int { return e.attempts }

// Start implements Policy.
func (e *Envoy) Start(time.Duration, *Op) Reason { return Allowed }

// Acquire counts the request active.
func (e *Envoy) Acquire(time.Duration, *Op) Reason { e.active++; return Allowed }

// Release counts it done.
func (e *Envoy) Release(time.Duration, *Op, Outcome) { e.active = max(e.active-1, 0) }

// Backoff implements Policy.
func (e *Envoy) Backoff(op *Op) time.Duration { return e.backoff.Delay(op.Attempts, e.rnd) }

// Allowance is the number of retries that may be in progress now.
func (e *Envoy) Allowance() int {
	if !e.useBudget {
		return e.maxRetries
	}
	return max(int(e.budgetPercent/100*float64(e.active)), e.minRetryConcurrency)
}

// Retry implements Policy: the operation's previous retry is released
// first (resetRetry), then the allowance is checked.
func (e *Envoy) Retry(_ time.Duration, op *Op, _ Outcome) Reason {
	if op.holds {
		op.holds = false
		e.retries--
	}
	if e.retries >= e.Allowance() {
		if e.useBudget {
			return ReasonBudget // upstream_rq_retry_overflow, budget
		}
		return ReasonBreaker // upstream_rq_retry_overflow, circuit breaker
	}
	e.retries++
	op.holds = true
	return Allowed
}

// End releases the operation's retry.
func (e *Envoy) End(_ time.Duration, op *Op, _ Outcome) {
	if op.holds {
		op.holds = false
		e.retries--
	}
}

// Finagle is Finagle's RetryBudget (com.twitter.finagle.service.RetryBudget,
// TokenRetryBudget over a LeakyTokenBucket): every original deposits one
// token that expires after TTL, a retry withdraws 1/PercentCanRetry
// tokens, and a reserve of MinRetriesPerSec x TTL retries never expires.
// Published defaults (Finagle blog "Retry Budgets", 2016): ttl 10 s,
// minRetriesPerSec 10, percentCanRetry 0.2. The bucket's window is kept in
// ten slices, as Finagle's WindowedAdder does. Attempts and backoff are
// the hop's (Base): the budget is what Finagle adds.
type Finagle struct {
	attempts int
	backoff  Backoff
	ttl      time.Duration
	minPerS  float64
	percent  float64
	// Scaled integers, as TokenRetryBudget: a deposit is 1000, a
	// withdrawal 1000/percent.
	deposit, withdraw, reserve int64
	slices                     [10]int64
	sliceAt                    [10]int64 // which slice index each entry holds
	rnd                        Rand
}

// NewFinagle returns Finagle's defaults over the hop's base.
func NewFinagle(b Base, rnd Rand) *Finagle {
	f := &Finagle{attempts: max(b.MaxAttempts, 1), backoff: b.Backoff, ttl: 10 * time.Second, minPerS: 10, percent: 0.2, rnd: rnd}
	f.init()
	return f
}

func (f *Finagle) init() {
	f.deposit = 1000
	f.withdraw = int64(1000 / f.percent)
	f.reserve = int64(f.minPerS * f.ttl.Seconds() * float64(f.withdraw))
	for i := range f.sliceAt {
		f.sliceAt[i] = -1
	}
}

func (f *Finagle) slice(now time.Duration) int64 { return int64(now / (f.ttl / 10)) }

func (f *Finagle) add(now time.Duration, n int64) {
	s := f.slice(now)
	i := int(s % 10)
	if f.sliceAt[i] != s {
		f.sliceAt[i], f.slices[i] = s, 0
	}
	f.slices[i] += n
}

// Balance is the reserve plus the unexpired deposits minus withdrawals, in
// scaled tokens.
func (f *Finagle) Balance(now time.Duration) int64 {
	s := f.slice(now)
	sum := f.reserve
	for i := range f.slices {
		if f.sliceAt[i] >= 0 && s-f.sliceAt[i] < 10 {
			sum += f.slices[i]
		}
	}
	return sum
}

// Name implements Policy.
func (f *Finagle) Name() string { return "finagle" }

// MaxAttempts implements Policy.
func (f *Finagle) MaxAttempts() int { return f.attempts }

// Start deposits the original's token.
func (f *Finagle) Start(now time.Duration, _ *Op) Reason { f.add(now, f.deposit); return Allowed }

// Acquire implements Policy.
func (f *Finagle) Acquire(time.Duration, *Op) Reason { return Allowed }

// Release implements Policy.
func (f *Finagle) Release(time.Duration, *Op, Outcome) {}

// Backoff implements Policy.
func (f *Finagle) Backoff(op *Op) time.Duration { return f.backoff.Delay(op.Attempts, f.rnd) }

// Retry withdraws a retry's tokens.
func (f *Finagle) Retry(now time.Duration, _ *Op, _ Outcome) Reason {
	if f.Balance(now) < f.withdraw {
		return ReasonBudget // Finagle's budget_exhausted
	}
	f.add(now, -f.withdraw)
	return Allowed
}

// End implements Policy.
func (f *Finagle) End(time.Duration, *Op, Outcome) {}

// GRPC is gRPC's retry throttling (gRFC A6, "retryThrottling" in the
// service config): a token count starts at MaxTokens; every attempt that
// fails with a status in retryableStatusCodes takes 1 token, every success
// adds TokenRatio (capped at MaxTokens); while the count is at or below
// MaxTokens/2 no retry is made. Other failures (a status not retryable, a
// cancel) neither retry nor count, and transparent retries (which never
// reached the server's application) are not modelled. A temporary error
// (UNAVAILABLE) is retryable; a timeout (DEADLINE_EXCEEDED) only with
// retryTimeouts: on by default, as the hop whose attempts and backoff the
// model keeps retried its timeouts; off is A6's example policy
// (UNAVAILABLE only).
// Published example values: maxTokens 10, tokenRatio 0.1; maxAttempts is
// capped at 5. Tokens are kept in thousandths, as A6 specifies three
// decimal places. Attempts and backoff are the hop's (A6 has no default
// backoff: initialBackoff, maxBackoff and backoffMultiplier are required).
type GRPC struct {
	attempts      int
	backoff       Backoff
	maxTokens     int64 // thousandths
	tokenRatio    int64 // thousandths
	tokens        int64
	retryTimeouts bool
	rnd           Rand
}

// NewGRPC returns A6's example throttling over the hop's base.
func NewGRPC(b Base, rnd Rand) *GRPC {
	g := &GRPC{attempts: min(max(b.MaxAttempts, 1), 5), backoff: b.Backoff, maxTokens: 10000, tokenRatio: 100, retryTimeouts: true, rnd: rnd}
	g.tokens = g.maxTokens
	return g
}

// Tokens is the token count (in tokens).
func (g *GRPC) Tokens() float64 { return float64(g.tokens) / 1000 }

// Name implements Policy.
func (g *GRPC) Name() string { return "grpc" }

// MaxAttempts implements Policy.
func (g *GRPC) MaxAttempts() int { return g.attempts }

// Start implements Policy.
func (g *GRPC) Start(time.Duration, *Op) Reason { return Allowed }

// Acquire implements Policy.
func (g *GRPC) Acquire(time.Duration, *Op) Reason { return Allowed }

// Release counts the attempt's answer into the token count: a failure
// only when its status is retryable. A cancelled attempt got no answer and
// counts nothing.
func (g *GRPC) Release(_ time.Duration, _ *Op, o Outcome) {
	switch {
	case o == Success:
		g.tokens = min(g.tokens+g.tokenRatio, g.maxTokens)
	case g.retryable(o):
		g.tokens = max(g.tokens-1000, 0)
	}
}

// retryable reports whether an outcome's status is in retryableStatusCodes.
func (g *GRPC) retryable(o Outcome) bool {
	return o == Failure || o == Timeout && g.retryTimeouts
}

// Backoff implements Policy.
func (g *GRPC) Backoff(op *Op) time.Duration { return g.backoff.Delay(op.Attempts, g.rnd) }

// Retry is refused for a status that is not retryable, and while the
// token count is at or below half of MaxTokens.
func (g *GRPC) Retry(_ time.Duration, _ *Op, o Outcome) Reason {
	if !g.retryable(o) {
		return ReasonNonRetry
	}
	if g.tokens <= g.maxTokens/2 {
		return ReasonBudget
	}
	return Allowed
}

// End implements Policy.
func (g *GRPC) End(time.Duration, *Op, Outcome) {}

// SRE is the client-side adaptive throttling of the SRE book (Site
// Reliability Engineering, ch. 21 "Handling Overload"): every request
// (first try or retry) is rejected locally with probability
// max(0, (requests - K x accepts) / (requests + 1)), counted over the
// last Window. Published values: K 2, a 2-minute window. A request the
// backend answered (any answer but an overload) is an accept; a local
// rejection is a request too. Attempts and backoff are the hop's.
type SRE struct {
	attempts int
	backoff  Backoff
	k        float64
	window   time.Duration
	// Per-second buckets of requests and accepts.
	req, acc []int64
	at       []int64
	rnd      Rand
}

// NewSRE returns the book's values over the hop's base.
func NewSRE(b Base, rnd Rand) *SRE {
	s := &SRE{attempts: max(b.MaxAttempts, 1), backoff: b.Backoff, k: 2, window: 2 * time.Minute, rnd: rnd}
	s.init()
	return s
}

func (s *SRE) init() {
	n := max(int(s.window/time.Second), 1)
	s.req, s.acc, s.at = make([]int64, n), make([]int64, n), make([]int64, n)
	for i := range s.at {
		s.at[i] = -1
	}
}

func (s *SRE) bucket(now time.Duration) int {
	sec := int64(now / time.Second)
	i := int(sec % int64(len(s.at)))
	if s.at[i] != sec {
		s.at[i], s.req[i], s.acc[i] = sec, 0, 0
	}
	return i
}

// Counts are requests and accepts over the window ending at now.
func (s *SRE) Counts(now time.Duration) (requests, accepts int64) {
	sec := int64(now / time.Second)
	for i := range s.at {
		if s.at[i] >= 0 && sec-s.at[i] < int64(len(s.at)) {
			requests += s.req[i]
			accepts += s.acc[i]
		}
	}
	return requests, accepts
}

// RejectProbability is the client's rejection probability at now.
func (s *SRE) RejectProbability(now time.Duration) float64 {
	r, a := s.Counts(now)
	return max(0, (float64(r)-s.k*float64(a))/(float64(r)+1))
}

// Name implements Policy.
func (s *SRE) Name() string { return "sre" }

// MaxAttempts implements Policy.
func (s *SRE) MaxAttempts() int { return s.attempts }

// Start implements Policy.
func (s *SRE) Start(time.Duration, *Op) Reason { return Allowed }

// Acquire throttles the request with the current probability.
func (s *SRE) Acquire(now time.Duration, _ *Op) Reason {
	p := s.RejectProbability(now)
	s.req[s.bucket(now)]++
	if p > 0 && float64(s.rnd(1<<30)) < p*float64(1<<30) {
		return ReasonLimiter
	}
	return Allowed
}

// Release counts an accept.
func (s *SRE) Release(now time.Duration, _ *Op, o Outcome) {
	if o == Success || o == Permanent {
		s.acc[s.bucket(now)]++
	}
}

// Backoff implements Policy.
func (s *SRE) Backoff(op *Op) time.Duration { return s.backoff.Delay(op.Attempts, s.rnd) }

// Retry implements Policy: the throttle acts on the retry's Acquire.
func (s *SRE) Retry(time.Duration, *Op, Outcome) Reason { return Allowed }

// End implements Policy.
func (s *SRE) End(time.Duration, *Op, Outcome) {}

// AWS is the AWS SDK's standard retry mode (aws-sdk-go-v2 aws/retry,
// "Standard"; the SDKs and Tools reference guide, "Retry behavior"): 3
// attempts; a retry quota of 500 tokens, a retry costs 5 (10 after a
// timeout), a success refunds the retry's cost, or adds 1 when it needed
// no retry (capped at 500); the n-th retry waits U[0,1) x 2^n x 1 s,
// capped at 20 s (ExponentialJitterBackoff).
type AWS struct {
	attempts                         int
	backoff                          Backoff
	quota, maxQuota                  int64
	retryCost, timeoutCost, noRetryN int64
	rnd                              Rand
}

// NewAWS returns the standard mode's defaults.
func NewAWS(rnd Rand) *AWS {
	return &AWS{attempts: 3, backoff: Backoff{Kind: "exponential_jitter", Base: time.Second, Cap: 20 * time.Second},
		quota: 500, maxQuota: 500, retryCost: 5, timeoutCost: 10, noRetryN: 1, rnd: rnd}
}

// Quota is the retry quota's tokens.
func (a *AWS) Quota() int64 { return a.quota }

// Name implements Policy.
func (a *AWS) Name() string { return "aws" }

// MaxAttempts implements Policy.
func (a *AWS) MaxAttempts() int { return a.attempts }

// Start implements Policy.
func (a *AWS) Start(time.Duration, *Op) Reason { return Allowed }

// Acquire implements Policy.
func (a *AWS) Acquire(time.Duration, *Op) Reason { return Allowed }

// Release implements Policy.
func (a *AWS) Release(time.Duration, *Op, Outcome) {}

// Backoff implements Policy.
func (a *AWS) Backoff(op *Op) time.Duration { return a.backoff.Delay(op.Attempts, a.rnd) }

// Retry takes the retry's cost from the quota.
func (a *AWS) Retry(_ time.Duration, op *Op, o Outcome) Reason {
	cost := a.retryCost
	if o == Timeout {
		cost = a.timeoutCost
	}
	if a.quota < cost {
		return ReasonBudget // the SDK's "retry quota exceeded"
	}
	a.quota -= cost
	op.cost = cost
	return Allowed
}

// End refunds on success.
func (a *AWS) End(_ time.Duration, op *Op, o Outcome) {
	if o != Success {
		return
	}
	if op.Attempts > 1 {
		a.quota = min(a.quota+op.cost, a.maxQuota)
	} else {
		a.quota = min(a.quota+a.noRetryN, a.maxQuota)
	}
}
