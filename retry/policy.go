package retry

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Policy is the per-dependency retry policy. DefaultPolicy returns the
// numbers from the seed article's fetchQuote owner.
//
// New never runs an operation without a deadline or without a least useful
// attempt time, because both are what keep retries from outliving the
// caller: a zero Deadline, MinAttemptTime or MaxRetryAfter is filled with
// the documented default of that field, and a policy that can be bounded by
// nothing (neither Deadline nor PerAttemptTimeout) is an error, as are
// policies that could never do what they say: a MinAttemptTime over
// PerAttemptTimeout or over the usable deadline, a HedgeDelay that leaves
// less than MinAttemptTime of it. Owner.Policy returns the policy with the
// defaults filled in.
type Policy struct {
	// MaxAttempts caps attempts per operation, the first try included.
	// It must be at least 1; 1 means "never retry".
	MaxAttempts int

	// Deadline caps the whole operation. The operation deadline is
	// min(caller's ctx deadline, now+Deadline) minus DeadlineReserve.
	// Zero means "derive it": MaxAttempts*PerAttemptTimeout plus, before
	// each retry, the larger of the backoff ceiling and MaxRetryAfter, so
	// that the derived cap never cuts short a retry the rest of the policy
	// allows. With neither Deadline nor PerAttemptTimeout, New fails.
	Deadline time.Duration

	// PerAttemptTimeout caps one attempt. Each attempt gets
	// min(PerAttemptTimeout, time left before the operation deadline), so a
	// retry gets what is left, never a fresh budget. Zero means no cap.
	PerAttemptTimeout time.Duration

	// DeadlineReserve is kept back from the operation deadline for the
	// caller's own work after we return (rendering, replying).
	DeadlineReserve time.Duration

	// MinAttemptTime is the least time worth starting an attempt with. An
	// attempt is not started, and a backoff is not slept, if less than this
	// would be left for the attempt. Zero means the default: 50 ms (the
	// seed's number), but at most half of PerAttemptTimeout and half of
	// Deadline-DeadlineReserve, so that short policies still run.
	MinAttemptTime time.Duration

	// BackoffBase is the full-jitter ceiling before the first retry; it
	// doubles for every further retry. Zero means no backoff of our own (a
	// provider's Retry-After is still honoured).
	BackoffBase time.Duration

	// BackoffCap bounds the doubling ceiling. Zero means unbounded (the
	// operation deadline still bounds every sleep).
	BackoffCap time.Duration

	// MaxRetryAfter is the longest provider Retry-After the owner will wait
	// for. A provider asking for more (a 503 with "Retry-After: 86400")
	// ends the operation at once with ErrProviderError and the provider's
	// error, and Error.Reason says why: waiting a day inside one request
	// helps nobody. Zero means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration

	// HedgeDelay, when positive, turns on hedged requests: if an attempt
	// has not answered after HedgeDelay, a second attempt is sent beside
	// it; the first success wins and the other is cancelled. If one fails
	// first, the other's answer decides. A hedge is an attempt and a retry
	// like any other (MaxAttempts, Limiter, Budget, deadline), counted in
	// retry_hedges_total too; when any of them refuses, no hedge is sent
	// and nothing else changes. Set it near the provider's p95 latency, and
	// only where an attempt is safe to run twice at once (HTTPClient and
	// RoundTripper hedge idempotent requests only). Zero means no hedging.
	HedgeDelay time.Duration
}

// Defaults New fills into a Policy's zero fields (see each field).
const (
	// DefaultMinAttemptTime is the seed's least useful attempt time.
	DefaultMinAttemptTime = 50 * time.Millisecond
	// DefaultMaxRetryAfter is the longest Retry-After honoured when
	// Policy.MaxRetryAfter is zero: long enough for the "come back in a
	// second or two" of an overloaded provider, short enough that a
	// request-scoped caller is still there.
	DefaultMaxRetryAfter = 5 * time.Second
)

// DefaultPolicy returns the seed article's example numbers: 3 attempts, a
// 900 ms operation cap with 50 ms reserved, 300 ms per attempt, no attempt
// with under 50 ms, full-jitter backoff from 25 ms doubling to 200 ms. They
// are a starting point to tune against measured latencies, not a
// recommendation for every provider.
func DefaultPolicy() Policy {
	return Policy{
		MaxAttempts:       3,
		Deadline:          900 * time.Millisecond,
		PerAttemptTimeout: 300 * time.Millisecond,
		DeadlineReserve:   50 * time.Millisecond,
		MinAttemptTime:    50 * time.Millisecond,
		BackoffBase:       25 * time.Millisecond,
		BackoffCap:        200 * time.Millisecond,
		MaxRetryAfter:     DefaultMaxRetryAfter,
	}
}

func (p Policy) validate() error {
	if p.MaxAttempts < 1 {
		return fmt.Errorf("retry: Policy.MaxAttempts must be at least 1, got %d", p.MaxAttempts)
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"Deadline", p.Deadline},
		{"PerAttemptTimeout", p.PerAttemptTimeout},
		{"DeadlineReserve", p.DeadlineReserve},
		{"MinAttemptTime", p.MinAttemptTime},
		{"BackoffBase", p.BackoffBase},
		{"BackoffCap", p.BackoffCap},
		{"MaxRetryAfter", p.MaxRetryAfter},
		{"HedgeDelay", p.HedgeDelay},
	} {
		if f.d < 0 {
			return fmt.Errorf("retry: Policy.%s must not be negative, got %v", f.name, f.d)
		}
	}
	if p.Deadline > 0 && p.DeadlineReserve >= p.Deadline {
		return errors.New("retry: Policy.DeadlineReserve must be shorter than Policy.Deadline")
	}
	if p.BackoffCap > 0 && p.BackoffCap < p.BackoffBase {
		return errors.New("retry: Policy.BackoffCap must not be below Policy.BackoffBase")
	}
	if p.PerAttemptTimeout > 0 && p.MinAttemptTime > p.PerAttemptTimeout {
		return fmt.Errorf("retry: Policy.MinAttemptTime %v exceeds Policy.PerAttemptTimeout %v: no attempt ever gets the least time worth starting it with",
			p.MinAttemptTime, p.PerAttemptTimeout)
	}
	if p.Deadline == 0 && p.PerAttemptTimeout == 0 {
		return errors.New("retry: Policy needs a Deadline or a PerAttemptTimeout: " +
			"with neither, an attempt that never returns holds the operation forever")
	}
	return nil
}

// withDefaults validates p and fills its zero Deadline, MinAttemptTime and
// MaxRetryAfter with the documented defaults.
func (p Policy) withDefaults() (Policy, error) {
	if err := p.validate(); err != nil {
		return p, err
	}
	if p.MaxRetryAfter == 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if p.Deadline == 0 {
		p.Deadline = p.derivedDeadline()
	}
	usable := p.Deadline - p.DeadlineReserve
	if p.MinAttemptTime == 0 {
		p.MinAttemptTime = DefaultMinAttemptTime
		if p.PerAttemptTimeout > 0 {
			p.MinAttemptTime = min(p.MinAttemptTime, p.PerAttemptTimeout/2)
		}
		p.MinAttemptTime = max(min(p.MinAttemptTime, usable/2), 1)
	}
	if p.MinAttemptTime > usable {
		return p, fmt.Errorf("retry: Policy.MinAttemptTime %v exceeds the usable deadline %v (Deadline %v - DeadlineReserve %v): no attempt could ever start",
			p.MinAttemptTime, usable, p.Deadline, p.DeadlineReserve)
	}
	if p.HedgeDelay > 0 && p.HedgeDelay+p.MinAttemptTime > usable {
		return p, fmt.Errorf("retry: Policy.HedgeDelay %v leaves less than Policy.MinAttemptTime %v of the usable deadline %v (Policy.Deadline %v - Policy.DeadlineReserve %v): no hedge could ever be sent",
			p.HedgeDelay, p.MinAttemptTime, usable, p.Deadline, p.DeadlineReserve)
	}
	return p, nil
}

// derivedDeadline is the cap of a policy without its own Deadline: every
// attempt's full PerAttemptTimeout and, before each retry, the longest
// wait the policy would honour. It saturates instead of overflowing.
func (p Policy) derivedDeadline() time.Duration {
	total := p.DeadlineReserve
	add := func(d time.Duration, times int) {
		if d > 0 && times > 0 && d > (math.MaxInt64-total)/time.Duration(times) {
			total = math.MaxInt64
			return
		}
		total += d * time.Duration(times)
	}
	add(p.PerAttemptTimeout, p.MaxAttempts)
	// The backoff ceiling stops growing within 63 doublings; past that every
	// retry waits the same, so a huge MaxAttempts costs no loop.
	retries := p.MaxAttempts - 1
	for n := 1; n <= min(retries, 64); n++ {
		add(max(p.backoffCeiling(n), p.MaxRetryAfter), 1)
	}
	if retries > 64 {
		add(max(p.backoffCeiling(64), p.MaxRetryAfter), retries-64)
	}
	return total
}

// backoffCeiling is the full-jitter upper bound before retry number n
// (n = 1 for the first retry): min(cap, base * 2^(n-1)).
func (p Policy) backoffCeiling(n int) time.Duration {
	if p.BackoffBase <= 0 {
		return 0
	}
	c := p.BackoffBase
	for i := 1; i < n; i++ {
		if p.BackoffCap > 0 && c >= p.BackoffCap {
			break
		}
		if c > math.MaxInt64/2 { // doubling would overflow; the deadline bounds us anyway
			break
		}
		c *= 2
	}
	if p.BackoffCap > 0 && c > p.BackoffCap {
		c = p.BackoffCap
	}
	return c
}

// Priority is an operation's admission class. When the Limiter is full,
// Sheddable work is refused first; Critical work may also use the slots
// reserved for it. The zero value is Sheddable so that forgetting to choose
// never eats into the critical reserve.
type Priority uint8

const (
	// Sheddable is secondary work, shed first under load.
	Sheddable Priority = iota
	// Critical is work worth keeping (already started transactions,
	// control operations); it may use the reserved slots.
	Critical

	numPriorities = 2
)

// String returns the metric label value: "sheddable" or "critical".
func (p Priority) String() string {
	if p == Critical {
		return "critical"
	}
	return "sheddable"
}

// index maps unknown values to Sheddable, the safe side.
func (p Priority) index() int {
	if p == Critical {
		return 1
	}
	return 0
}

// Class is the classification hook's verdict on an attempt's error.
type Class uint8

const (
	// Permanent errors are returned at once, never retried.
	Permanent Class = iota
	// Temporary errors may be retried if attempts, budget and time allow.
	Temporary
)

// String returns "permanent" or "temporary".
func (c Class) String() string {
	if c == Temporary {
		return "temporary"
	}
	return "permanent"
}
