package retry

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// fakeClock never sleeps: Sleep advances Now. It starts at the real time so
// that attempt contexts' runtime timers lie in the future (see Clock).
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	sleeps  []time.Duration
	onSleep func(d time.Duration) // runs before the clock advances
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	hook := c.onSleep
	c.mu.Unlock()
	if hook != nil {
		hook(d)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Advance(d)
	return nil
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// deadlineCtx reports a deadline on the fake clock's timeline but never
// expires by itself, so tests do not depend on real time passing.
type deadlineCtx struct {
	context.Context
	d time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.d, true }

func withFakeDeadline(parent context.Context, d time.Time) context.Context {
	return deadlineCtx{Context: parent, d: d}
}

// maxRand makes full jitter deterministic at its ceiling.
func maxRand(n int64) int64 { return n - 1 }

// zeroRand makes full jitter deterministic at zero.
func zeroRand(int64) int64 { return 0 }

type harness struct {
	owner *Owner
	clock *fakeClock
	reg   *prometheus.Registry
	m     *Metrics
}

// newHarness builds an Owner on a fake clock, a fresh registry and
// DefaultPolicy; edit adjusts the Config before New.
func newHarness(t testing.TB, edit func(*Config)) *harness {
	t.Helper()
	h := &harness{clock: newFakeClock(), reg: prometheus.NewRegistry()}
	h.m = NewMetrics(h.reg)
	cfg := Config{
		Dependency: "quote",
		Policy:     DefaultPolicy(),
		Metrics:    h.m,
		Clock:      h.clock,
		Rand:       maxRand,
	}
	if edit != nil {
		edit(&cfg)
	}
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.owner = o
	return h
}

func (h *harness) counter(t testing.TB, vec *prometheus.CounterVec, labels ...string) float64 {
	t.Helper()
	return testutil.ToFloat64(vec.WithLabelValues(labels...))
}

func testutilGauge(vec *prometheus.GaugeVec, labels ...string) float64 {
	return testutil.ToFloat64(vec.WithLabelValues(labels...))
}

func (h *harness) result(t testing.TB, pri Priority, r Result) float64 {
	return h.counter(t, h.m.results, "quote", pri.String(), r.String())
}

func (h *harness) attempts(t testing.TB, outcome string) float64 {
	return h.counter(t, h.m.attempts, "quote", outcome)
}

// histCount returns a histogram series' sample count.
func histCount(t testing.TB, vec *prometheus.HistogramVec, labels ...string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := vec.WithLabelValues(labels...).(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// step is one scripted attempt: it takes d on the fake clock and returns err.
type step struct {
	d   time.Duration
	err error
}

// script returns an attempt func playing steps in order (the last one
// repeats) and records each attempt's ctx deadline.
type script struct {
	clock     *fakeClock
	steps     []step
	calls     int
	deadlines []time.Time // zero Time when the attempt had none
}

func (s *script) attempt(ctx context.Context) error {
	dl, _ := ctx.Deadline()
	s.deadlines = append(s.deadlines, dl)
	st := s.steps[min(s.calls, len(s.steps)-1)]
	s.calls++
	s.clock.Advance(st.d)
	return st.err
}

var errTemp = MarkTemporary(errors.New("provider overloaded"), 0)

// filledBudget is a default budget that has seen originals originals, so
// that it pays for originals/10 retries.
func filledBudget(originals int) *Budget {
	b := NewBudget(BudgetConfig{})
	for range originals {
		b.RecordOriginal()
	}
	return b
}
