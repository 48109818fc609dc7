package retry

import (
	"context"
	"errors"
	"time"
)

// hedgedRound runs attempt a, already admitted, and a hedge beside it if a
// has not answered after Policy.HedgeDelay. It returns the attempt whose
// answer decides the round (the first success, or else the last to
// finish), with every other attempt of the round counted and, if still
// running, cancelled; or done and Do's result when the operation ended
// while attempts ran (caller's cancel, operation deadline).
func (op *operation) hedgedRound(ctx context.Context, a *attemptCtx, deadline time.Time, fn func(context.Context) error) (w *attemptCtx, ret error, done bool) {
	o := op.o
	notify := make(chan *attemptCtx, 2)
	a.notify = notify
	go a.run()
	running := []*attemptCtx{a}

	// The hedge timer sleeps on the Owner's clock, so tests drive it.
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	hedgeC := make(chan struct{})
	go func() {
		if o.clock.Sleep(hctx, o.policy.HedgeDelay) == nil {
			close(hedgeC)
		}
	}()
	// Do never waits past the operation deadline, as in attemptCtx.wait.
	opTimer := time.NewTimer(deadline.Sub(o.clock.Now()))
	defer opTimer.Stop()

	for {
		select {
		case <-hedgeC:
			hedgeC = nil
			var b *attemptCtx
			// The timer may fire just as the attempt returns, its notice
			// still unread: a hedge then would be sent for nothing. An
			// attempt running another Owner's operation is never hedged:
			// that owner retries, and a hedge would run a second
			// operation of it beside the first.
			if a.state.Load() == attemptRunning && !a.nested.Load() {
				b = op.startHedge(ctx, deadline, fn, notify)
			}
			if b != nil {
				running = append(running, b)
			}
			if h := o.hedgeDecided; h != nil {
				h(b != nil)
			}
		case f := <-notify:
			running = remove(running, f)
			if f.unwound() || f.err == nil || len(running) == 0 {
				stop()
				op.dropLosers(running, outcomeCancelled)
				if f.unwound() {
					op.unwound(f)
					f.rethrow()
				}
				if f.hedge && f.err == nil {
					o.in.hedgesWon.Inc()
				}
				return f, nil, false
			}
			// Failed while another attempt still runs: that one decides.
			op.countFinished(f)
		case <-ctx.Done():
			stop()
			outcome := outcomeCancelled
			if !errors.Is(ctx.Err(), context.Canceled) {
				outcome = outcomeTimeout
			}
			op.dropLosers(running, outcome)
			return nil, op.finishCtx(ctx.Err()), true
		case <-opTimer.C:
			stop()
			op.dropLosers(running, outcomeTimeout)
			op.reason = "the attempts were still running at the operation deadline; abandoned"
			return nil, op.finish(ResultDeadlineExhausted, nil), true
		}
	}
}

// startHedge sends a hedge if attempts, time, the Limiter and the Budget
// allow it, and returns it, or nil.
func (op *operation) startHedge(ctx context.Context, deadline time.Time, fn func(context.Context) error, notify chan *attemptCtx) *attemptCtx {
	o := op.o
	if op.attempts >= o.policy.MaxAttempts || ctx.Err() != nil {
		return nil
	}
	if !o.timeLeft(deadline, o.clock.Now()) {
		return nil
	}
	if o.limiter != nil && !o.limiter.TryAcquire(op.p) {
		return nil
	}
	// A hedge is a retry for the budget: it loads the provider as one.
	if o.budget != nil && !o.budget.TryConsume() {
		if o.limiter != nil {
			o.limiter.Release()
		}
		return nil
	}
	now := o.clock.Now()
	timeout := deadline.Sub(now)
	if t := o.policy.PerAttemptTimeout; t > 0 && t < timeout {
		timeout = t
	}
	op.attempts++
	o.in.retries.Inc()
	o.in.hedges.Inc()
	if o.onRetry != nil {
		o.onRetry(RetryInfo{Dependency: o.dep, Priority: op.p, Attempt: op.attempts, Delay: o.policy.HedgeDelay, Hedge: true})
	}
	b := o.newAttempt(ctx, now, timeout, fn)
	b.n = op.attempts
	b.hedge = true
	b.notify = notify
	go b.run()
	return b
}

// dropLosers ends the round for attempts that lost or outlived it. One
// still running is given up first and cancelled second, so that exactly
// one side accounts for it: it is counted here with outcome, finishes in
// the background holding its slot (abandoned if it ignores the cancel
// past abandonGrace) and, if it then succeeds, is a late success. One
// that finished meanwhile is counted as it ended.
func (op *operation) dropLosers(running []*attemptCtx, outcome int) {
	o := op.o
	for _, l := range running {
		if l.state.CompareAndSwap(attemptRunning, attemptAbandoned) {
			if l.hedge {
				o.in.hedgesAbandoned.Inc()
			}
			op.observe(l, outcome, o.clock.Now().Sub(l.start), context.Canceled)
			l.cancel(context.Canceled)
			l.stopWaiting()
			continue
		}
		l.cancel(context.Canceled)
		op.countFinished(l)
	}
}

// countFinished counts a finished attempt of a hedged round that does not
// decide it. A success nobody will use is late: counted as the owner's
// cancel, never as a success, as any success after the operation is done
// (docs/metrics.md), so a hedged round never shows two successes.
func (op *operation) countFinished(f *attemptCtx) {
	o := op.o
	if f.unwound() {
		// A loser's panic: the round was decided without it.
		op.observe(f, outcomePermanent, f.end.Sub(f.start), f.panicError())
		o.lostPanic(f)
		return
	}
	if f.err == nil {
		o.in.lateSuccesses.Inc()
		op.observe(f, outcomeCancelled, f.end.Sub(f.start), nil)
		return
	}
	class := o.classifyAttempt(f)
	op.last = f.err
	op.observe(f, o.outcome(f.err, class), f.end.Sub(f.start), f.err)
}

func remove(as []*attemptCtx, a *attemptCtx) []*attemptCtx {
	for i, x := range as {
		if x == a {
			return append(as[:i], as[i+1:]...)
		}
	}
	return as
}
