package promapi

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// The live smoke test's numbers: the target counts liveRate originals
// and twice as many attempts a second; the window is liveWindow long and
// must hold snapshots spanning at least liveMinSpan.
const (
	liveRate    = 40.0
	liveWindow  = 30 * time.Second
	liveMinSpan = 25 * time.Second
	// liveTolerance is the relative difference allowed from liveRate. A
	// sample is stamped when Prometheus' scrape begins and its value is
	// counted when the target answers, before the scrape timeout
	// (scrapeInterval): the counts at the span's two ends are each read
	// 0..scrapeInterval after their stamps, so the rate over a span of at
	// least liveMinSpan is off by less than scrapeInterval/liveMinSpan.
	liveTolerance = float64(scrapeInterval) / float64(liveMinSpan)
)

// TestLivePrometheusSmoke: a real Prometheus scrapes a live target every
// second and a Source reads it back: originals at liveRate within
// liveTolerance, and amplification exactly 2 (both counters are read in
// the same answer). The exact agreement on known data is
// TestBackfilledAgreement's; this checks the live path end to end.
func TestLivePrometheusSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("Prometheus integration test skipped in -short mode")
	}
	// A bound on a hang, not on a number.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := liveRate * time.Since(start).Seconds()
		fmt.Fprintf(w, "# TYPE %[1]s counter\n%[1]s{dependency=\"db\",priority=\"critical\"} %[3]g\n"+
			"# TYPE %[2]s counter\n%[2]s{dependency=\"db\",outcome=\"success\"} %[4]g\n", model.MetricOriginals, model.MetricAttempts, n, 2*n)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	base, cl := startScraping(t, ctx, "live", u.Host, "/")
	// Enough scrapes stored for the window, however long they took.
	samples := int(liveWindow/scrapeInterval) + 2
	waitFor(t, ctx, cl, fmt.Sprintf(`count_over_time(%s{job="live"}[10m])`, model.MetricOriginals), func(v float64) bool { return v >= float64(samples) })
	end := time.UnixMilli(newestUp(rawSamples(t, ctx, cl, `up{job="live"}`)))

	src, err := New(Options{Client: ClientConfig{URL: base, Timeout: time.Minute}, Step: time.Second, Delay: -1,
		Clock: func() time.Time { return end.Add(evalPhase) }, Backfill: 2 * liveWindow})
	if err != nil {
		t.Fatal(err)
	}
	if st := src.Refresh(ctx); !st[0].Up || st[0].LastError != "" {
		t.Fatalf("server status %+v", st[0])
	}
	from, to := end.Add(-liveWindow).UnixMilli(), end.UnixMilli()
	var in []int64
	for _, ts := range src.Store().Times("live") {
		if ts >= from && ts <= to {
			in = append(in, ts)
		}
	}
	if len(in) < 2 || time.Duration(in[len(in)-1]-in[0])*time.Millisecond < liveMinSpan {
		t.Fatalf("the Source's snapshots in the window %v: fewer than two, or spanning less than %v", in, liveMinSpan)
	}
	sig := analysis.SignalsFor(src.Store(), "live", "db", from, to)
	if v := sig.OriginalsPerS; !v.OK() || math.Abs(v.V()-liveRate) > liveTolerance*liveRate {
		t.Errorf("originals %v/s, want %v/s within %.1f%%", v, liveRate, 100*liveTolerance)
	}
	// Both counters come from one answer, attempts exactly twice
	// originals: only rounding differs.
	if v := sig.Amplification; !v.OK() || math.Abs(v.V()-2) > 1e-9 {
		t.Errorf("amplification %v, want 2", v)
	}
}
