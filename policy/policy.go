// Package policy models retry policies as small, deterministic state
// machines: the seed's bounded owner, Envoy's retry budget and circuit
// breaker, Finagle's RetryBudget, gRPC's retryThrottling (A6), the SRE
// book's client-side adaptive throttling, the AWS SDK's standard mode, no
// retries, and the policy a recording shows. Each model keeps its source's
// published defaults, cited on its constructor and in docs/whatif.md.
//
// Nothing here does I/O, reads a clock or draws its own random numbers:
// time is the virtual time the caller passes (an offset from the start of
// a run) and randomness is injected, so the same calls give the same
// answers. package whatif drives these machines in its discrete-event
// model; the call order mirrors retry.Owner.Do (retry/owner.go).
package policy

import (
	"fmt"
	"math"
	"time"
)

// Reason says why an original was shed or a failed attempt not retried.
// The empty Reason means "allowed".
type Reason string

// Reasons, the vocabulary of the fate ledger.
const (
	Allowed           Reason = ""
	ReasonMaxAttempts Reason = "max_attempts"
	ReasonBudget      Reason = "budget"
	ReasonLimiter     Reason = "limiter"
	ReasonDeadline    Reason = "deadline"
	ReasonNonRetry    Reason = "non_retryable"
	ReasonBreaker     Reason = "breaker"
)

// Outcome is how one attempt ended, as the calling hop saw it.
type Outcome int

// Attempt outcomes.
const (
	// Success: an answer the caller accepts.
	Success Outcome = iota
	// Failure: a temporary error answered by the next hop (a 503).
	Failure
	// Timeout: the attempt ran out of its per-attempt time or the
	// operation deadline.
	Timeout
	// Permanent: an error no policy retries.
	Permanent
	// Cancelled: the caller gave up while the attempt ran.
	Cancelled
)

func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Timeout:
		return "timeout"
	case Permanent:
		return "permanent"
	case Cancelled:
		return "cancelled"
	}
	return "unknown"
}

// Rand returns a uniform integer in [0, n) for n > 0. It is injected so
// that backoff jitter and probabilistic throttling are repeatable.
type Rand func(n int64) int64

// Op is the state of one operation (one original at one hop) that a
// policy may keep between calls. The driver owns it and never reads the
// policy's fields in it.
type Op struct {
	// Attempts is the attempts started so far.
	Attempts int
	// Start is when the operation began.
	Start time.Duration
	// paid is a retry's budget cost paid but the retry not made yet (the
	// bounded owner refunds it); cost what it cost (AWS refunds it on a
	// success); holds is Envoy's retry resource held by this operation.
	paid  bool
	cost  int64
	holds bool
}

// Policy is one hop's retry policy. The driver calls, for each operation:
// Start once; then before each attempt Acquire (and, when it allowed the
// attempt, Release when the attempt ends); after a failed attempt Backoff
// and, if the delay fits the deadline, Retry; and End once. Reasons the
// driver decides itself (max_attempts before Backoff, deadline, non
// retryable) never reach the policy's state but End.
type Policy interface {
	// Name is the model's name (envoy, finagle, ...).
	Name() string
	// MaxAttempts is the attempt cap, the first try included.
	MaxAttempts() int
	// Start is told an original begins at now; a non-empty Reason sheds
	// it locally before any attempt.
	Start(now time.Duration, op *Op) Reason
	// Acquire asks whether attempt op.Attempts+1 may start now (a
	// non-blocking limiter or throttle). When it allows, the driver
	// increments op.Attempts and later calls Release.
	Acquire(now time.Duration, op *Op) Reason
	// Release is the end of the attempt op.Attempts with outcome o.
	Release(now time.Duration, op *Op, o Outcome)
	// Backoff is the delay before attempt op.Attempts+1.
	Backoff(op *Op) time.Duration
	// Retry asks whether the failed operation may make attempt
	// op.Attempts+1 after its backoff; it pays for the retry if it allows.
	Retry(now time.Duration, op *Op, o Outcome) Reason
	// End is the end of the operation with the outcome of its last attempt
	// (Success only when it succeeded).
	End(now time.Duration, op *Op, o Outcome)
}

// Backoff is a delay shape before retry n (n = 1 before the second
// attempt).
type Backoff struct {
	// Kind: "none", "full_jitter" (uniform in [0, min(Base*2^(n-1), Cap)],
	// the retry package's), "envoy" (uniform in [0, min((2^n-1)*Base,
	// Cap)]), "exponential_jitter" (U[0,1) * Base * 2^n, capped: the AWS
	// SDK's).
	Kind      string
	Base, Cap time.Duration
}

// Delay draws the delay before retry n.
func (b Backoff) Delay(n int, rnd Rand) time.Duration {
	if n < 1 || b.Base <= 0 {
		return 0
	}
	shift := min(n, 40)
	var ceil float64
	switch b.Kind {
	case "full_jitter":
		ceil = float64(b.Base) * math.Pow(2, float64(shift-1))
	case "envoy":
		ceil = float64(b.Base) * (math.Pow(2, float64(shift)) - 1)
	case "exponential_jitter":
		// U[0,1) * Base * 2^n, then capped (the cap applies to the draw).
		d := float64(rnd(1<<20)) / float64(1<<20) * float64(b.Base) * math.Pow(2, float64(shift))
		if b.Cap > 0 {
			d = min(d, float64(b.Cap))
		}
		return time.Duration(d)
	default:
		return 0
	}
	if b.Cap > 0 {
		ceil = min(ceil, float64(b.Cap))
	}
	c := int64(ceil)
	if c <= 0 {
		return 0
	}
	return time.Duration(rnd(c + 1)) // the ceiling itself is a valid delay
}

func (b Backoff) String() string {
	switch b.Kind {
	case "", "none":
		return "none"
	}
	if b.Cap > 0 {
		return fmt.Sprintf("%s %v..%v", b.Kind, b.Base, b.Cap)
	}
	return fmt.Sprintf("%s %v", b.Kind, b.Base)
}

// BudgetRules are the bounded owner's integer credits (retry.BudgetConfig).
type BudgetRules struct {
	Earn, Cost, Cap int64
}

// Base is what a hop's recording says about its policy, the parameters a
// model without a published default of its own takes: the attempt cap
// (retry_policy_max_attempts), the backoff (retry_backoff_seconds), an
// admission limit (retry_concurrency_limit) and a retry budget
// (retry_budget_balance).
type Base struct {
	MaxAttempts int
	Backoff     Backoff
	// Limit is the admission limiter's slots (0: none).
	Limit int
	// Budget is nil without a retry budget.
	Budget *BudgetRules
}

// limiter is the non-blocking admission limiter of retry.Limiter.
type limiter struct{ limit, inUse int }

func (l *limiter) acquire() bool {
	if l == nil {
		return true
	}
	if l.inUse >= l.limit {
		return false
	}
	l.inUse++
	return true
}

func (l *limiter) release() {
	if l != nil && l.inUse > 0 {
		l.inUse--
	}
}
