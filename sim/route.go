package sim

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/retrytop/retrytop/retry"
)

// Route options (Options.NonIdempotent, Options.Breaker): the client
// sends a non-idempotent request its owner is told to retry anyway, or
// calls through a circuit breaker that is slow to close. Each gives
// retrytop a finding the control run must not show (UNSAFE_RETRIES,
// BREAKER_STUCK_OPEN; docs/scenarios.md).

// BreakerConfig is a circuit breaker in front of a hop's retry owner:
// it counts operations, not attempts. Closed, it opens after Failures
// failed operations in a row. Open, it refuses every operation for
// OpenFor, then turns half-open: one probe operation every ProbeEvery
// goes through, the rest are refused; CloseAfter successful probes in a
// row close it, a failed one opens it again.
type BreakerConfig struct {
	Failures   int
	OpenFor    time.Duration
	ProbeEvery time.Duration
	CloseAfter int
}

// StickyBreaker is the breaker Options.Breaker gives the client: it
// opens after 5 failed operations and waits 5 s, but then needs 45
// successful probes at one a second to close: it keeps refusing calls
// for 45 s after its provider answers again.
func StickyBreaker() *BreakerConfig {
	return &BreakerConfig{Failures: 5, OpenFor: 5 * time.Second, ProbeEvery: time.Second, CloseAfter: 45}
}

// ResultCircuitOpen is the HeaderResult of an operation the breaker
// refused.
const ResultCircuitOpen = "circuit_open"

var errCircuitOpen = errors.New("circuit breaker open")

// withRouteOptions applies opts' route options to the client: the layer
// named NameClient, else the last visible layer.
func withRouteOptions(sc Scenario, opts Options) Scenario {
	if !opts.NonIdempotent && !opts.Breaker {
		return sc
	}
	i := -1
	for j, l := range sc.Layers {
		switch {
		case l.Name == NameClient:
			i = j
		case !l.Hidden && (i < 0 || sc.Layers[i].Name != NameClient):
			i = j
		}
	}
	if i < 0 {
		return sc
	}
	pol := sc.Layers[i].Policy
	if opts.NonIdempotent {
		pol.Method = http.MethodPost
	}
	if opts.Breaker {
		pol.Breaker = StickyBreaker()
	}
	sc.Layers[i].Policy = pol
	return sc
}

// routeRegisterer is where a hop's owner registers its metrics: with a
// method label when the hop's requests have a method other than GET, so
// that its originals and attempts say which requests they count.
func routeRegisterer(reg prometheus.Registerer, pol HopPolicy) prometheus.Registerer {
	if reg == nil || pol.Method == "" {
		return reg
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{"method": pol.Method}, reg)
}

// httpOptions are the hop's retry.HTTPClient options for its route: a
// non-idempotent method is retried anyway (the unsafe configuration the
// option shows; the library refuses it by default).
func (pol HopPolicy) httpOptions() []retry.HTTPOption {
	opts := []retry.HTTPOption{retry.WithDeadlinePropagation()}
	if pol.Method != "" && pol.Method != http.MethodGet {
		opts = append(opts, retry.WithNonIdempotentRetries())
	}
	return opts
}

// method is the hop's request method.
func (pol HopPolicy) method() string {
	if pol.Method == "" {
		return http.MethodGet
	}
	return pol.Method
}

// do runs one operation through the hop's breaker, if any, and its
// retry owner.
func (h *hop) do(ctx context.Context) callResult {
	b := h.breaker
	if b == nil {
		return h.doOwner(ctx)
	}
	probe, ok := b.allow(time.Now())
	if !ok {
		return callResult{err: errCircuitOpen, result: ResultCircuitOpen}
	}
	res := h.doOwner(ctx)
	if res.result != retry.ResultCancelled.String() {
		b.done(time.Now(), probe, res.err == nil)
	}
	return res
}

// Breaker states, as retry_breaker_state exports them.
const (
	breakerClosed   = 0
	breakerHalfOpen = 1
	breakerOpen     = 2
)

// breaker is a BreakerConfig's state. The time package's clock drives it,
// like the retry owners' timeouts (virtual inside a synctest bubble).
type breaker struct {
	cfg BreakerConfig

	mu        sync.Mutex
	state     int
	fails     int // failed operations in a row, closed
	openedAt  time.Time
	lastProbe time.Time // half-open
	probing   bool
	successes int // successful probes in a row

	refused atomic.Int64
}

// newBreaker makes a hop's breaker (nil without one) and registers its
// state as retry_breaker_state and its refusals as sim ground truth.
func newBreaker(cfg *BreakerConfig, dep string, reg prometheus.Registerer) *breaker {
	if cfg == nil {
		return nil
	}
	b := &breaker{cfg: *cfg}
	if reg != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "retry_breaker_state",
			Help:        "Circuit breaker state: 0 closed, 1 half-open, 2 open.",
			ConstLabels: prometheus.Labels{"dependency": dep},
		}, func() float64 { return float64(b.current()) }))
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "sim_breaker_rejected_total",
			Help:        "Operations the circuit breaker refused (sim ground truth).",
			ConstLabels: prometheus.Labels{"dependency": dep},
		}, func() float64 { return float64(b.refused.Load()) }))
	}
	return b
}

func (b *breaker) current() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// allow says whether an operation may go through now, and whether it is
// a half-open probe.
func (b *breaker) allow(now time.Time) (probe, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == breakerOpen && now.Sub(b.openedAt) >= b.cfg.OpenFor {
		b.state, b.lastProbe, b.successes = breakerHalfOpen, time.Time{}, 0
	}
	switch b.state {
	case breakerClosed:
		return false, true
	case breakerHalfOpen:
		if !b.probing && (b.lastProbe.IsZero() || now.Sub(b.lastProbe) >= b.cfg.ProbeEvery) {
			b.probing, b.lastProbe = true, now
			return true, true
		}
	}
	b.refused.Add(1)
	return false, false
}

// done records how an admitted operation ended.
func (b *breaker) done(now time.Time, probe, success bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case probe:
		b.probing = false
		if !success {
			b.state, b.openedAt = breakerOpen, now
			return
		}
		if b.successes++; b.successes >= b.cfg.CloseAfter {
			b.state, b.fails = breakerClosed, 0
		}
	case b.state != breakerClosed:
		// Admitted before the breaker opened: says nothing now.
	case success:
		b.fails = 0
	default:
		if b.fails++; b.fails >= b.cfg.Failures {
			b.state, b.openedAt = breakerOpen, now
		}
	}
}
