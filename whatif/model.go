package whatif

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/retrytop/retrytop/policy"
)

// Model is an incident to replay: traffic, the hops from the user's side
// to the provider, and the provider, all per bin.
type Model struct {
	// Bin is the width of every per-bin series.
	Bin time.Duration
	// Arrivals is originals per bin at the user-facing hop.
	Arrivals []float64
	// Hops run from the user-facing hop to the one that calls the
	// provider; the policy under test replaces the last one's.
	Hops     []Hop
	Provider Provider
	// Trigger is the span of bins [Start, End) in which the provider was
	// degraded (its service time above its healthy level), for the
	// recovery time; End <= Start means none was found. TriggerEnd is when
	// inside those bins it ended (0: at bin End's start).
	Trigger    Span
	TriggerEnd time.Duration
	// Seed fixes backoff jitter and throttling draws.
	Seed uint64
}

// Span is a range of bins [Start, End).
type Span struct{ Start, End int }

// Hop is one calling hop and its timing; Base is its recorded policy.
type Hop struct {
	Name, Dependency string
	Base             policy.Base
	// Deadline caps the hop's operation (0: only the caller's); Reserve is
	// kept back from it for the hop's own reply; Propagate makes the hop
	// honour its caller's remaining time.
	Deadline, Reserve time.Duration
	Propagate         bool
	// PerAttemptTimeout caps one attempt (0: none); MinAttemptTime is the
	// least time worth starting an attempt with.
	PerAttemptTimeout, MinAttemptTime time.Duration
}

// Provider is the provider's capacity per bin.
type Provider struct {
	// Slots are the requests executed at once.
	Slots int
	// ServiceTime per bin: how long a request granted a slot in that bin
	// holds it.
	ServiceTime []time.Duration
	// Edges place a change of service time inside the two bins around
	// it: a change seen in per-bin data sits anywhere in the bin whose
	// mean mixes both levels, or at its edge; Fit calibrates where.
	Edges []Edge
	// MaxQueue bounds the queue (0: unbounded); IgnoreCancel keeps work
	// going after its caller gave up.
	MaxQueue     int
	IgnoreCancel bool
}

// Edge is a change of service time at At: requests granted in bins From
// and From+1 get Before until At and After from then on.
type Edge struct {
	From          int
	At            time.Duration
	Before, After time.Duration
}

// Bin is one bin of a run's timeline.
type Bin struct {
	// Offered: originals started at the user-facing hop; Ended those that
	// ended, Succeeded those that ended successfully (both counted when
	// they end, as retry_results_total is).
	Offered, Ended, Succeeded int64
	// Attempts are the provider-calling hop's attempts that ended in the
	// bin (retry_attempts_total's moment); Received the provider's
	// arrivals.
	Attempts, Received int64
	// Held is the provider's executing plus queued requests at the bin's
	// end (a gauge read at a scrape).
	Held int
}

// Result is one run.
type Result struct {
	Bins []Bin
	// Fates counts, at the provider-calling hop, operations by how they
	// ended: success, or the reason the last failure was not retried.
	Fates map[string]int64
	// Events is the number of events the run processed.
	Events int64
}

// Run replays m with pol (nil: every hop's recorded policy) on the
// provider-calling hop.
func Run(m Model, spec *policy.Spec) (Result, error) {
	if m.Bin <= 0 || len(m.Hops) == 0 {
		return Result{}, fmt.Errorf("whatif: model needs a bin width and at least one hop")
	}
	if m.Provider.Slots < 1 {
		return Result{}, fmt.Errorf("whatif: provider needs at least one slot")
	}
	e := &engine{m: m, res: Result{Bins: make([]Bin, len(m.Arrivals)), Fates: map[string]int64{}}}
	rng := rand.New(rand.NewPCG(m.Seed, 0x3a7e1f))
	rnd := func(n int64) int64 {
		if n <= 0 {
			return 0
		}
		return rng.Int64N(n)
	}
	last := len(m.Hops) - 1
	for i, h := range m.Hops {
		var p policy.Policy
		var err error
		if i == last && spec != nil {
			p, err = policy.New(*spec, h.Base, rnd)
		} else {
			p = policy.Recorded(h.Base, rnd)
		}
		if err != nil {
			return Result{}, err
		}
		if t, ok := p.(policy.Timed); ok {
			// The model is a copy: overriding its last hop's timing here
			// changes this run only.
			hops := append([]Hop(nil), e.m.Hops...)
			if d := t.Timing().AttemptTimeout; d > 0 {
				hops[i].PerAttemptTimeout = d
				hops[i].MinAttemptTime = min(DefaultMinAttemptTime, d/2)
			}
			if d := t.Timing().Deadline; d > 0 {
				hops[i].Deadline = d
			}
			e.m.Hops = hops
		}
		e.pols = append(e.pols, p)
	}
	e.prov = &provider{cfg: m.Provider, bin: m.Bin}
	e.schedule()
	for len(e.q) > 0 {
		ev := e.q.pop()
		e.now = ev.at
		e.res.Events++
		ev.fn()
	}
	return e.res, nil
}

// event is one thing to do at a virtual time; seq keeps equal times in
// the order they were scheduled, so a run is deterministic.
type event struct {
	at  time.Duration
	seq uint64
	fn  func()
}

// events is a binary min-heap of events by value (no interface boxing:
// an hour of incident is millions of them).
type events []event

func (q events) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q *events) push(e event) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *events) pop() event {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = event{}
	h = h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

type engine struct {
	m    Model
	pols []policy.Policy
	prov *provider
	q    events
	seq  uint64
	now  time.Duration
	res  Result
}

func (e *engine) at(t time.Duration, fn func()) {
	e.seq++
	e.q.push(event{at: t, seq: e.seq, fn: fn})
}

func (e *engine) bin(t time.Duration) *Bin {
	i := int(t / e.m.Bin)
	if i < 0 || i >= len(e.res.Bins) {
		return nil
	}
	return &e.res.Bins[i]
}

// schedule lays out the arrivals (spread evenly inside each bin, the
// fractional remainder carried to the next) and the bin-end samples.
func (e *engine) schedule() {
	carry := 0.0
	for i, a := range e.m.Arrivals {
		x := a + carry
		n := int(x)
		carry = x - float64(n)
		start := time.Duration(i) * e.m.Bin
		for j := range n {
			t := start + time.Duration((float64(j)+0.5)*float64(e.m.Bin)/float64(n))
			e.at(t, func() { e.original(t) })
		}
		end := start + e.m.Bin
		b := &e.res.Bins[i]
		// The gauge is read just before the bin's end, as a scrape at the
		// edge would be.
		e.at(end-time.Nanosecond, func() { b.Held = e.prov.busy + e.prov.depth })
	}
}

// original is one user action at the user-facing hop.
func (e *engine) original(t time.Duration) {
	if b := e.bin(t); b != nil {
		b.Offered++
	}
	e.startOp(0, t, 0, func(ok bool) {
		if b := e.bin(e.now); b != nil {
			b.Ended++
			if ok {
				b.Succeeded++
			}
		}
	})
}

// op is one operation at one hop.
type op struct {
	hop      int
	p        policy.Op
	deadline time.Duration
	cur      *attempt
	finished bool
	done     func(ok bool)
}

// attempt is one attempt of an op: to the next hop (child) or the provider
// (req).
type attempt struct {
	op    *op
	child *op
	req   *request
	done  bool
}

const never = time.Duration(1<<63 - 1)

// startOp begins an operation at hop i at now; callerDeadline is when the
// caller's attempt expires (0: the user, who has none but the hop's own).
func (e *engine) startOp(i int, now, callerDeadline time.Duration, done func(ok bool)) *op {
	h := e.m.Hops[i]
	o := &op{hop: i, done: done, p: policy.Op{Start: now}}
	d := never
	if h.Deadline > 0 {
		d = now + h.Deadline
	}
	if callerDeadline > 0 && h.Propagate && callerDeadline < d {
		d = callerDeadline
	}
	if d != never {
		d -= h.Reserve
	}
	o.deadline = d
	if r := e.pols[i].Start(now, &o.p); r != policy.Allowed {
		e.finish(o, policy.Failure, string(r))
		return o
	}
	e.tryAttempt(o)
	return o
}

func (e *engine) timeLeft(o *op, t time.Duration) bool {
	left := o.deadline - t
	return left > 0 && left >= e.m.Hops[o.hop].MinAttemptTime
}

func (e *engine) tryAttempt(o *op) {
	if o.finished {
		return
	}
	now := e.now
	if !e.timeLeft(o, now) {
		e.finish(o, policy.Timeout, string(policy.ReasonDeadline))
		return
	}
	pol := e.pols[o.hop]
	if r := pol.Acquire(now, &o.p); r != policy.Allowed {
		e.finish(o, policy.Failure, string(r))
		return
	}
	o.p.Attempts++
	h := e.m.Hops[o.hop]
	timeout := o.deadline - now
	if h.PerAttemptTimeout > 0 && h.PerAttemptTimeout < timeout {
		timeout = h.PerAttemptTimeout
	}
	a := &attempt{op: o}
	o.cur = a
	end := now + timeout
	if o.hop == len(e.m.Hops)-1 {
		a.req = e.prov.submit(e, now, func(ok bool) { e.attemptDone(a, ok) })
	} else {
		a.child = e.startOp(o.hop+1, now, end, func(ok bool) { e.attemptDone(a, ok) })
	}
	if !a.done {
		e.at(end, func() {
			if a.done {
				return
			}
			e.cancelAttempt(a)
			e.attemptEnded(a, policy.Timeout)
		})
	}
}

// attemptDone is the next hop's answer.
func (e *engine) attemptDone(a *attempt, ok bool) {
	if a.done {
		return // timed out or cancelled first: nobody listens
	}
	if ok {
		e.attemptEnded(a, policy.Success)
	} else {
		e.attemptEnded(a, policy.Failure)
	}
}

func (e *engine) cancelAttempt(a *attempt) {
	a.done = true
	if a.req != nil {
		e.prov.cancel(e, a.req)
	}
	if a.child != nil {
		e.cancelOp(a.child)
	}
}

// cancelOp is the caller giving up on o.
func (e *engine) cancelOp(o *op) {
	if o.finished {
		return
	}
	o.finished = true
	last := policy.Cancelled
	if a := o.cur; a != nil && !a.done {
		e.cancelAttempt(a)
		e.release(o, policy.Cancelled)
	}
	e.pols[o.hop].End(e.now, &o.p, last)
}

func (e *engine) release(o *op, out policy.Outcome) {
	o.cur = nil
	e.pols[o.hop].Release(e.now, &o.p, out)
	if o.hop == len(e.m.Hops)-1 {
		if b := e.bin(e.now); b != nil {
			b.Attempts++
		}
	}
}

func (e *engine) attemptEnded(a *attempt, out policy.Outcome) {
	a.done = true
	o := a.op
	if o.finished {
		return
	}
	e.release(o, out)
	pol := e.pols[o.hop]
	switch {
	case out == policy.Success:
		e.finish(o, out, "success")
		return
	case out == policy.Permanent:
		e.finish(o, out, string(policy.ReasonNonRetry))
		return
	case o.p.Attempts >= pol.MaxAttempts():
		e.finish(o, out, string(policy.ReasonMaxAttempts))
		return
	}
	d := pol.Backoff(&o.p)
	if !e.timeLeft(o, e.now+d) {
		e.finish(o, out, string(policy.ReasonDeadline))
		return
	}
	if r := pol.Retry(e.now, &o.p, out); r != policy.Allowed {
		e.finish(o, out, string(r))
		return
	}
	e.at(e.now+d, func() { e.tryAttempt(o) })
}

// finish ends o; its caller hears of it through an event at the same
// instant, never from inside the call that ended it.
func (e *engine) finish(o *op, last policy.Outcome, fate string) {
	if o.finished {
		return
	}
	o.finished = true
	e.pols[o.hop].End(e.now, &o.p, last)
	if o.hop == len(e.m.Hops)-1 {
		e.res.Fates[fate]++
	}
	ok := last == policy.Success
	e.at(e.now, func() { o.done(ok) })
}

// provider is the sim's provider (sim/provider.go, slots.go): a FIFO
// queue in front of execution slots; a cancelled request leaves the queue
// or frees its slot at once unless the provider ignores cancellation.
type provider struct {
	cfg         Provider
	bin         time.Duration
	busy, depth int
	queue       []*request // FIFO; cancelled entries are skipped
	head        int
}

type request struct {
	queued, running, cancelled bool
	done                       func(ok bool)
}

func (p *provider) serviceTime(t time.Duration) time.Duration {
	st := p.cfg.ServiceTime
	if len(st) == 0 {
		return 0
	}
	i := min(max(int(t/p.bin), 0), len(st)-1)
	for _, e := range p.cfg.Edges {
		if i == e.From || i == e.From+1 {
			if t < e.At {
				return e.Before
			}
			return e.After
		}
	}
	return st[i]
}

func (p *provider) submit(e *engine, now time.Duration, done func(ok bool)) *request {
	if b := e.bin(now); b != nil {
		b.Received++
	}
	r := &request{done: done}
	if p.busy < p.cfg.Slots {
		p.start(e, r)
		return r
	}
	if p.cfg.MaxQueue > 0 && p.depth >= p.cfg.MaxQueue {
		e.at(now, func() { done(false) }) // 503 queue full
		return r
	}
	r.queued = true
	p.queue = append(p.queue, r)
	p.depth++
	return r
}

func (p *provider) start(e *engine, r *request) {
	p.busy++
	r.queued, r.running = false, true
	e.at(e.now+p.serviceTime(e.now), func() {
		if !r.running {
			return // cancelled while executing: the slot is already free
		}
		r.running = false
		p.busy--
		if !r.cancelled {
			r.done(true)
		}
		p.next(e)
	})
}

func (p *provider) next(e *engine) {
	for p.busy < p.cfg.Slots && p.head < len(p.queue) {
		r := p.queue[p.head]
		p.queue[p.head] = nil
		p.head++
		if r.cancelled && !p.cfg.IgnoreCancel {
			continue // left the queue when its caller gave up
		}
		p.depth--
		p.start(e, r)
	}
	if p.head > 1024 && p.head*2 > len(p.queue) {
		p.queue = append(p.queue[:0], p.queue[p.head:]...)
		p.head = 0
	}
}

func (p *provider) cancel(e *engine, r *request) {
	if r.cancelled {
		return
	}
	r.cancelled = true
	switch {
	case r.queued && !p.cfg.IgnoreCancel:
		r.queued = false
		p.depth--
	case r.running && !p.cfg.IgnoreCancel:
		r.running = false
		p.busy--
		p.next(e)
	}
}
