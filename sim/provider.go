package sim

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SafetyQueueCap bounds the provider's "unbounded" queue so that a runaway
// scenario (ignore-cancel under sustained overload) cannot exhaust memory:
// beyond it the provider answers 503 and counts reason="safety_cap".
const SafetyQueueCap = 20000

// ProviderConfig configures the provider stub. Service time and injected
// errors come from the current phase.
type ProviderConfig struct {
	// Slots is the number of requests executed at once (default 4).
	Slots int
	// MaxQueue bounds the queue in front of the slots; a request beyond it
	// is answered 503 with Retry-After. 0 means unbounded (up to
	// SafetyQueueCap).
	MaxQueue int
	// RetryAfter is the delay announced with a queue-full 503 (default 1s;
	// the header carries whole seconds, rounded up).
	RetryAfter time.Duration
	// IgnoreCancel makes the provider finish work after the caller gave up:
	// queued requests still run and running ones are not interrupted.
	IgnoreCancel bool
}

func (c ProviderConfig) withDefaults() ProviderConfig {
	if c.Slots <= 0 {
		c.Slots = 4
	}
	if c.MaxQueue < 0 {
		c.MaxQueue = 0
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = time.Second
	}
	return c
}

// providerCounts is the provider's ground truth, counted apart from its
// Prometheus metrics.
type providerCounts struct {
	received, completed, workAfterCancel           atomic.Int64
	cancelledQueued, cancelledRunning, injected    atomic.Int64
	rejectedQueueFull, rejectedSafety, abandonedOn atomic.Int64
	// granted and waited are the requests observed in the queue-wait
	// histogram and their total wait, kept exactly (integer nanoseconds)
	// apart from the histogram's float sum; one lock keeps the pair
	// consistent for a reader.
	waitMu  sync.Mutex
	granted int64
	waited  time.Duration
}

// grant records one request that got a slot after waiting d.
func (c *providerCounts) grant(d time.Duration) {
	c.waitMu.Lock()
	c.granted++
	c.waited += d
	c.waitMu.Unlock()
}

// waits returns the requests granted so far and their total wait.
func (c *providerCounts) waits() (int64, time.Duration) {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	return c.granted, c.waited
}

type providerMetrics struct {
	received, completed, workAfterCancel, injected prometheus.Counter
	cancelled, rejected, responses                 *prometheus.CounterVec
	queueWait, serviceTime                         prometheus.Histogram
}

// provider is the stub's HTTP handler.
type provider struct {
	cfg    ProviderConfig
	clock  Clock
	phase  func() Phase
	q      *slotQueue
	stop   chan struct{} // closed on shutdown: abandons ignore-cancel work
	counts providerCounts
	m      providerMetrics
	// trace, if set (tests only), is told each step a request takes:
	// queued, granted, cancelled-queued, cancelled-executing, done.
	trace func(step string)

	rndMu sync.Mutex
	rnd   *rand.Rand
}

func newProvider(cfg ProviderConfig, clock Clock, phase func() Phase, seed uint64, reg prometheus.Registerer) *provider {
	cfg = cfg.withDefaults()
	queueCap := cfg.MaxQueue
	if queueCap == 0 || queueCap > SafetyQueueCap {
		queueCap = SafetyQueueCap
	}
	p := &provider{
		cfg:   cfg,
		clock: clockOr(clock),
		phase: phase,
		q:     newSlotQueue(cfg.Slots, queueCap),
		stop:  make(chan struct{}),
		rnd:   rand.New(rand.NewPCG(seed, 0x5eed)),
	}
	p.register(reg)
	return p
}

func (p *provider) register(reg prometheus.Registerer) {
	f := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	p.m.received = f("sim_provider_requests_received_total", "Requests the provider received (every attempt that reached it).")
	p.m.completed = f("sim_provider_completed_total", "Requests whose work the provider finished (including work after the caller cancelled).")
	p.m.workAfterCancel = f("sim_provider_work_after_cancel_total", "Requests the provider finished after the caller had given up (ignore-cancel mode).")
	p.m.injected = f("sim_provider_errors_injected_total", "Requests answered with an injected 503.")
	p.m.cancelled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sim_provider_cancelled_total",
		Help: "Requests abandoned because the caller gave up, by the stage they were in (queued, executing).",
	}, []string{"stage"})
	p.m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sim_provider_rejected_total",
		Help: "Requests answered 503 with Retry-After because the queue was full (reason queue_full, or safety_cap for the sim's memory guard).",
	}, []string{"reason"})
	p.m.responses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sim_provider_responses_total",
		Help: "Responses sent, by status code (200 for finished work whose caller still waited, 503 for injected errors and rejections).",
	}, []string{"code"})
	for _, c := range []string{"200", "503"} {
		p.m.responses.WithLabelValues(c)
	}
	for _, s := range []string{"queued", "executing"} {
		p.m.cancelled.WithLabelValues(s)
	}
	for _, r := range []string{"queue_full", "safety_cap"} {
		p.m.rejected.WithLabelValues(r)
	}
	p.m.queueWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "sim_provider_queue_wait_seconds",
		Help:    "Time requests waited in the queue before getting an execution slot.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	})
	p.m.serviceTime = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "sim_provider_service_time_seconds",
		Help:    "Time a completed request held an execution slot.",
		Buckets: []float64{0.005, 0.01, 0.02, 0.05, 0.1, 0.12, 0.15, 0.2, 0.3, 0.5, 1},
	})
	reg.MustRegister(p.m.cancelled, p.m.rejected, p.m.responses, p.m.queueWait, p.m.serviceTime)

	g := func(name, help string, fn func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
	}
	st := func() queueStats { return p.q.stats(p.clock.Now()) }
	g("sim_provider_in_flight", "Requests executing now (execution slots in use).", func() float64 { return float64(st().Busy) })
	g("sim_provider_slots", "Execution slots.", func() float64 { return float64(p.cfg.Slots) })
	g("sim_provider_queue_depth", "Requests waiting for an execution slot.", func() float64 { return float64(st().Depth) })
	g("sim_provider_queue_limit", "Configured queue bound (0: unbounded).", func() float64 { return float64(p.cfg.MaxQueue) })
	g("sim_provider_queue_oldest_age_seconds", "Age of the oldest waiting request (0 when the queue is empty).", func() float64 { return st().Oldest.Seconds() })
	g("sim_provider_in_flight_peak", "Highest number of requests executing at once since start.", func() float64 { return float64(st().PeakBusy) })
	g("sim_provider_queue_depth_peak", "Highest queue depth since start.", func() float64 { return float64(st().PeakDepth) })
	g("sim_provider_open_peak", "Highest number of requests the provider held at once, executing plus queued, since start.", func() float64 { return float64(st().PeakOpen) })
	g("sim_provider_service_time_target_seconds", "Service time of the current phase.", func() float64 { return p.phase().ServiceTime.Seconds() })
	g("sim_provider_ignore_cancel", "1 when the provider finishes work after the caller gave up.", func() float64 {
		if p.cfg.IgnoreCancel {
			return 1
		}
		return 0
	})
}

func (p *provider) inject(frac float64) bool {
	if frac <= 0 {
		return false
	}
	p.rndMu.Lock()
	defer p.rndMu.Unlock()
	return p.rnd.Float64() < frac
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.counts.received.Add(1)
	p.m.received.Inc()
	ph := p.phase()
	if p.inject(ph.ErrorFraction) {
		p.counts.injected.Add(1)
		p.m.injected.Inc()
		p.m.responses.WithLabelValues("503").Inc()
		w.Header().Set(HeaderResult, "provider_error")
		http.Error(w, "injected error", http.StatusServiceUnavailable)
		return
	}
	wt, ok := p.q.enter(p.clock.Now())
	if !ok {
		reason := "queue_full"
		if p.cfg.MaxQueue == 0 || p.cfg.MaxQueue > SafetyQueueCap {
			reason = "safety_cap"
			p.counts.rejectedSafety.Add(1)
		} else {
			p.counts.rejectedQueueFull.Add(1)
		}
		p.m.rejected.WithLabelValues(reason).Inc()
		p.m.responses.WithLabelValues("503").Inc()
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(p.cfg.RetryAfter.Seconds()))))
		w.Header().Set(HeaderResult, "provider_overloaded")
		http.Error(w, "queue full", http.StatusServiceUnavailable)
		return
	}
	select {
	case <-wt.ready:
	default:
		p.step("queued")
	}
	ctx := r.Context()
	cancelled := ctx.Done()
	if p.cfg.IgnoreCancel {
		cancelled = nil // a nil channel never fires: the work goes on
	}
	select {
	case <-wt.ready:
	case <-cancelled:
		if p.q.leave(wt) {
			p.counts.cancelledQueued.Add(1)
			p.m.cancelled.WithLabelValues("queued").Inc()
			p.step("cancelled-queued")
			return
		}
		// Granted at the same moment: give the slot back.
		p.q.release(p.clock.Now())
		p.counts.cancelledRunning.Add(1)
		p.m.cancelled.WithLabelValues("executing").Inc()
		p.step("cancelled-executing")
		return
	case <-p.stop:
		if !p.q.leave(wt) {
			p.q.release(p.clock.Now())
		}
		p.counts.abandonedOn.Add(1)
		return
	}
	p.m.queueWait.Observe(wt.waited.Seconds())
	p.counts.grant(wt.waited)
	p.step("granted")

	// The service time runs on the provider's clock, like its queue: a
	// fake clock drives both, and in a synctest bubble the real one is
	// virtual.
	service := p.phase().ServiceTime
	// Read before the timer exists: a fake clock may be advanced as soon
	// as it sees the timer, and the time then read would be its end.
	began := p.clock.Now()
	t := p.clock.NewTimer(service)
	defer t.Stop()
	select {
	case <-t.C():
	case <-cancelled:
		p.q.release(p.clock.Now())
		p.counts.cancelledRunning.Add(1)
		p.m.cancelled.WithLabelValues("executing").Inc()
		p.step("cancelled-executing")
		return
	case <-p.stop:
		p.q.release(p.clock.Now())
		p.counts.abandonedOn.Add(1)
		return
	}
	p.q.release(p.clock.Now())
	p.m.serviceTime.Observe(p.clock.Now().Sub(began).Seconds())
	p.counts.completed.Add(1)
	p.m.completed.Inc()
	if ctx.Err() != nil {
		p.counts.workAfterCancel.Add(1)
		p.m.workAfterCancel.Inc()
	} else {
		p.m.responses.WithLabelValues("200").Inc()
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("quote 4.20\n"))
	}
	p.step("done")
}

func (p *provider) step(s string) {
	if p.trace != nil {
		p.trace(s)
	}
}

// shutdown abandons work still held by ignore-cancel requests.
func (p *provider) shutdown() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
}

// ProviderTruth is the provider's ground truth.
type ProviderTruth struct {
	Name  string
	Slots int
	// Received counts every request that reached the provider.
	Received int64
	// Completed counts finished work, WorkAfterCancel the part of it
	// finished after the caller had gone.
	Completed, WorkAfterCancel int64
	// CancelledQueued and CancelledExecuting count requests abandoned when
	// the caller gave up (never in ignore-cancel mode).
	CancelledQueued, CancelledExecuting int64
	InjectedErrors                      int64
	// RejectedQueueFull counts 503s from a full bounded queue,
	// RejectedSafetyCap those from the sim's memory guard.
	RejectedQueueFull, RejectedSafetyCap int64
	// Abandoned counts requests dropped by shutdown.
	Abandoned int64
	// Granted counts the requests that got an execution slot (at once or
	// after queueing) and QueueWaited their total wait: exactly what the
	// queue-wait histogram observed, so QueueWaited/Granted over a span is
	// the mean wait its _sum/_count give.
	Granted     int64
	QueueWaited time.Duration
	// InFlight and QueueDepth are current; the peaks are since start.
	// PeakOpen is the most requests held at once, executing plus queued.
	InFlight, QueueDepth, PeakInFlight, PeakQueueDepth, PeakOpen int
	OldestQueued                                                 time.Duration
}

func (p *provider) truth() ProviderTruth {
	st := p.q.stats(p.clock.Now())
	c := &p.counts
	granted, waited := c.waits()
	return ProviderTruth{
		Slots:              p.cfg.Slots,
		Received:           c.received.Load(),
		Completed:          c.completed.Load(),
		WorkAfterCancel:    c.workAfterCancel.Load(),
		CancelledQueued:    c.cancelledQueued.Load(),
		CancelledExecuting: c.cancelledRunning.Load(),
		InjectedErrors:     c.injected.Load(),
		RejectedQueueFull:  c.rejectedQueueFull.Load(),
		RejectedSafetyCap:  c.rejectedSafety.Load(),
		Abandoned:          c.abandonedOn.Load(),
		Granted:            granted,
		QueueWaited:        waited,
		InFlight:           st.Busy,
		QueueDepth:         st.Depth,
		PeakInFlight:       st.PeakBusy,
		PeakQueueDepth:     st.PeakDepth,
		PeakOpen:           st.PeakOpen,
		OldestQueued:       st.Oldest,
	}
}
