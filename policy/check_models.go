package policy

import (
	"fmt"
	"math"
)

// The analytic side of each model: attempts per original at a failure
// fraction p of its attempts, in equilibrium (docs/whatif.md, "Checking a
// policy before an incident"). Each failure is taken as independent of
// the others.

// ownerCheck: the retry owner. A budget of Earn credits per original and
// Cost per retry allows Earn/Cost retries per original in the long run,
// whatever its cap; the limiter bounds concurrency, not a ratio.
type ownerCheck struct{ o *Owner }

func (c ownerCheck) steady(p float64, _ env) float64 {
	a := capped(c.o.attempts, p)
	if b := c.o.budget; b != nil && b.Cost > 0 {
		a = min(a, 1+float64(b.Earn)/float64(b.Cost))
	}
	return a
}

func (c ownerCheck) lasts(p float64, _ env) (float64, bool) {
	b := c.o.budget
	if b == nil {
		return 0, false
	}
	return drainFor(float64(b.Cap), float64(b.Cost)*(capped(c.o.attempts, p)-1)-float64(b.Earn))
}

func (c ownerCheck) describe() (string, string) {
	budget := "attempt cap only"
	if b := c.o.budget; b != nil {
		budget = fmt.Sprintf("budget: %d per original, %d per retry, cap %d (at most %.2f retries per original)", b.Earn, b.Cost, b.Cap, float64(b.Earn)/float64(b.Cost))
	}
	note := ""
	if c.o.lim != nil {
		note = fmt.Sprintf("admission limit of %d attempts in flight: bounds concurrency, not attempts per original; not in these figures", c.o.lim.limit)
	}
	return budget, note
}

func (c ownerCheck) knobs() []knob {
	ks := []knob{intKnob("attempts", 1, 10, &c.o.attempts)}
	if b := c.o.budget; b != nil {
		ks = append(ks, int64Knob("budget_cost", 1, 1000, 1, &b.Cost))
	}
	return ks
}

// envoyCheck: Envoy's retry budget caps the retries in progress (from the
// decision to retry until the next decision or the end) at
// max(budget_percent of the requests in flight, min_retry_concurrency). A
// retry over the allowance is refused: a loss system, whose refused share
// is Erlang's B for the allowance and the retries' offered load (rate x
// hold time), insensitive to the hold time's distribution.
type envoyCheck struct{ e *Envoy }

func (c envoyCheck) steady(p float64, en env) float64 {
	e := c.e
	blocked, acc := 0.0, 1.0
	for range 200 {
		reach, load := 1.0, 0.0
		acc = 1
		for k := 1; k < e.attempts; k++ {
			reach *= p // the k-th retry decision
			load += en.rate * reach * (e.backoff.mean(k) + en.attempt)
			reach *= 1 - blocked
			acc += reach
		}
		allow := e.maxRetries
		if e.useBudget {
			active := en.rate * acc * en.attempt
			allow = max(int(e.budgetPercent/100*active), e.minRetryConcurrency)
		}
		next := erlangB(allow, load)
		if math.Abs(next-blocked) < 1e-12 {
			break
		}
		blocked = (blocked + next) / 2
	}
	return acc
}

// erlangB is the share of arrivals refused by n servers at offered load a.
func erlangB(n int, a float64) float64 {
	if a <= 0 {
		return 0
	}
	b := 1.0
	for k := 1; k <= n; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return b
}

func (envoyCheck) lasts(float64, env) (float64, bool) { return 0, false }

func (c envoyCheck) describe() (string, string) {
	if !c.e.useBudget {
		return fmt.Sprintf("circuit breaker: at most %d retries in progress", c.e.maxRetries), "retries refused by Erlang's loss formula at the given rate and latency"
	}
	return fmt.Sprintf("retry budget: retries in progress under max(%g %% of requests in flight, %d)", c.e.budgetPercent, c.e.minRetryConcurrency),
		"no stored balance: it depends on concurrency (rate x latency), retries refused by Erlang's loss formula"
}

func (c envoyCheck) knobs() []knob {
	if !c.e.useBudget {
		return []knob{intKnob("max_retries", 0, 100, &c.e.maxRetries), intKnob("attempts", 1, 10, &c.e.attempts)}
	}
	return []knob{floatKnob("budget_percent", 0, 100, &c.e.budgetPercent), intKnob("min_retry_concurrency", 0, 100, &c.e.minRetryConcurrency), intKnob("attempts", 1, 10, &c.e.attempts)}
}

// finagleCheck: every retry withdraws 1/percent_can_retry deposits and
// both expire after ttl, so over any ttl the retries stay under
// percent_can_retry x originals + min_retries_per_sec x ttl.
type finagleCheck struct{ f *Finagle }

func (c finagleCheck) allowed(e env) float64 { return c.f.percent + c.f.minPerS/e.rate }

func (c finagleCheck) steady(p float64, e env) float64 {
	return min(capped(c.f.attempts, p), 1+c.allowed(e))
}

// lasts: at a steady rate the window always holds ttl x rate deposits, so
// a full budget allows every retry until the retries of the last ttl
// reach its allowance.
func (c finagleCheck) lasts(p float64, e env) (float64, bool) {
	r := capped(c.f.attempts, p) - 1
	if r <= c.allowed(e) {
		return 0, false
	}
	return c.f.ttl.Seconds() * e.rate * c.allowed(e) / r, true
}

func (c finagleCheck) describe() (string, string) {
	return fmt.Sprintf("retry budget: %g of originals + %g retries/s over %v", c.f.percent, c.f.minPerS, c.f.ttl), ""
}

func (c finagleCheck) knobs() []knob {
	return []knob{floatKnob("percent_can_retry", 0.001, 10, &c.f.percent), floatKnob("min_retries_per_sec", 0, 1000, &c.f.minPerS), intKnob("attempts", 1, 10, &c.f.attempts)}
}

// grpcCheck: A6's token count loses 1 per retryable failure and gains
// token_ratio per success, so it drains at every p above
// token_ratio/(1 + token_ratio) and retries stop at half. Near that p the
// count wanders across the half, so the equilibrium is the stationary
// distribution of the count at the start of an operation (a Markov chain
// over its thousandths), operations taken one after the other.
type grpcCheck struct{ g *GRPC }

func (c grpcCheck) retries(e env) bool { return !e.timeouts || c.g.retryTimeouts }

func (c grpcCheck) steady(p float64, e env) float64 {
	g := c.g
	if !c.retries(e) || g.attempts <= 1 {
		return 1
	}
	unit := gcd(gcd(g.maxTokens, g.tokenRatio), 1000)
	if n := g.maxTokens/unit + 1; unit > 0 && n <= 401 {
		return g.markov(p, unit, int(n))
	}
	if p < float64(g.tokenRatio)/float64(1000+g.tokenRatio) {
		return capped(g.attempts, p)
	}
	return 1
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// markov is the mean attempts per operation over the stationary
// distribution of the token count (in units) at an operation's start.
func (g *GRPC) markov(p float64, unit int64, n int) float64 {
	m := make([][]float64, n) // m[i][j]: from count i to j in one operation
	att := make([]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
		var walk func(t int64, k int, pr float64)
		walk = func(t int64, k int, pr float64) {
			att[i] += pr
			m[i][min(t+g.tokenRatio, g.maxTokens)/unit] += pr * (1 - p)
			t = max(t-1000, 0)
			if k < g.attempts && t > g.maxTokens/2 {
				walk(t, k+1, pr*p)
				return
			}
			m[i][t/unit] += pr * p
		}
		walk(int64(i)*unit, 1, 1)
	}
	pi := stationary(m)
	a := 0.0
	for i := range pi {
		a += pi[i] * att[i]
	}
	return a
}

// stationary solves pi = pi m, sum pi = 1, by Gaussian elimination.
func stationary(m [][]float64) []float64 {
	n := len(m)
	a := make([][]float64, n) // rows: equations (m^T - I) with the last replaced by sum = 1
	for i := range a {
		a[i] = make([]float64, n+1)
		for j := range n {
			a[i][j] = m[j][i]
		}
		a[i][i]--
	}
	for j := range n + 1 {
		a[n-1][j] = 1
	}
	for col := range n {
		piv := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[piv][col]) {
				piv = r
			}
		}
		a[col], a[piv] = a[piv], a[col]
		if math.Abs(a[col][col]) < 1e-300 {
			continue
		}
		for r := range n {
			if r == col || a[r][col] == 0 {
				continue
			}
			f := a[r][col] / a[col][col]
			for j := col; j <= n; j++ {
				a[r][j] -= f * a[col][j]
			}
		}
	}
	pi := make([]float64, n)
	for i := range n {
		if a[i][i] != 0 {
			pi[i] = max(a[i][n]/a[i][i], 0)
		}
	}
	return pi
}

func (c grpcCheck) lasts(p float64, e env) (float64, bool) {
	g := c.g
	if !c.retries(e) {
		return 0, false
	}
	drift := p - (1-p)*float64(g.tokenRatio)/1000
	return drainFor(float64(g.maxTokens-g.maxTokens/2)/1000, capped(g.attempts, p)*drift)
}

func (c grpcCheck) describe() (string, string) {
	g := c.g
	note := ""
	if !g.retryTimeouts {
		note = "timeouts not retryable (retry_timeouts=none)"
	}
	return fmt.Sprintf("retry throttling: max_tokens %g, token_ratio %g (retries stop at or below %g)", float64(g.maxTokens)/1000, float64(g.tokenRatio)/1000, float64(g.maxTokens/2)/1000), note
}

func (c grpcCheck) knobs() []knob {
	return []knob{int64Knob("token_ratio", 1, 10000, 1000, &c.g.tokenRatio), intKnob("attempts", 1, 5, &c.g.attempts)}
}

// sreCheck: the client rejects each request with P = max(0, (requests −
// K·accepts)/(requests + 1)) over its window. In equilibrium P is the
// least fixed point of that formula with the window's counts at P; it is
// 0 while K·(1 − p) ≥ 1 and climbs towards 1 above p = 1 − 1/K, where
// the throttle sheds first tries as well (fewer than one attempt per
// original).
type sreCheck struct{ s *SRE }

func (c sreCheck) sent(p, reject float64, e env) (requests, sent, g float64) {
	q := (1 - reject) * p
	requests = capped(c.s.attempts, q)
	sent = (1 - reject) * requests
	req := e.rate * requests * c.s.window.Seconds()
	acc := e.rate * sent * (1 - p) * c.s.window.Seconds()
	return requests, sent, max(0, (req-c.s.k*acc)/(req+1))
}

func (c sreCheck) steady(p float64, e env) float64 {
	if math.Abs(c.s.k*(1-p)-1) < 1e-9 {
		// Requests and K x accepts grow alike at every throttle level:
		// each level is an equilibrium and where it settles depends on
		// the history. Unknown.
		return math.NaN()
	}
	h := func(r float64) float64 { _, _, g := c.sent(p, r, e); return g - r }
	lo, hi := 0.0, 1.0
	if h(0) <= 0 {
		hi = 0
	} else {
		const steps = 2000
		for i := 1; i <= steps; i++ {
			r := float64(i) / steps
			if h(r) <= 0 {
				lo, hi = float64(i-1)/steps, r
				break
			}
		}
		for range 60 {
			mid := (lo + hi) / 2
			if h(mid) > 0 {
				lo = mid
			} else {
				hi = mid
			}
		}
	}
	_, s, _ := c.sent(p, hi, e)
	return s
}

// lasts: from a window full of successes, the throttle starts when the
// outage's requests outweigh K times its accepts plus what is left of the
// window.
func (c sreCheck) lasts(p float64, e env) (float64, bool) {
	a := capped(c.s.attempts, p)
	grow := a * (1 - c.s.k*(1-p))
	if grow <= 0 {
		return 0, false
	}
	t := c.s.window.Seconds() * (c.s.k - 1) / ((c.s.k - 1) + grow)
	return t * e.rate, true
}

func (c sreCheck) describe() (string, string) {
	return fmt.Sprintf("adaptive throttling: K %g over %v (throttles above p = %.0f %%)", c.s.k, c.s.window, 100*(1-1/c.s.k)),
		fmt.Sprintf("when %.0f %% of its attempts fail every throttle level is an equilibrium: steady state unknown; full budget: a window of successes before the outage, lasting until the throttle starts", 100*(1-1/c.s.k))
}

func (c sreCheck) knobs() []knob {
	return []knob{floatKnob("k", 1, 1000, &c.s.k), intKnob("attempts", 1, 10, &c.s.attempts)}
}

// awsCheck: the quota loses the retry's cost per retry and gets it back
// when the retry succeeds, and gains success_increment per success
// without retry. Below its cap the quota is conserved, so in equilibrium
// cost x p x retries = success_increment x (1 − p) per original.
type awsCheck struct{ a *AWS }

func (c awsCheck) cost(e env) *int64 {
	if e.timeouts {
		return &c.a.timeoutCost
	}
	return &c.a.retryCost
}

func (c awsCheck) steady(p float64, e env) float64 {
	a := capped(c.a.attempts, p)
	cost := float64(*c.cost(e))
	if cost <= 0 || p <= 0 {
		return a
	}
	return 1 + min(a-1, float64(c.a.noRetryN)*(1-p)/(cost*p))
}

func (c awsCheck) lasts(p float64, e env) (float64, bool) {
	r := capped(c.a.attempts, p) - 1
	return drainFor(float64(c.a.maxQuota), float64(*c.cost(e))*p*r-float64(c.a.noRetryN)*(1-p))
}

func (c awsCheck) describe() (string, string) {
	return fmt.Sprintf("retry quota %d: %d per retry, %d after a timeout, refunded on success, +%d per success without retry", c.a.maxQuota, c.a.retryCost, c.a.timeoutCost, c.a.noRetryN), ""
}

func (c awsCheck) knobs() []knob {
	return []knob{int64Knob("retry_cost", 1, 1000, 1, &c.a.retryCost), intKnob("attempts", 1, 10, &c.a.attempts)}
}

// mean is the mean delay before retry n.
func (b Backoff) mean(n int) float64 {
	if n < 1 || b.Base <= 0 {
		return 0
	}
	base, cp := b.Base.Seconds(), b.Cap.Seconds()
	shift := float64(min(n, 40))
	var ceil float64
	switch b.Kind {
	case "full_jitter":
		ceil = base * math.Pow(2, shift-1)
	case "envoy":
		ceil = base * (math.Pow(2, shift) - 1)
	case "exponential_jitter":
		top := base * math.Pow(2, shift)
		if cp > 0 && top > cp {
			return cp - cp*cp/(2*top) // E[min(U x top, cap)]
		}
		return top / 2
	default:
		return 0
	}
	if cp > 0 {
		ceil = min(ceil, cp)
	}
	return ceil / 2
}
