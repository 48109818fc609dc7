package retry

import (
	"context"
	"errors"
	"log"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// attemptCtx is one attempt: the context the attempt function runs with and
// the state Do and the attempt's goroutine share.
//
// The attempt runs on a goroutine of its own so that Do can return at the
// operation deadline or on the caller's cancel even when the attempt
// ignores its ctx; the attempt then finishes in the background, still
// holding its limiter slot, and is counted as abandoned. Do waits on done,
// which closes when the attempt deadline passes, when Do cancels it for the
// caller, or when the attempt has returned. The context is a type of our own
// rather than context.WithDeadline so that one allocation carries the
// deadline, the Owner (for ObservePoolWait and nesting) and the result:
// this keeps the no-failure path within its allocation budget.
type attemptCtx struct {
	parent   context.Context
	o        *Owner
	fn       func(context.Context) error
	deadline time.Time
	start    time.Time // on the Owner's clock, set before the goroutine starts
	timer    *time.Timer
	done     chan struct{}

	state atomic.Int32 // attemptRunning, then attemptFinished or attemptAbandoned

	// Written by the attempt's goroutine before it leaves attemptRunning;
	// read by Do only after it saw attemptFinished.
	err error
	val any // DoValue's result, set by the attempt before it returns
	n   int // the attempt's number in its operation
	// hedge: sent beside a running attempt of its operation (startHedge).
	hedge bool
	// notify, in a hedged round, receives the attempt once it has
	// finished (never when abandoned); buffered, so run never blocks.
	notify   chan *attemptCtx
	end      time.Time
	panicked bool
	panicVal any
	stack    []byte // the panicking goroutine's stack
	exited   bool   // the attempt called runtime.Goexit (t.FailNow in a test)
	// noRetry, set by the attempt before it returns, says why the call
	// must not be repeated whatever its error (an HTTP request that is not
	// idempotent, or whose body cannot be sent again); empty: no such rule.
	noRetry string

	// Set from any goroutine while the attempt runs.
	nested atomic.Bool // another Owner's operation started in it: never hedged beside
	final  atomic.Bool // an owner below gave up on this call: never retried
	// graceState decides whether an attempt Do stopped waiting for is
	// abandoned: graceOpen until it returns (graceReturned) or
	// abandonGrace passes first (graceAbandoned).
	graceState atomic.Int32

	mu         sync.Mutex
	ctxErr     error
	afterFuncs []*func()
	returned   chan struct{} // made by Do only when it must wait past done
}

const (
	attemptRunning int32 = iota
	attemptFinished
	attemptAbandoned
)

const (
	graceOpen int32 = iota
	graceReturned
	graceAbandoned
)

// abandonGrace is how long an attempt may take to return after Do stopped
// waiting for it (its ctx ended) and still count as honouring its ctx;
// one still running then is abandoned (retry_abandoned_attempts_total).
const abandonGrace = 100 * time.Millisecond

func (c *attemptCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *attemptCtx) Done() <-chan struct{}       { return c.done }

// Err also looks at the parent: Do forwards a parent's cancel to done from
// its own goroutine, but a standard child context reports it at once, and
// an attempt that cancels its caller and then checks ctx must see it.
func (c *attemptCtx) Err() error {
	c.mu.Lock()
	err := c.ctxErr
	c.mu.Unlock()
	if err == nil {
		err = c.parent.Err()
	}
	return err
}

type attemptKey struct{}

func (c *attemptCtx) Value(key any) any {
	if key == (attemptKey{}) {
		return c
	}
	return c.parent.Value(key)
}

func (c *attemptCtx) String() string { return "retry.attemptCtx(" + c.o.dep + ")" }

// AfterFunc lets context.WithCancel and friends, which net/http uses on a
// request's ctx, propagate our cancellation without a watcher goroutine
// per derived context (the context package looks for this method).
func (c *attemptCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.ctxErr != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	p := &f
	c.afterFuncs = append(c.afterFuncs, p)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, q := range c.afterFuncs {
			if q == p {
				c.afterFuncs = append(c.afterFuncs[:i], c.afterFuncs[i+1:]...)
				return true
			}
		}
		return false
	}
}

// cancel ends the context with err; the first call wins.
func (c *attemptCtx) cancel(err error) {
	c.mu.Lock()
	if c.ctxErr != nil {
		c.mu.Unlock()
		return
	}
	c.ctxErr = err
	close(c.done)
	fns := c.afterFuncs
	c.afterFuncs = nil
	c.mu.Unlock()
	for _, f := range fns {
		go (*f)()
	}
}

// expire is the attempt deadline's timer.
func (c *attemptCtx) expire() { c.cancel(context.DeadlineExceeded) }

// newAttempt prepares an attempt with a limiter slot already held; Do then
// runs it on a goroutine of its own (run and wait) or inline (runInline).
func (o *Owner) newAttempt(ctx context.Context, now time.Time, timeout time.Duration, fn func(context.Context) error) *attemptCtx {
	c := &attemptCtx{
		parent:   ctx,
		o:        o,
		fn:       fn,
		deadline: now.Add(timeout),
		start:    now, // read right after the slot was taken: one clock reading less
		done:     make(chan struct{}),
	}
	o.in.active.Inc()
	c.timer = time.AfterFunc(timeout, c.expire)
	return c
}

// runInline runs the attempt on Do's goroutine, for attempts known to
// honour their ctx (Config.InlineAttempts, HTTPClient): no goroutine
// handoff, but nothing could end Do before the attempt returns.
func (op *operation) runInline(c *attemptCtx) {
	var stop func() bool
	if c.parent.Done() != nil {
		// Nobody selects on the parent while the attempt runs inline.
		stop = context.AfterFunc(c.parent, func() { c.cancel(c.parent.Err()) })
	}
	normal := false
	// Deferred so that a panicking attempt still returns its slot and ends
	// its operation before the panic goes on (re-raised here, its frames
	// still on the stack).
	defer func() {
		if !normal {
			if r := recover(); r != nil {
				c.panicked, c.panicVal, c.stack = true, r, debug.Stack()
			} else {
				c.exited = true // runtime.Goexit goes on by itself
			}
			c.end = c.o.clock.Now()
		}
		if stop != nil {
			stop()
		}
		c.returnSlot()
		c.cancel(context.Canceled)
		if !normal {
			op.unwound(c)
			if c.panicked {
				panic(c.panicVal)
			}
		}
	}()
	err := c.fn(c)
	c.err, c.end = err, c.o.clock.Now()
	c.state.Store(attemptFinished)
	normal = true
}

// run is the attempt's goroutine.
func (c *attemptCtx) run() {
	normal := false
	defer func() {
		// First thing: it has returned, whatever the grace timer says later.
		c.graceState.CompareAndSwap(graceOpen, graceReturned)
		if !normal {
			if r := recover(); r != nil {
				c.panicked, c.panicVal, c.stack = true, r, debug.Stack()
			} else {
				c.exited = true
			}
			c.end = c.o.clock.Now()
		}
		c.returnSlot()
		if c.state.CompareAndSwap(attemptRunning, attemptFinished) {
			c.cancel(context.Canceled) // wakes Do, as WithDeadline's cancel ended the ctx after the attempt
			c.mu.Lock()
			if c.returned != nil {
				close(c.returned)
			}
			c.mu.Unlock()
			if c.notify != nil {
				c.notify <- c
			}
			return
		}
		// Abandoned: Do has returned. What is left is to count the work
		// the provider did for nobody, and to surface a bug without
		// killing the process: nobody can recover this panic but us.
		c.cancel(context.Canceled)
		switch {
		case c.panicked:
			c.o.lostPanic(c)
		case !c.exited && c.err == nil:
			c.o.in.lateSuccesses.Inc()
		}
		if h := c.o.abandonedReturned; h != nil {
			h()
		}
	}()
	err := c.fn(c)
	c.err, c.end = err, c.o.clock.Now()
	normal = true
}

// returnSlot gives the attempt's admission slot back and stops its timer,
// once the attempt has really returned: an abandoned attempt still loads
// the provider, so it keeps counting against the limit until then.
func (c *attemptCtx) returnSlot() {
	c.timer.Stop()
	o := c.o
	o.in.active.Dec()
	if o.limiter != nil {
		o.limiter.Release()
	}
}

// wait blocks until the attempt returns, or until Do must stop waiting for
// it: the caller cancelled, or the operation deadline (opDeadline, on the
// Owner's clock) passed. It reports whether the attempt finished; false
// means it was abandoned and still runs.
func (c *attemptCtx) wait(opDeadline time.Time) bool {
	parentDone := c.parent.Done()
	select {
	case <-c.done:
	case <-parentDone:
		c.cancel(c.parent.Err())
	}
	if c.state.Load() == attemptFinished {
		return true
	}
	if c.parent.Err() == nil && c.deadline.Before(opDeadline) {
		// The per-attempt timeout passed and the attempt ignores its ctx.
		// Keep waiting, but never past the operation deadline.
		c.mu.Lock()
		if c.state.Load() == attemptRunning {
			c.returned = make(chan struct{})
		}
		returned := c.returned
		c.mu.Unlock()
		if returned != nil {
			t := time.NewTimer(opDeadline.Sub(c.deadline))
			select {
			case <-returned:
			case <-t.C:
			case <-parentDone:
			}
			t.Stop()
		}
	}
	return !c.state.CompareAndSwap(attemptRunning, attemptAbandoned)
}

// rethrow re-raises in Do's goroutine what the attempt's goroutine caught,
// so a panic or t.FailNow in an attempt behaves as if it ran inline.
func (c *attemptCtx) rethrow() {
	switch {
	case c.panicked:
		panic(c.panicVal)
	case c.exited:
		runtime.Goexit()
	}
}

// unwound reports whether the attempt panicked or called runtime.Goexit.
func (c *attemptCtx) unwound() bool { return c.panicked || c.exited }

// panicError describes the attempt's panic for OnAttempt and OnPanic.
func (c *attemptCtx) panicError() *PanicError {
	if !c.panicked {
		return &PanicError{Dependency: c.o.dep, Attempt: c.n, Value: "the attempt called runtime.Goexit"}
	}
	return &PanicError{Dependency: c.o.dep, Attempt: c.n, Value: c.panicVal, Stack: c.stack}
}

// stopWaiting marks attempt c, still running, as one Do no longer waits
// for: if it has not returned within abandonGrace, it ignores its ctx and
// is counted in retry_abandoned_attempts_total.
func (c *attemptCtx) stopWaiting() {
	time.AfterFunc(c.o.grace, func() {
		if c.graceState.CompareAndSwap(graceOpen, graceAbandoned) {
			c.o.in.abandoned.Inc()
			if h := c.o.abandonCounted; h != nil {
				h()
			}
		}
	})
}

// lostPanic deals with the panic of an attempt nobody waits for any more:
// counted, and handed to Config.OnPanic (by default logged with its
// stack), never re-raised where nothing could recover it.
func (o *Owner) lostPanic(c *attemptCtx) {
	if !c.panicked {
		return // runtime.Goexit: the goroutine is gone, as asked
	}
	o.in.panics.Inc()
	pe := c.panicError()
	if o.onPanic != nil {
		o.onPanic(pe)
		return
	}
	log.Printf("%v\n%s", pe, pe.Stack)
}

// outcome is the attempt outcome label of a returned attempt's error.
func (o *Owner) outcome(err error, class Class) int {
	switch {
	case err == nil:
		return outcomeSuccess
	case errors.Is(err, context.Canceled):
		return outcomeCancelled
	case isTimeout(err):
		return outcomeTimeout
	case class == Temporary:
		return outcomeTemporary
	}
	return outcomePermanent
}
