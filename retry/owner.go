package retry

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"
)

// Config configures an Owner. Dependency and Policy are required; every
// other field may be left nil.
type Config struct {
	// Dependency names the provider; it is the "dependency" label value, so
	// it must be a fixed, low-cardinality name (never a URL with ids).
	Dependency string
	Policy     Policy
	// Limiter is the admission limiter; nil means no admission limit.
	Limiter *Limiter
	// Budget is the shared retry budget; nil means retries are bounded only
	// by Policy.MaxAttempts and the deadline.
	Budget *Budget
	// Metrics receives the contract metrics; nil means an unregistered set.
	Metrics *Metrics
	// Classify decides whether a failed attempt may be retried; nil means
	// DefaultClassify.
	Classify func(error) Class
	// Clock is the time source; nil means the real clock.
	Clock Clock
	// Rand returns a uniform int64 in [0, n) for the backoff jitter; nil
	// means math/rand/v2's Int64N. It must be safe for concurrent use.
	Rand func(n int64) int64
}

// Owner is the one place that retries calls to one dependency: it owns the
// operation deadline, admission, the retry budget, backoff and the metrics.
// Nothing above or below it should retry the same calls (retries multiply
// across layers: 3 x 3 x 3 = 27 attempts per user action).
//
// An Owner is safe for concurrent use and should live as long as the
// process, like its Limiter and Budget.
type Owner struct {
	dep      string
	policy   Policy
	limiter  *Limiter
	budget   *Budget
	classify func(error) Class
	clock    Clock
	rand     func(n int64) int64
	in       *instruments
}

// New returns an Owner for cfg, or an error if cfg is invalid.
func New(cfg Config) (*Owner, error) {
	if cfg.Dependency == "" {
		return nil, errors.New("retry: Config.Dependency must not be empty")
	}
	if err := cfg.Policy.validate(); err != nil {
		return nil, err
	}
	o := &Owner{
		dep:      cfg.Dependency,
		policy:   cfg.Policy,
		limiter:  cfg.Limiter,
		budget:   cfg.Budget,
		classify: cfg.Classify,
		clock:    cfg.Clock,
		rand:     cfg.Rand,
	}
	if o.classify == nil {
		o.classify = DefaultClassify
	}
	if o.clock == nil {
		o.clock = realClock{}
	}
	if o.rand == nil {
		o.rand = rand.Int64N
	}
	m := cfg.Metrics
	if m == nil {
		m = NewMetrics(nil)
	}
	o.in = m.bind(o.dep, o.policy, o.limiter, o.budget)
	return o, nil
}

// Dependency returns the dependency label value.
func (o *Owner) Dependency() string { return o.dep }

// Policy returns the policy in force.
func (o *Owner) Policy() Policy { return o.policy }

// Do runs one logical operation: it calls attempt until it succeeds, fails
// permanently, or a rule stops it, and returns nil or an *Error wrapping
// exactly one of ErrCapacityRejected, ErrBudgetExhausted,
// ErrDeadlineExhausted, ErrProviderError, ErrPermanentError, ErrCancelled.
//
// The rules, in order:
//   - The operation deadline is min(ctx deadline, now+Policy.Deadline) minus
//     Policy.DeadlineReserve, fixed once for the whole operation.
//   - Before each attempt: stop if ctx is done; stop if less than
//     Policy.MinAttemptTime is left; take a Limiter slot or stop (no
//     queueing). The attempt's ctx expires at min(now+PerAttemptTimeout,
//     operation deadline).
//   - The slot is released as soon as the attempt returns, so no slot is
//     held during a backoff sleep.
//   - A failed attempt is retried only if Classify says Temporary, attempts
//     remain, the full-jitter delay (never shorter than the provider's
//     Retry-After) plus MinAttemptTime still fits the deadline, and the
//     Budget pays for the retry. The budget is paid before sleeping, so a
//     caller never waits for a retry that would be refused, and refunded if
//     the retry is then not made.
//
// attempt must honour its ctx and report a provider's Retry-After by
// returning an error that implements RetryAfterer (see MarkTemporary).
func (o *Owner) Do(ctx context.Context, p Priority, attempt func(ctx context.Context) error) error {
	op := operation{o: o, pi: p.index(), start: o.clock.Now()}
	o.in.originals[op.pi].Inc()
	if o.budget != nil {
		o.budget.RecordOriginal()
	}
	deadline, bounded := o.deadline(ctx, op.start)

	for {
		if err := ctx.Err(); err != nil {
			return op.finishCtx(err)
		}
		now := o.clock.Now()
		timeout := o.policy.PerAttemptTimeout
		if bounded {
			left := deadline.Sub(now)
			if left <= 0 || left < o.policy.MinAttemptTime {
				return op.finish(ResultDeadlineExhausted, nil)
			}
			if timeout <= 0 || left < timeout {
				timeout = left // a retry gets what is left, never a fresh budget
			}
		}
		if o.limiter != nil && !o.limiter.TryAcquire(p) {
			o.in.admissionRejected[op.pi].Inc()
			return op.finish(ResultCapacityRejected, nil)
		}
		op.paid = false // the paid-for retry is being made now
		op.attempts++
		if op.attempts > 1 {
			o.in.retries.Inc()
		}

		class, err := o.run(ctx, now, timeout, attempt)
		if err == nil {
			if op.attempts > 1 {
				o.in.rescued.Inc()
			}
			return op.finish(ResultSuccess, nil)
		}
		op.last = err
		if cerr := ctx.Err(); cerr != nil {
			return op.finishCtx(cerr)
		}
		if class == Permanent {
			return op.finish(ResultPermanentError, nil)
		}
		if op.attempts >= o.policy.MaxAttempts {
			return op.finish(ResultProviderError, nil)
		}

		delay := max(o.jitter(op.attempts), retryAfter(err)) // Retry-After is a floor
		if bounded {
			// Shortening a requested wait to squeeze in a retry would ignore
			// the provider's overload signal: stop instead.
			if rest := deadline.Sub(o.clock.Now()) - delay; rest <= 0 || rest < o.policy.MinAttemptTime {
				return op.finish(ResultDeadlineExhausted, nil)
			}
		}
		if o.budget != nil {
			if !o.budget.TryConsume() {
				o.in.budgetDenied.Inc()
				return op.finish(ResultBudgetExhausted, nil)
			}
			op.paid = true
		}
		o.in.backoff.Observe(delay.Seconds())
		if delay > 0 {
			if err := o.clock.Sleep(ctx, delay); err != nil {
				return op.finishCtx(err)
			}
		}
	}
}

// operation is the state of one Do call.
type operation struct {
	o        *Owner
	pi       int
	start    time.Time
	attempts int
	last     error
	paid     bool // a retry's budget cost is paid but the retry not made yet
}

func (op *operation) finishCtx(ctxErr error) error {
	r := ResultCancelled
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		r = ResultDeadlineExhausted // the caller's own deadline passed
	}
	return op.finish(r, ctxErr)
}

func (op *operation) finish(r Result, ctxErr error) error {
	o := op.o
	if op.paid {
		o.budget.refund()
	}
	o.in.results[op.pi][r].Inc()
	class := classFailure
	switch {
	case r == ResultSuccess:
		class = classSuccess
	case op.attempts == 0:
		class = classFastFailure // never waited on the provider
	}
	o.in.requestDuration[class].Observe(o.clock.Now().Sub(op.start).Seconds())
	if r == ResultSuccess {
		return nil
	}
	return &Error{Dependency: o.dep, Result: r, Attempts: op.attempts, Err: op.last, ctxErr: ctxErr}
}

// deadline returns the operation deadline, if there is one.
func (o *Owner) deadline(ctx context.Context, now time.Time) (time.Time, bool) {
	d, ok := ctx.Deadline()
	if o.policy.Deadline > 0 {
		if c := now.Add(o.policy.Deadline); !ok || c.Before(d) {
			d, ok = c, true
		}
	}
	if !ok {
		return time.Time{}, false
	}
	return d.Add(-o.policy.DeadlineReserve), true
}

// run makes one attempt with the slot already held, and releases it.
func (o *Owner) run(ctx context.Context, now time.Time, timeout time.Duration, attempt func(context.Context) error) (Class, error) {
	actx, cancel := ctx, context.CancelFunc(nil)
	if timeout > 0 {
		actx, cancel = context.WithDeadline(ctx, now.Add(timeout))
	}
	o.in.active.Inc()
	// Deferred so that a panicking attempt still returns its slot. A panic
	// records no outcome: it is a bug, not an answer from the provider.
	defer func() {
		if cancel != nil {
			cancel()
		}
		o.in.active.Dec()
		if o.limiter != nil {
			o.limiter.Release()
		}
	}()
	t0 := o.clock.Now()
	err := attempt(&attemptContext{Context: actx, o: o})
	d := o.clock.Now().Sub(t0)

	class, outcome := Temporary, outcomeSuccess
	if err != nil {
		class = o.classify(err)
		switch {
		case isTimeout(err):
			outcome = outcomeTimeout
		case class == Temporary:
			outcome = outcomeTemporary
		default:
			outcome = outcomePermanent
		}
	}
	o.in.attempts[outcome].Inc()
	o.in.attemptDuration[outcome].Observe(d.Seconds())
	return class, err
}

// jitter is the full-jitter delay before retry n: uniform in [0, ceiling].
func (o *Owner) jitter(n int) time.Duration {
	c := int64(o.policy.backoffCeiling(n))
	if c <= 0 {
		return 0
	}
	if c < math.MaxInt64 {
		c++ // Rand's bound is exclusive; the ceiling itself is a valid delay
	}
	return time.Duration(o.rand(c))
}

// attemptContext is the ctx an attempt runs with. It carries its Owner so
// that ObservePoolWait and Transport can find where to report, without a
// second allocation for context.WithValue.
type attemptContext struct {
	context.Context
	o *Owner
}

type attemptKey struct{}

func (c *attemptContext) Value(key any) any {
	if key == (attemptKey{}) {
		return c.o
	}
	return c.Context.Value(key)
}

// ownerFrom returns the Owner whose attempt ctx belongs to, or nil.
func ownerFrom(ctx context.Context) *Owner {
	o, _ := ctx.Value(attemptKey{}).(*Owner)
	return o
}

// ObservePoolWait records d in retry_pool_wait_seconds of the Owner running
// the attempt ctx belongs to; outside an attempt it does nothing. Transport
// calls it for HTTP; call it yourself for other pools (database
// connections, worker slots) an attempt must wait for before it can start.
func ObservePoolWait(ctx context.Context, d time.Duration) {
	if o := ownerFrom(ctx); o != nil {
		o.in.poolWait.Observe(max(d, 0).Seconds())
	}
}
