package sim

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcome is what the end user saw for one original.
type Outcome int

// End-user outcomes, the sim_loadgen_outcomes_total "outcome" label values.
const (
	// OutcomeSuccess: an answer within the user deadline.
	OutcomeSuccess Outcome = iota
	// OutcomeLate: an answer, but after the user deadline (only possible
	// when the browser layer itself waits longer than the user, as in the
	// chain scenario); not a success.
	OutcomeLate
	// OutcomeTimeout: no answer within the deadline (deadline exhausted,
	// attempts timed out).
	OutcomeTimeout
	// OutcomeRejected: a controlled, local refusal somewhere on the path
	// (admission limit, retry budget): the fast failure.
	OutcomeRejected
	// OutcomeError: the provider's errors after the last allowed attempt,
	// or anything else.
	OutcomeError
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"success", "late", "timeout", "rejected", "error"}

func (o Outcome) String() string {
	if o >= 0 && o < numOutcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// GeneratorConfig configures the open-loop load generator.
type GeneratorConfig struct {
	// Rate is the arrival rate of originals per second (default 50).
	Rate float64
	// UserDeadline is how long the end user waits; only answers within it
	// count as successes (default 1s).
	UserDeadline time.Duration
	// MaxInFlight caps originals in progress at once (default 10,000).
	// Arrivals beyond it are dropped and counted, never queued.
	MaxInFlight int
}

func (c GeneratorConfig) withDefaults() GeneratorConfig {
	if c.Rate <= 0 {
		c.Rate = 50
	}
	if c.UserDeadline <= 0 {
		c.UserDeadline = time.Second
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 10000
	}
	return c
}

// sendFunc performs one original and says what the user saw. k is the
// original's sequence number.
type sendFunc func(ctx context.Context, k int64) Outcome

// generator sends originals on an Arrivals schedule, never waiting for
// earlier ones (open loop).
type generator struct {
	cfg   GeneratorConfig
	clock Clock
	arr   Arrivals
	limit int64 // originals to send; <0: until ctx is done
	// hold: keep sending after limit (the per-second bins stop there).
	hold bool
	send sendFunc

	sent, dropped  atomic.Int64
	inFlight, peak atomic.Int64
	outcomes       [numOutcomes]atomic.Int64
	lagNs, maxLag  atomic.Int64
	lat            [numOutcomes]*latencyHist
	wg             sync.WaitGroup

	// bins count originals and successes per second of due time, for the
	// recovery time (nil when the run has no fixed end); phaseBins per
	// phase of due time (nil without phaseOf).
	binMu     sync.Mutex
	bins      []bin
	goodput   []int64 // successes by the second they ended (recovery)
	phaseOf   func(due time.Duration) int
	phaseBins []bin

	m struct {
		sent, dropped prometheus.Counter
		outcomes      [numOutcomes]prometheus.Counter
		latency       [numOutcomes]prometheus.Observer
	}
}

type bin struct{ sent, success int64 }

// binIndex is an original's place in a bin slice, -1 when outside it.
func binIndex(i, n int) int {
	if i < 0 || i >= n {
		return -1
	}
	return i
}

const maxBins = 24 * 3600

func newGenerator(cfg GeneratorConfig, clock Clock, arr Arrivals, limit int64, send sendFunc, reg prometheus.Registerer) *generator {
	g := &generator{cfg: cfg.withDefaults(), clock: clockOr(clock), arr: arr, limit: limit, send: send}
	g.arr.Rate = g.cfg.Rate
	for i := range g.lat {
		g.lat[i] = newLatencyHist()
	}
	if limit >= 0 {
		span := g.arr.At(max(limit-1, 0)).Sub(g.arr.Start)
		g.bins = make([]bin, min(int(span/time.Second)+1, maxBins))
		g.goodput = make([]int64, len(g.bins)+int(g.cfg.UserDeadline/time.Second)+2)
	}
	if reg != nil {
		g.register(reg)
	}
	return g
}

func (g *generator) register(reg prometheus.Registerer) {
	g.m.sent = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sim_loadgen_originals_total", Help: "Originals the open-loop generator sent (user actions)."})
	g.m.dropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sim_loadgen_dropped_total", Help: "Arrivals not sent because MaxInFlight originals were already in progress."})
	outcomes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sim_loadgen_outcomes_total", Help: "End-user outcome of each finished original."}, []string{"outcome"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sim_loadgen_latency_seconds",
		Help:    "End-user latency of finished originals, by outcome.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2.5, 5, 10},
	}, []string{"outcome"})
	for o := range numOutcomes {
		g.m.outcomes[o] = outcomes.WithLabelValues(o.String())
		g.m.latency[o] = latency.WithLabelValues(o.String())
	}
	reg.MustRegister(g.m.sent, g.m.dropped, outcomes, latency)
	gf := func(name, help string, fn func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
	}
	gf("sim_loadgen_in_flight", "Originals in progress.", func() float64 { return float64(g.inFlight.Load()) })
	gf("sim_loadgen_arrival_rate", "Configured arrival rate, originals per second.", func() float64 { return g.cfg.Rate })
	gf("sim_loadgen_user_deadline_seconds", "How long the end user waits for an answer.", func() float64 { return g.cfg.UserDeadline.Seconds() })
	gf("sim_loadgen_schedule_lag_seconds", "How late the most recent original was sent relative to its schedule.",
		func() float64 { return time.Duration(g.lagNs.Load()).Seconds() })
	gf("sim_loadgen_schedule_lag_max_seconds", "Largest schedule lag since start.",
		func() float64 { return time.Duration(g.maxLag.Load()).Seconds() })
}

// run sends originals until the limit is reached or ctx is done, then
// waits for those in progress to finish. Originals run under ctx.
func (g *generator) run(ctx context.Context) {
	defer g.wg.Wait()
	var k int64
	for ctx.Err() == nil {
		now := g.clock.Now()
		due := g.arr.Due(now)
		if g.limit >= 0 && !g.hold {
			due = min(due, g.limit)
		}
		for ; k < due; k++ {
			g.dispatch(ctx, k, now)
		}
		if g.limit >= 0 && !g.hold && k >= g.limit {
			return
		}
		t := g.clock.NewTimer(g.arr.At(k).Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// dispatch starts original k at now, or drops it when MaxInFlight are
// already in progress.
func (g *generator) dispatch(ctx context.Context, k int64, now time.Time) {
	lag := g.arr.Lag(k, now)
	g.lagNs.Store(int64(lag))
	if int64(lag) > g.maxLag.Load() {
		g.maxLag.Store(int64(lag)) // only this goroutine writes
	}
	if g.inFlight.Load() >= int64(g.cfg.MaxInFlight) {
		g.dropped.Add(1)
		if g.m.dropped != nil {
			g.m.dropped.Inc()
		}
		return
	}
	n := g.inFlight.Add(1)
	if n > g.peak.Load() {
		g.peak.Store(n) // only this goroutine raises the peak
	}
	g.sent.Add(1)
	if g.m.sent != nil {
		g.m.sent.Inc()
	}
	due := g.arr.At(k).Sub(g.arr.Start)
	b, pb := binIndex(int(due/time.Second), len(g.bins)), -1
	if g.phaseOf != nil {
		pb = binIndex(g.phaseOf(due), len(g.phaseBins))
	}
	g.binMu.Lock()
	if b >= 0 {
		g.bins[b].sent++
	}
	if pb >= 0 {
		g.phaseBins[pb].sent++
	}
	g.binMu.Unlock()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		o := g.send(ctx, k)
		if o < 0 || o >= numOutcomes {
			o = OutcomeError
		}
		d := g.clock.Now().Sub(now)
		if o == OutcomeSuccess && d > g.cfg.UserDeadline {
			o = OutcomeLate
		}
		g.lat[o].observe(d)
		g.outcomes[o].Add(1)
		if g.m.outcomes[o] != nil {
			g.m.outcomes[o].Inc()
			g.m.latency[o].Observe(d.Seconds())
		}
		if o == OutcomeSuccess {
			g.binMu.Lock()
			if b >= 0 {
				g.bins[b].success++
			}
			if e := binIndex(int(g.clock.Now().Sub(g.arr.Start)/time.Second), len(g.goodput)); e >= 0 {
				g.goodput[e]++
			}
			if pb >= 0 {
				g.phaseBins[pb].success++
			}
			g.binMu.Unlock()
		}
		g.inFlight.Add(-1)
	}()
}

// UserTruth is what the end users experienced, counted by the generator.
type UserTruth struct {
	Rate         float64
	UserDeadline time.Duration
	// Sent originals; Dropped arrivals were never sent (MaxInFlight).
	Sent, Dropped int64
	// Outcomes of finished originals.
	Success, Late, Timeout, Rejected, Error int64
	InFlight, PeakInFlight                  int64
	// Lag is the schedule lag of the latest original, MaxLag the largest.
	Lag, MaxLag time.Duration
	// Latencies by outcome; FastFailure is the rejections' latency.
	SuccessLatency, FastFailureLatency, TimeoutLatency, ErrorLatency Latency
}

func (g *generator) truth() UserTruth {
	return UserTruth{
		Rate:               g.cfg.Rate,
		UserDeadline:       g.cfg.UserDeadline,
		Sent:               g.sent.Load(),
		Dropped:            g.dropped.Load(),
		Success:            g.outcomes[OutcomeSuccess].Load(),
		Late:               g.outcomes[OutcomeLate].Load(),
		Timeout:            g.outcomes[OutcomeTimeout].Load(),
		Rejected:           g.outcomes[OutcomeRejected].Load(),
		Error:              g.outcomes[OutcomeError].Load(),
		InFlight:           g.inFlight.Load(),
		PeakInFlight:       g.peak.Load(),
		Lag:                time.Duration(g.lagNs.Load()),
		MaxLag:             time.Duration(g.maxLag.Load()),
		SuccessLatency:     g.lat[OutcomeSuccess].summary(),
		FastFailureLatency: g.lat[OutcomeRejected].summary(),
		TimeoutLatency:     g.lat[OutcomeTimeout].summary(),
		ErrorLatency:       g.lat[OutcomeError].summary(),
	}
}

// binsCopy returns the originals and successes by due time: per second,
// and per phase.
func (g *generator) binsCopy() (perSecond, perPhase []bin) {
	g.binMu.Lock()
	defer g.binMu.Unlock()
	return append([]bin(nil), g.bins...), append([]bin(nil), g.phaseBins...)
}

// goodputCopy returns the successes by the second they ended.
func (g *generator) goodputCopy() []int64 {
	g.binMu.Lock()
	defer g.binMu.Unlock()
	return append([]int64(nil), g.goodput...)
}
