package sim

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// testProvider is a provider with a fixed phase and a step channel.
type testProvider struct {
	*provider
	reg   *prometheus.Registry
	steps chan string
	wg    sync.WaitGroup
}

func newTestProvider(t *testing.T, cfg ProviderConfig, ph Phase) *testProvider {
	t.Helper()
	reg := prometheus.NewRegistry()
	tp := &testProvider{reg: reg, steps: make(chan string, 100)}
	tp.provider = newProvider(cfg, nil, func() Phase { return ph }, 1, reg)
	tp.trace = func(s string) { tp.steps <- s }
	t.Cleanup(func() {
		tp.shutdown()
		tp.wg.Wait()
	})
	return tp
}

// serve runs one request in the background under ctx.
func (tp *testProvider) serve(ctx context.Context) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
	tp.wg.Add(1)
	go func() {
		defer tp.wg.Done()
		tp.ServeHTTP(rec, req)
	}()
	return rec
}

// expect waits for the next steps, in any order.
func (tp *testProvider) expect(t *testing.T, steps ...string) {
	t.Helper()
	want := map[string]int{}
	for _, s := range steps {
		want[s]++
	}
	for range steps {
		select {
		case s := <-tp.steps:
			if want[s] == 0 {
				t.Fatalf("unexpected step %q, still waiting for %v", s, want)
			}
			want[s]--
		case <-time.After(10 * time.Second): // a hang guard, not a synchronisation
			t.Fatalf("steps %v never came", want)
		}
	}
}

func TestProviderSlotsQueueAndCancel(t *testing.T) {
	tp := newTestProvider(t, ProviderConfig{Slots: 4}, Phase{ServiceTime: time.Hour})
	var cancels []context.CancelFunc
	for range 6 {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		tp.serve(ctx)
	}
	tp.expect(t, "granted", "granted", "granted", "granted", "queued", "queued")
	tr := tp.truth()
	if tr.Received != 6 || tr.InFlight != 4 || tr.QueueDepth != 2 {
		t.Fatalf("truth %+v, want 6 received, 4 in flight, 2 queued", tr)
	}

	// Which of the six got slots is up to the scheduler; find a queued one
	// by cancelling until a queued request leaves.
	cancels[5]()
	var step string
	select {
	case step = <-tp.steps:
	case <-time.After(10 * time.Second):
		t.Fatal("no step after a cancel")
	}
	switch step {
	case "cancelled-executing", "granted":
		// It was running: its slot went to a waiter. The two steps come
		// from two goroutines, in either order.
		if step == "granted" {
			tp.expect(t, "cancelled-executing")
		} else {
			tp.expect(t, "granted")
		}
		if tr := tp.truth(); tr.InFlight != 4 || tr.QueueDepth != 1 || tr.CancelledExecuting != 1 {
			t.Fatalf("after cancelling a running request: %+v", tr)
		}
	default:
		if step != "cancelled-queued" {
			t.Fatalf("step %q after a cancel", step)
		}
		if tr := tp.truth(); tr.InFlight != 4 || tr.QueueDepth != 1 || tr.CancelledQueued != 1 {
			t.Fatalf("after cancelling a queued request: %+v", tr)
		}
	}

	fams := families(t, tp.reg)
	for name, want := range map[string]float64{
		"sim_provider_requests_received_total": 6,
		"sim_provider_in_flight":               4,
		"sim_provider_queue_depth":             1,
		"sim_provider_slots":                   4,
		"sim_provider_in_flight_peak":          4,
		"sim_provider_queue_depth_peak":        2,
		"sim_provider_completed_total":         0,
	} {
		if got, _ := value(fams, name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got, _ := value(fams, "sim_provider_cancelled_total", nil); got != 1 {
		t.Errorf("sim_provider_cancelled_total = %v, want 1", got)
	}
	for _, c := range cancels {
		c()
	}
	tp.wg.Wait() // every handler has returned
	tr = tp.truth()
	if tr.InFlight != 0 || tr.QueueDepth != 0 || tr.Completed != 0 || tr.WorkAfterCancel != 0 ||
		tr.CancelledQueued+tr.CancelledExecuting != 6 {
		t.Fatalf("after cancelling everything: %+v", tr)
	}
}

// In virtual time (synctest): both requests arrive at the same instant and
// the second waits exactly the first's millisecond of work, however busy
// the machine (on real time the second could be scheduled late and wait
// less).
func TestProviderIgnoreCancel(t *testing.T) { synctest.Test(t, testProviderIgnoreCancel) }

func testProviderIgnoreCancel(t *testing.T) {
	// The caller is gone before the request is even served; the provider
	// does the work anyway and counts it.
	tp := newTestProvider(t, ProviderConfig{Slots: 1, IgnoreCancel: true}, Phase{ServiceTime: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tp.serve(ctx)
	tp.serve(ctx)
	tp.expect(t, "granted", "queued", "done", "granted", "done")
	tr := tp.truth()
	if tr.Completed != 2 || tr.WorkAfterCancel != 2 || tr.CancelledQueued+tr.CancelledExecuting != 0 {
		t.Fatalf("truth %+v, want 2 completed after cancel", tr)
	}
	fams := families(t, tp.reg)
	if got, _ := value(fams, "sim_provider_work_after_cancel_total", nil); got != 2 {
		t.Errorf("sim_provider_work_after_cancel_total = %v, want 2", got)
	}
	if got, _ := value(fams, "sim_provider_service_time_seconds", nil); got != 2 {
		t.Errorf("service time histogram count = %v, want 2", got)
	}
	if got, _ := value(fams, "sim_provider_ignore_cancel", nil); got != 1 {
		t.Errorf("sim_provider_ignore_cancel = %v, want 1", got)
	}
	// Nobody was there to answer: no response at all.
	if got, _ := value(fams, "sim_provider_responses_total", nil); got != 0 {
		t.Errorf("sim_provider_responses_total = %v, want 0", got)
	}
	// Both got a slot, the second after the first's millisecond of work:
	// the truth's exact total wait is the histogram's sum.
	if tr.Granted != 2 || tr.QueueWaited != time.Millisecond {
		t.Errorf("truth granted %d, waited %v; want 2, 1ms", tr.Granted, tr.QueueWaited)
	}
	qw := fams["sim_provider_queue_wait_seconds"].GetMetric()[0].GetHistogram()
	if qw.GetSampleCount() != 2 || math.Abs(qw.GetSampleSum()-tr.QueueWaited.Seconds()) > 1e-9 {
		t.Errorf("queue wait histogram count %d sum %v, truth 2 and %v", qw.GetSampleCount(), qw.GetSampleSum(), tr.QueueWaited)
	}
}

func TestProviderBoundedQueue(t *testing.T) {
	tp := newTestProvider(t, ProviderConfig{Slots: 1, MaxQueue: 1, RetryAfter: 1500 * time.Millisecond}, Phase{ServiceTime: time.Hour})
	tp.serve(context.Background())
	tp.serve(context.Background())
	tp.expect(t, "granted", "queued")
	rec := httptest.NewRecorder()
	tp.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "2" || rec.Header().Get(HeaderResult) != "provider_overloaded" {
		t.Fatalf("full queue answered %d, Retry-After %q, %s %q", rec.Code, rec.Header().Get("Retry-After"),
			HeaderResult, rec.Header().Get(HeaderResult))
	}
	if tr := tp.truth(); tr.RejectedQueueFull != 1 || tr.Received != 3 {
		t.Fatalf("truth %+v", tr)
	}
	if got, _ := value(families(t, tp.reg), "sim_provider_rejected_total", map[string]string{"reason": "queue_full"}); got != 1 {
		t.Errorf("rejected{queue_full} = %v, want 1", got)
	}
	if got, _ := value(families(t, tp.reg), "sim_provider_responses_total", map[string]string{"code": "503"}); got != 1 {
		t.Errorf("responses{503} = %v, want 1", got)
	}
}

func TestProviderServiceAndErrors(t *testing.T) {
	ok := newTestProvider(t, ProviderConfig{}, Phase{ServiceTime: 0})
	rec := httptest.NewRecorder()
	ok.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("healthy provider answered %d", rec.Code)
	}
	bad := newTestProvider(t, ProviderConfig{}, Phase{ErrorFraction: 1})
	rec = httptest.NewRecorder()
	bad.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("injected error answered %d with Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	if tr := bad.truth(); tr.InjectedErrors != 1 || tr.Completed != 0 {
		t.Fatalf("truth %+v", tr)
	}
	for _, c := range []struct {
		tp         *testProvider
		name       string
		n200, n503 float64
	}{{ok, "ok", 1, 0}, {bad, "bad", 0, 1}} {
		fams := families(t, c.tp.reg)
		r200, _ := value(fams, "sim_provider_responses_total", map[string]string{"code": "200"})
		r503, _ := value(fams, "sim_provider_responses_total", map[string]string{"code": "503"})
		if r200 != c.n200 || r503 != c.n503 {
			t.Errorf("%s provider: responses 200 %v, 503 %v; want %v, %v", c.name, r200, r503, c.n200, c.n503)
		}
	}
}

func TestLatencyHist(t *testing.T) {
	h := newLatencyHist()
	if l := h.summary(); l.Count != 0 || l.P99 != 0 {
		t.Fatalf("empty summary %+v", l)
	}
	for i := 1; i <= 100; i++ {
		h.observe(time.Duration(i) * time.Millisecond)
	}
	h.observe(time.Minute) // beyond the buckets
	l := h.summary()
	// Quantiles are the upper edge of the 1 ms bucket holding the ranked
	// observation: 51ms lies in [51ms, 52ms).
	if l.Count != 101 || l.P50 != 52*time.Millisecond || l.P90 != 92*time.Millisecond ||
		l.P99 != 101*time.Millisecond || l.Max != time.Minute {
		t.Errorf("summary %+v", l)
	}
}

// The service time runs on the provider's clock: a fake clock alone
// finishes the work, and the service-time histogram observes exactly the
// time the clock moved.
func TestProviderServiceTimeOnItsClock(t *testing.T) {
	clk := newFakeClock(time.Unix(1000, 0))
	reg := prometheus.NewRegistry()
	const service = 50 * time.Millisecond
	p := newProvider(ProviderConfig{Slots: 1}, clk, func() Phase { return Phase{ServiceTime: service} }, 1, reg)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	}()
	select {
	case d := <-clk.created:
		if d != service {
			t.Fatalf("provider set a %v timer, want its service time %v", d, service)
		}
	case <-time.After(10 * time.Second): // a hang guard, not a synchronisation
		t.Fatal("the provider set no timer on its clock")
	}
	clk.Advance(service)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the work did not finish when the fake clock passed its service time")
	}
	if rec.Code != http.StatusOK {
		t.Errorf("status %d", rec.Code)
	}
	mf := families(t, reg)["sim_provider_service_time_seconds"]
	if h := mf.GetMetric()[0].GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != service.Seconds() {
		t.Errorf("service time histogram: count %d, sum %v; want 1, %v", h.GetSampleCount(), h.GetSampleSum(), service.Seconds())
	}
}
