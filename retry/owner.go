package retry

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync/atomic"
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
	// InlineAttempts runs each attempt on the caller's goroutine instead of
	// one of its own. That saves a goroutine handoff per attempt (about
	// 1 µs, see BenchmarkDoSuccessInline), but an attempt that ignores its
	// ctx then holds Do until it returns, past the deadline. Set it only
	// when every attempt honours its ctx; HTTPClient always runs inline,
	// since net/http does.
	InlineAttempts bool
	// OnAttempt, if set, is called once per attempt when the owner learns
	// its fate (when it is counted in retry_attempts_total), on Do's
	// goroutine: for logs and traces. It must be quick and must not block.
	// nil costs nothing.
	OnAttempt func(AttemptInfo)
	// OnRetry, if set, is called once per retry the owner makes (when it
	// is counted in retry_retries_total: the retry's attempt is starting,
	// its backoff slept, its slot taken), hedges included, on Do's
	// goroutine. It must be quick and must not block.
	OnRetry func(RetryInfo)
	// OnPanic, if set, receives the panic of an attempt nobody waits for
	// any more (abandoned at the deadline or on the caller's cancel, or a
	// hedge's loser), recovered on the attempt's goroutine and counted in
	// retry_attempt_panics_total; nil logs it with its stack (package
	// log). A panic Do still waits for is re-raised in Do's goroutine
	// instead. It may be called on any goroutine, after Do returned.
	OnPanic func(*PanicError)
}

// AttemptInfo describes one finished (or abandoned) attempt for
// Config.OnAttempt.
type AttemptInfo struct {
	Dependency string
	Priority   Priority
	// Attempt is the attempt's number in its operation, 1 for the first.
	Attempt int
	// Outcome is the retry_attempts_total outcome label value: success,
	// temporary_error, permanent_error, timeout or cancelled.
	Outcome string
	// Duration is the attempt's latency as observed in
	// retry_attempt_duration_seconds.
	Duration time.Duration
	// Err is the attempt's error: nil on success, the ctx error for an
	// abandoned attempt.
	Err error
}

// RetryInfo describes a retry the owner is making, for Config.OnRetry.
type RetryInfo struct {
	Dependency string
	Priority   Priority
	// Attempt is the number the retry will have, 2 for the first retry.
	Attempt int
	// Delay is the backoff slept before it (Retry-After included); for a
	// hedge, Policy.HedgeDelay.
	Delay time.Duration
	// Err is the failed attempt's error that made the retry necessary;
	// nil for a hedge.
	Err error
	// Hedge is true for a hedged attempt, sent Delay (Policy.HedgeDelay)
	// after an earlier attempt that is still running.
	Hedge bool
}

// Owner is the one place that retries calls to one dependency: it owns the
// operation deadline, admission, the retry budget, backoff and the metrics.
// Nothing above or below it should retry the same calls (retries multiply
// across layers: 3 x 3 x 3 = 27 attempts per user action).
//
// An Owner is safe for concurrent use and should live as long as the
// process, like its Limiter and Budget.
type Owner struct {
	dep       string
	policy    Policy
	limiter   *Limiter
	budget    *Budget
	classify  func(error) Class
	clock     Clock
	rand      func(n int64) int64
	in        *instruments
	inline    bool
	onAttempt func(AttemptInfo)
	onRetry   func(RetryInfo)
	onPanic   func(*PanicError)

	grace time.Duration // abandonGrace; tests shorten it

	abandonedReturned func()          // tests: an abandoned attempt has been accounted for
	abandonCounted    func()          // tests: an attempt was counted in retry_abandoned_attempts_total
	hedgeDecided      func(sent bool) // tests: the hedge timer fired and a hedge was sent or not
}

// New returns an Owner for cfg, or an error if cfg is invalid.
func New(cfg Config) (*Owner, error) {
	if cfg.Dependency == "" {
		return nil, errors.New("retry: Config.Dependency must not be empty")
	}
	policy, err := cfg.Policy.withDefaults()
	if err != nil {
		return nil, err
	}
	o := &Owner{
		dep:       cfg.Dependency,
		policy:    policy,
		limiter:   cfg.Limiter,
		budget:    cfg.Budget,
		classify:  cfg.Classify,
		clock:     cfg.Clock,
		rand:      cfg.Rand,
		inline:    cfg.InlineAttempts,
		onAttempt: cfg.OnAttempt,
		onRetry:   cfg.OnRetry,
		onPanic:   cfg.OnPanic,
		grace:     abandonGrace,
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

// Policy returns the policy in force, with New's defaults filled in.
func (o *Owner) Policy() Policy { return o.policy }

// Do runs one logical operation: it calls attempt until it succeeds, fails
// permanently, or a rule stops it, and returns nil or an *Error wrapping
// exactly one of ErrCapacityRejected, ErrBudgetExhausted,
// ErrDeadlineExhausted, ErrProviderError, ErrPermanentError, ErrCancelled,
// ErrNotRetryable.
//
// The rules, in order:
//   - The operation deadline is min(ctx deadline, now+Policy.Deadline) minus
//     Policy.DeadlineReserve, fixed once for the whole operation.
//   - Before each attempt: stop if ctx is done; stop if less than
//     Policy.MinAttemptTime is left; take a Limiter slot or stop (no
//     queueing); then look at ctx and the clock again, since taking the
//     slot may have raced a cancel or the deadline. The attempt's ctx
//     expires at min(now+PerAttemptTimeout, operation deadline).
//   - The slot is released as soon as the attempt returns, so no slot is
//     held during a backoff sleep.
//   - Do never waits for an attempt past the operation deadline or the
//     caller's cancel: it stops waiting there (the attempt is counted as a
//     timeout or a cancel; if it is still running 100 ms later it ignores
//     its ctx and is counted in retry_abandoned_attempts_total) and it
//     finishes in the background, holding its slot until it returns; if
//     it then succeeds, the success is late (retry_late_successes_total),
//     never a success of the operation.
//     An attempt that outlives only its PerAttemptTimeout is waited for up
//     to the operation deadline, never retried beside itself.
//   - A failed attempt is retried only if it is not final (another Owner
//     gave up within it, its error is another Owner's *Error, or a
//     cancellation), Classify says Temporary, attempts remain, the
//     attempt did not say it must not be repeated (HTTP: not safe to
//     repeat, ResultNotRetryable), the provider's Retry-After is within
//     Policy.MaxRetryAfter, the full-jitter delay (never shorter than the
//     Retry-After) plus MinAttemptTime still fits the deadline, and the
//     Budget pays for the retry. The budget is paid before sleeping, so a
//     caller never waits for a retry that would be refused, and refunded if
//     the retry is then not made.
//
// A ctx that belongs to another Owner's attempt makes this a nested
// operation, counted in retry_nested_operations_total: retries at both
// levels would multiply, so that attempt is not hedged while this
// operation runs, and is final if this operation fails.
//
// attempt must honour its ctx and report a provider's Retry-After by
// returning an error that implements RetryAfterer (see MarkTemporary). It
// runs on a goroutine of its own (unless Config.InlineAttempts). A panic
// in it is counted and re-raised in Do's goroutine while Do waits for it,
// and recovered and handed to Config.OnPanic after Do stopped waiting.
func (o *Owner) Do(ctx context.Context, p Priority, attempt func(ctx context.Context) error) error {
	_, err := o.do(ctx, p, attempt, o.inline, true)
	return err
}

// do is Do, with attempts run inline (on the caller's goroutine) or each on
// a goroutine of its own, and hedged when the policy and the caller
// (mayHedge: the attempt is safe to run twice at once) allow. On success
// it also returns the value the winning attempt left in its attemptCtx
// (DoValue).
func (o *Owner) do(ctx context.Context, p Priority, attempt func(ctx context.Context) error, inline, mayHedge bool) (any, error) {
	hedge := mayHedge && o.policy.HedgeDelay > 0
	op := o.begin(ctx, p)
	deadline := o.deadline(ctx, op.start)

	// The first attempt's check before TryAcquire uses the start's reading:
	// the clock is read again right after the slot is taken anyway, and a
	// reading is a noticeable part of the no-failure path's cost.
	checkAt := op.start
	for {
		if op.attempts > 0 {
			checkAt = o.clock.Now()
		}
		now, stop, err := op.admit(ctx, deadline, checkAt)
		if stop {
			return nil, err
		}
		a := op.newAttempt(ctx, now, deadline, attempt)
		if a, stop, err = op.run(ctx, a, deadline, attempt, hedge, inline); stop {
			return nil, err
		}
		err = a.err
		if err == nil && (ctx.Err() != nil || a.end.After(deadline)) {
			// The answer came after the caller gave up or after the
			// deadline Do promised: work done for nobody, not a success.
			return nil, op.late(ctx, a)
		}
		class := Temporary
		if err != nil {
			class = o.classifyAttempt(a)
		}
		op.observe(a, o.outcome(err, class), a.end.Sub(a.start), err)
		if err == nil {
			if op.attempts > 1 {
				o.in.rescued.Inc()
			}
			op.endAt = a.end // the operation ends with its attempt: no second reading
			return a.val, op.finish(ResultSuccess, nil)
		}
		if stop, err := op.retryOrStop(ctx, a, class, deadline); stop {
			return nil, err
		}
	}
}

// begin starts an operation: counted as an original, marked nested when
// it runs inside another owner's attempt, recorded with the budget.
func (o *Owner) begin(ctx context.Context, p Priority) operation {
	op := operation{o: o, p: p, pi: p.index(), start: o.clock.Now(), ctx: ctx}
	o.in.originals[op.pi].Inc()
	if outer := attemptFrom(ctx); outer != nil {
		// Structural, whatever becomes of the errors: the outer attempt
		// is not hedged beside this operation, nor retried if it fails.
		outer.nested.Store(true)
		op.outer = outer
		o.in.nested.WithLabelValues(o.dep, outer.o.dep).Inc()
	}
	if o.budget != nil {
		o.budget.RecordOriginal()
	}
	return op
}

// admit decides whether the next attempt may start: the caller is still
// waiting, time is left at checkAt, and the limiter has a slot. It returns
// the time the attempt starts, or, with stop, the operation's end.
func (op *operation) admit(ctx context.Context, deadline, checkAt time.Time) (now time.Time, stop bool, err error) {
	o := op.o
	if err := ctx.Err(); err != nil {
		return now, true, op.finishCtx(err)
	}
	if !o.timeLeft(deadline, checkAt) {
		return now, true, op.finish(ResultDeadlineExhausted, nil)
	}
	if o.limiter != nil && !o.limiter.TryAcquire(op.p) {
		o.in.admissionRejected[op.pi].Inc()
		return now, true, op.finish(ResultCapacityRejected, nil)
	}
	// Taking the slot may have raced a cancel or the deadline; an
	// attempt must never start with an expired ctx.
	now = o.clock.Now()
	if err := ctx.Err(); err != nil || !o.timeLeft(deadline, now) {
		if o.limiter != nil {
			o.limiter.Release()
		}
		if err != nil {
			return now, true, op.finishCtx(err)
		}
		return now, true, op.finish(ResultDeadlineExhausted, nil)
	}
	return now, false, nil
}

// newAttempt makes the operation's next attempt, starting at now with what
// is left of the deadline (a retry never gets a fresh budget), and counts
// it as a retry when it is one.
func (op *operation) newAttempt(ctx context.Context, now, deadline time.Time, attempt func(ctx context.Context) error) *attemptCtx {
	o := op.o
	timeout := deadline.Sub(now)
	if t := o.policy.PerAttemptTimeout; t > 0 && t < timeout {
		timeout = t
	}
	op.paid = false // the paid-for retry is being made now
	op.attempts++
	if op.attempts > 1 {
		o.in.retries.Inc()
		if o.onRetry != nil {
			o.onRetry(RetryInfo{Dependency: o.dep, Priority: op.p, Attempt: op.attempts, Delay: op.delay, Err: op.last})
		}
	}
	a := o.newAttempt(ctx, now, timeout, attempt)
	a.n = op.attempts
	return a
}

// run runs attempt a: with a hedge beside it, inline, or in a goroutine
// waited for until the deadline. It returns the attempt whose result
// counts, or, with stop, the operation's end.
func (op *operation) run(ctx context.Context, a *attemptCtx, deadline time.Time, attempt func(ctx context.Context) error, hedge, inline bool) (*attemptCtx, bool, error) {
	switch {
	case hedge && op.attempts < op.o.policy.MaxAttempts:
		w, ret, done := op.hedgedRound(ctx, a, deadline, attempt)
		if done {
			return nil, true, ret
		}
		return w, false, nil
	case inline:
		op.runInline(a)
	default:
		go a.run()
		if !a.wait(deadline) {
			return nil, true, op.abandon(ctx, a)
		}
		if a.unwound() {
			op.unwound(a)
			a.rethrow()
		}
	}
	return a, false, nil
}

// retryOrStop decides after failed attempt a: stop (the caller left, the
// error is permanent, attempts or time ran out, the request is not safe
// to repeat, the provider asks for too long a wait, the budget is spent)
// with the operation's end, or sleep the backoff and go on.
func (op *operation) retryOrStop(ctx context.Context, a *attemptCtx, class Class, deadline time.Time) (bool, error) {
	o, err := op.o, a.err
	op.last = err
	if cerr := ctx.Err(); cerr != nil {
		return true, op.finishCtx(cerr)
	}
	if class == Permanent {
		return true, op.finish(ResultPermanentError, nil)
	}
	if op.attempts >= o.policy.MaxAttempts {
		return true, op.finish(ResultProviderError, nil)
	}
	if a.noRetry != "" {
		// Safe to repeat comes before everything else a retry needs:
		// no budget is spent and no backoff slept for it.
		op.reason = a.noRetry
		return true, op.finish(ResultNotRetryable, nil)
	}
	wait := retryAfter(err)
	if wait > o.policy.MaxRetryAfter {
		op.reason = "provider asked to wait " + wait.String() + ", over Policy.MaxRetryAfter " + o.policy.MaxRetryAfter.String()
		return true, op.finish(ResultProviderError, nil)
	}
	delay := max(o.jitter(op.attempts), wait) // Retry-After is a floor
	// Shortening a requested wait to squeeze in a retry would ignore
	// the provider's overload signal: stop instead.
	if !o.timeLeft(deadline, o.clock.Now().Add(delay)) {
		return true, op.finish(ResultDeadlineExhausted, nil)
	}
	if o.budget != nil {
		if !o.budget.TryConsume() {
			o.in.budgetDenied.Inc()
			return true, op.finish(ResultBudgetExhausted, nil)
		}
		op.paid = true
	}
	op.delay = delay
	if err := op.sleep(ctx, delay); err != nil {
		return true, op.finishCtx(err)
	}
	return false, nil
}

// classifyAttempt classifies a finished attempt's error: Classify's
// verdict, unless an owner below gave up on the call (structurally, or by
// its *Error in the chain) or it was cancelled, which is final.
func (o *Owner) classifyAttempt(a *attemptCtx) Class {
	if a.final.Load() || finalForOwner(a.err) {
		return Permanent
	}
	return o.classify(a.err)
}

// sleep sleeps the backoff before a retry and records in
// retry_backoff_seconds the time actually slept: all of it, or on the
// caller's cancel the part slept until then.
func (op *operation) sleep(ctx context.Context, delay time.Duration) error {
	o := op.o
	if delay <= 0 {
		o.in.backoff.Observe(0)
		return nil
	}
	before := o.clock.Now()
	if err := o.clock.Sleep(ctx, delay); err != nil {
		o.in.backoff.Observe(min(max(o.clock.Now().Sub(before), 0), delay).Seconds())
		return err
	}
	o.in.backoff.Observe(delay.Seconds())
	return nil
}

// timeLeft reports whether an attempt starting at t would still get
// Policy.MinAttemptTime before the operation deadline.
func (o *Owner) timeLeft(deadline, t time.Time) bool {
	left := deadline.Sub(t)
	return left > 0 && left >= o.policy.MinAttemptTime
}

// operation is the state of one Do call.
type operation struct {
	o        *Owner
	p        Priority
	pi       int
	start    time.Time
	attempts int
	last     error
	reason   string
	paid     bool          // a retry's budget cost is paid but the retry not made yet
	delay    time.Duration // the backoff slept before the next retry
	endAt    time.Time     // when the operation ended, if already read (zero: read it)
	ctx      context.Context
	outer    *attemptCtx // the other Owner's attempt this operation runs in, if any
}

// abandon ends the operation while attempt a still runs: the caller
// cancelled or the operation deadline passed.
func (op *operation) abandon(ctx context.Context, a *attemptCtx) error {
	a.stopWaiting()
	op.last = a.Err()
	return op.endEarly(ctx, a, op.o.clock.Now().Sub(a.start), op.last,
		"the attempt was still running at the operation deadline; abandoned", "")
}

// late ends the operation whose attempt succeeded after its caller
// cancelled or after the operation deadline.
func (op *operation) late(ctx context.Context, a *attemptCtx) error {
	op.o.in.lateSuccesses.Inc()
	return op.endEarly(ctx, a, a.end.Sub(a.start), nil,
		"the attempt succeeded after the operation deadline; late success",
		"the attempt succeeded after the caller had given up; late success")
}

// endEarly counts attempt a as the caller's cancel or a timeout, whichever
// ended the operation, and ends it: with the caller's ctx error, or as
// deadline exhausted for the operation's own deadline.
func (op *operation) endEarly(ctx context.Context, a *attemptCtx, d time.Duration, err error, deadlineReason, cancelReason string) error {
	outcome := outcomeTimeout
	cerr := ctx.Err()
	if errors.Is(cerr, context.Canceled) {
		outcome = outcomeCancelled
	}
	op.observe(a, outcome, d, err)
	if cerr != nil {
		op.reason = cancelReason
		return op.finishCtx(cerr)
	}
	op.reason = deadlineReason
	return op.finish(ResultDeadlineExhausted, nil)
}

// observe counts attempt a's outcome and calls OnAttempt.
func (op *operation) observe(a *attemptCtx, outcome int, d time.Duration, err error) {
	o := op.o
	o.in.attempts[outcome].Inc()
	o.in.attemptDuration[outcome].Observe(d.Seconds())
	if o.onAttempt != nil {
		o.onAttempt(AttemptInfo{Dependency: o.dep, Priority: op.p, Attempt: a.n, Outcome: outcomeNames[outcome], Duration: d, Err: err})
	}
}

func (op *operation) finishCtx(ctxErr error) error {
	r := ResultCancelled
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		r = ResultDeadlineExhausted // the caller's own deadline passed
	}
	return op.finish(r, ctxErr)
}

// unwound ends the operation whose attempt a panicked (or called
// runtime.Goexit) while Do waited for it: the attempt is counted as a
// permanent error and the operation gets its result, before the caller
// re-raises the panic.
func (op *operation) unwound(a *attemptCtx) {
	if a.panicked {
		op.o.in.panics.Inc()
	}
	pe := a.panicError()
	op.observe(a, outcomePermanent, a.end.Sub(a.start), pe)
	op.last = pe
	op.reason = "the attempt panicked"
	_ = op.finish(ResultPermanentError, nil)
}

func (op *operation) finish(r Result, ctxErr error) error {
	o := op.o
	if op.paid {
		o.budget.refund()
	}
	if r != ResultSuccess {
		op.failed()
	}
	o.in.results[op.pi][r].Inc()
	if op.attempts > 0 {
		o.in.operationAttempts.Add(float64(op.attempts))
	}
	class := classFailure
	switch {
	case r == ResultSuccess:
		class = classSuccess
	case op.attempts == 0:
		class = classFastFailure // never waited on the provider
	}
	end := op.endAt
	if end.IsZero() {
		end = o.clock.Now()
	}
	o.in.requestDuration[class].Observe(end.Sub(op.start).Seconds())
	if r == ResultSuccess {
		return nil
	}
	return &Error{Dependency: o.dep, Result: r, Attempts: op.attempts, Err: op.last, Reason: op.reason, ctxErr: ctxErr}
}

// deadline returns the operation deadline. New guarantees Policy.Deadline,
// so there always is one.
func (o *Owner) deadline(ctx context.Context, now time.Time) time.Time {
	d := now.Add(o.policy.Deadline)
	if c, ok := ctx.Deadline(); ok && c.Before(d) {
		d = c
	}
	return d.Add(-o.policy.DeadlineReserve)
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

// failed tells whoever called this operation that its owner gave up: the
// other Owner's attempt it runs in (never retried or hedged then), and the
// request a DeadlineHandler serves (its failure response is marked
// HeaderRetriesExhausted).
func (op *operation) failed() {
	if op.outer != nil {
		op.outer.final.Store(true)
	}
	if m, ok := op.ctx.Value(exhaustedKey{}).(*atomic.Bool); ok {
		m.Store(true)
	}
}

// attemptFrom returns the attempt ctx belongs to, or nil.
func attemptFrom(ctx context.Context) *attemptCtx {
	c, _ := ctx.Value(attemptKey{}).(*attemptCtx)
	return c
}

// ownerFrom returns the Owner whose attempt ctx belongs to, or nil.
func ownerFrom(ctx context.Context) *Owner {
	if c := attemptFrom(ctx); c != nil {
		return c.o
	}
	return nil
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
