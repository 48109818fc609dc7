package retry

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Policy is the per-dependency retry policy. Every field is used as given:
// a zero duration switches that rule off (see each field). DefaultPolicy
// returns the numbers from the seed article's fetchQuote owner.
type Policy struct {
	// MaxAttempts caps attempts per operation, the first try included.
	// It must be at least 1; 1 means "never retry".
	MaxAttempts int

	// Deadline caps the whole operation. The operation deadline is
	// min(caller's ctx deadline, now+Deadline) minus DeadlineReserve.
	// Zero means no cap of our own: only the caller's deadline applies.
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
	// would be left for the attempt.
	MinAttemptTime time.Duration

	// BackoffBase is the full-jitter ceiling before the first retry; it
	// doubles for every further retry. Zero means no backoff of our own (a
	// provider's Retry-After is still honoured).
	BackoffBase time.Duration

	// BackoffCap bounds the doubling ceiling. Zero means unbounded (the
	// operation deadline still bounds every sleep).
	BackoffCap time.Duration
}

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
	return nil
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
