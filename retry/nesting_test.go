package retry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/retrytop/retrytop/retry"
)

// innermostMax is every owner's Policy.MaxAttempts in the nesting tests:
// the provider may see at most this many calls per user action.
const innermostMax = 3

// hedgeAfter is the hedge delay of the hedging tests: the delay on which
// the package's hedge clock waits for the test to fire it.
const hedgeAfter = retry.HedgeDelay

// provider always answers with a documented temporary failure and counts
// the calls that reach it.
type provider struct{ calls atomic.Int64 }

func (p *provider) call(context.Context) error {
	p.calls.Add(1)
	return retry.MarkTemporary(errors.New("503 from provider"), 0)
}

// check fails t if the provider saw more calls than the innermost owner's
// attempts.
func (p *provider) check(t *testing.T) {
	t.Helper()
	got := p.calls.Load()
	t.Logf("provider calls: %d", got)
	if got > innermostMax {
		t.Errorf("provider calls = %d, want at most %d (the innermost owner's attempts)", got, innermostMax)
	}
}

// series returns the series of family name whose labels include the given
// name/value pairs.
func series(t testing.TB, reg *prometheus.Registry, name string, pairs ...string) []*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []*dto.Metric
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabels(m, pairs) {
				out = append(out, m)
			}
		}
	}
	return out
}

// metric sums the matching series of family name (counters, gauges;
// histograms give their sample sum).
func metric(t testing.TB, reg *prometheus.Registry, name string, pairs ...string) float64 {
	t.Helper()
	var sum float64
	for _, m := range series(t, reg, name, pairs...) {
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return sum
}

// histCount is a histogram family's sample count over matching series.
func histCount(t testing.TB, reg *prometheus.Registry, name string, pairs ...string) uint64 {
	t.Helper()
	var n uint64
	for _, m := range series(t, reg, name, pairs...) {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == pairs[i] && lp.GetValue() == pairs[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// newOwner is an Owner on DefaultPolicy (3 attempts) with no backoff
// jitter, on clock, with metrics on reg; edit adjusts the Config.
func newOwner(t testing.TB, dep string, reg *prometheus.Registry, clock retry.Clock, edit func(*retry.Config)) *retry.Owner {
	t.Helper()
	cfg := retry.Config{
		Dependency: dep,
		Policy:     retry.DefaultPolicy(),
		Metrics:    retry.NewMetrics(prometheus.WrapRegistererWith(prometheus.Labels{"owner": dep}, reg)),
		Clock:      clock,
		Rand:       func(int64) int64 { return 0 },
	}
	if edit != nil {
		edit(&cfg)
	}
	o, err := retry.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// recreate is what real code often does with an error on the way up: a
// new error with the same text, marked temporary because it reads "503".
func recreate(err error) error {
	if err == nil {
		return nil
	}
	return retry.MarkTemporary(errors.New(err.Error()), 0)
}

// The nesting guard is structural: an inner owner's failure makes the
// outer attempt final however the outer attempt rewrites the error, so the
// provider never sees more than the innermost owner's attempts.
func TestNestingGuardIgnoresTheErrorChain(t *testing.T) {
	retryAll := func(c *retry.Config) { c.Classify = func(error) retry.Class { return retry.Temporary } }
	tests := []struct {
		name  string
		chain func(t *testing.T, reg *prometheus.Registry, clock retry.Clock, p *provider) error
	}{
		{"two levels, error re-created", func(t *testing.T, reg *prometheus.Registry, clock retry.Clock, p *provider) error {
			inner := newOwner(t, "provider", reg, clock, nil)
			outer := newOwner(t, "quote", reg, clock, nil)
			return outer.Do(context.Background(), retry.Critical, func(ctx context.Context) error {
				return recreate(inner.Do(ctx, retry.Critical, p.call))
			})
		}},
		{"three levels, error re-created", func(t *testing.T, reg *prometheus.Registry, clock retry.Clock, p *provider) error {
			inner := newOwner(t, "provider", reg, clock, nil)
			mid := newOwner(t, "quote", reg, clock, nil)
			top := newOwner(t, "checkout", reg, clock, nil)
			return top.Do(context.Background(), retry.Critical, func(ctx context.Context) error {
				return recreate(mid.Do(ctx, retry.Critical, func(ctx context.Context) error {
					return recreate(inner.Do(ctx, retry.Critical, p.call))
				}))
			})
		}},
		{"two levels, %v wrapping and a Classify that retries everything", func(t *testing.T, reg *prometheus.Registry, clock retry.Clock, p *provider) error {
			inner := newOwner(t, "provider", reg, clock, nil)
			outer := newOwner(t, "quote", reg, clock, retryAll)
			return outer.Do(context.Background(), retry.Critical, func(ctx context.Context) error {
				if err := inner.Do(ctx, retry.Critical, p.call); err != nil {
					return fmt.Errorf("quote: %v", err)
				}
				return nil
			})
		}},
		{"RoundTripper inside Do, error re-created", func(t *testing.T, reg *prometheus.Registry, clock retry.Clock, p *provider) error {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = p.call(r.Context())
				http.Error(w, "overloaded", http.StatusServiceUnavailable)
			}))
			t.Cleanup(srv.Close)
			inner := newOwner(t, "provider", reg, clock, nil)
			client := &http.Client{Transport: retry.NewRoundTripper(inner, nil)}
			outer := newOwner(t, "quote", reg, clock, nil)
			return outer.Do(context.Background(), retry.Critical, func(ctx context.Context) error {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				resp, err := client.Do(req)
				if err != nil {
					return recreate(err)
				}
				_ = resp.Body.Close()
				return nil
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			var p provider
			err := tt.chain(t, reg, retry.NewFakeClock(), &p)
			if err == nil {
				t.Fatal("Do succeeded against a provider that always fails")
			}
			p.check(t)
		})
	}
}

// A hedging outer owner does not send a hedge beside an attempt in which
// another owner's operation runs (and still retries): the hedge would start
// a second inner operation.
func TestHedgingOuterOwnerDoesNotDoubleTheInnerOperation(t *testing.T) {
	reg := prometheus.NewRegistry()
	clock := retry.NewHedgeClock()
	inner := newOwner(t, "provider", reg, clock, nil)
	outer := newOwner(t, "quote", reg, clock, func(c *retry.Config) {
		c.Policy.HedgeDelay = hedgeAfter
		c.Budget = filled(1000)
	})
	decided := make(chan bool, 1)
	retry.OnHedgeDecided(outer, func(sent bool) { decided <- sent })
	var p provider
	var gate sync.Once
	err := outer.Do(context.Background(), retry.Critical, func(ctx context.Context) error {
		return recreate(inner.Do(ctx, retry.Critical, func(ctx context.Context) error {
			gate.Do(func() {
				// The hedge timer fires while the inner owner is still
				// retrying; the inner owner goes on once it is decided.
				clock.Fire()
				if <-decided {
					t.Error("a hedge was sent beside an attempt running another owner's operation")
				}
			})
			return p.call(ctx)
		}))
	})
	if err == nil {
		t.Fatal("Do succeeded against a provider that always fails")
	}
	p.check(t)
	if got := metric(t, reg, "retry_hedges_total", "dependency", "quote"); got != 0 {
		t.Errorf("outer hedges = %v, want 0", got)
	}
}

// serve serves requests behind a DeadlineHandler: each request runs work,
// an operation of the service's own owner, and a failure is answered 503,
// as a service does when its dependency fails.
func serve(t *testing.T, work func(ctx context.Context) error) *httptest.Server {
	srv := httptest.NewServer(&retry.DeadlineHandler{Next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := work(r.Context()); err != nil {
			http.Error(w, "dependency failed", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})})
	t.Cleanup(srv.Close)
	return srv
}

// get GETs url with client (one operation of its owner), the error chain
// dropped as an HTTP hop drops it anyway.
func get(client *retry.HTTPClient, url string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		resp, err := client.Do(ctx, retry.Critical, req)
		if err != nil {
			return recreate(err)
		}
		_ = resp.Body.Close()
		return nil
	}
}

// Across an HTTP hop nothing of the inner error travels but the response:
// the serving side marks a failure its own owner gave up on, and the
// calling side's owner does not retry it.
func TestNestingGuardAcrossHTTPHops(t *testing.T) {
	for _, hops := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d hops", hops), func(t *testing.T) {
			reg := prometheus.NewRegistry()
			clock := retry.NewFakeClock()
			var p provider
			inner := newOwner(t, "provider", reg, clock, nil)
			srv := serve(t, func(ctx context.Context) error { return inner.Do(ctx, retry.Critical, p.call) })
			for i := 1; i < hops; i++ {
				mid := newOwner(t, fmt.Sprintf("hop%d", i), reg, clock, nil)
				srv = serve(t, get(retry.NewHTTPClient(mid, nil), srv.URL))
			}
			front := newOwner(t, "front", reg, clock, nil)
			err := get(retry.NewHTTPClient(front, nil), srv.URL)(context.Background())
			if err == nil {
				t.Fatal("the request succeeded against a provider that always fails")
			}
			p.check(t)
			if got := metric(t, reg, "retry_retries_total", "dependency", "front"); got != 0 {
				t.Errorf("front retries = %v, want 0: retries were exhausted below", got)
			}
		})
	}
}
