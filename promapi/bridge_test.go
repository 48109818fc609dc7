package promapi

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// perScrape is what flakyTarget's counters rise by at every request.
const perScrape = 40

// flakyTarget counts perScrape originals and successful attempts at
// every request, and answers 503 to requests failFrom..failTo (counting
// from 1): a service whose scrapes fail for a while in an incident, its
// counters still rising. What it counted is in its values; nothing
// depends on the clock.
func flakyTarget(t *testing.T, failFrom, failTo int) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		if i >= failFrom && i <= failTo {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		v := perScrape * i
		fmt.Fprintf(w, "# TYPE %[1]s counter\n%[1]s{dependency=\"db\",priority=\"critical\"} %[3]d\n"+
			"# TYPE %[2]s counter\n%[2]s{dependency=\"db\",outcome=\"success\"} %[3]d\n", model.MetricOriginals, model.MetricAttempts, v)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestFailedScrapesAreBridged: a target whose scrapes 6-8 fail while its
// counters rise. Prometheus marks the target's series stale at each
// failed scrape, so "S offset step" right after the gap is absent; the
// increase over the gap must still be counted (CounterExpr reaches back
// over dialect.CounterBridge), as a scraper counts it: the Source's rate
// over its span equals the counter's increase between the samples
// Prometheus stored at the span's ends, over their time. Without the
// bridge the gap's increase is lost (measured: 24/s against 40/s).
func TestFailedScrapesAreBridged(t *testing.T) {
	if testing.Short() {
		t.Skip("Prometheus integration test skipped in -short mode")
	}
	// A bound on a hang, not on a number: the test waits for Prometheus'
	// own scrapes, however slow.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const failFrom, failTo, after = 6, 8, 14
	srv := flakyTarget(t, failFrom, failTo)
	u, _ := url.Parse(srv.URL)
	base, cl := startScraping(t, ctx, "flaky", u.Host, "/")
	waitFor(t, ctx, cl, `max(`+model.MetricOriginals+`{job="flaky"})`, func(v float64) bool { return v >= perScrape*after })

	// What Prometheus stored: the counter's samples and up's (0 at the
	// failed scrapes), stamp -> value.
	counter := rawSamples(t, ctx, cl, model.MetricOriginals+`{job="flaky"}`)
	up := rawSamples(t, ctx, cl, `up{job="flaky"}`)
	end := newestUp(up)

	src, err := New(Options{Client: ClientConfig{URL: base, Timeout: time.Minute}, Step: time.Second, Delay: -1,
		Clock: func() time.Time { return time.UnixMilli(end).Add(evalPhase) }, Backfill: 4 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if st := src.Refresh(ctx); !st[0].Up || st[0].LastError != "" {
		t.Fatalf("server status %+v", st[0])
	}
	times := src.Store().Times("flaky")
	if len(times) < 2 {
		t.Fatalf("the Source stored %d snapshots", len(times))
	}
	first, last := times[0], times[len(times)-1]
	// The span holds the failed scrapes (up 0), and Prometheus stored
	// the counts of the requests on both sides of them inside it and none
	// of theirs.
	failed := 0
	for ts, v := range up {
		if v == 0 && ts > first && ts < last {
			failed++
		}
	}
	stored := map[float64]bool{}
	for ts, v := range counter {
		stored[v] = ts >= first && ts <= last
	}
	vFirst, ok1 := counter[first]
	vLast, ok2 := counter[last]
	if failed == 0 || !stored[perScrape*(failFrom-1)] || !stored[perScrape*(failTo+1)] || stored[perScrape*failFrom] || !ok1 || !ok2 {
		t.Fatalf("span %d..%d: %d failed scrapes inside, or not the counts around them, or no samples at its ends (counter %v, up %v)",
			first, last, failed, counter, up)
	}
	want := (vLast - vFirst) / (float64(last-first) / 1000)
	got := analysis.SignalsFor(src.Store(), "flaky", "db", first, last).OriginalsPerS
	// Both are whole counts over the same stamps: only the rounding of a
	// division differs.
	if !got.OK() || math.Abs(got.V()-want) > 1e-9*want {
		t.Errorf("originals over %d failed scrapes: %v/s, want %.6g/s (%.0f counted in %d ms)\n%s", failed, got, want, vLast-vFirst, last-first,
			bridgeTrace(src.Store(), counter, up, end))
	}
}

// bridgeTrace lists, by ms before end, what Prometheus stored (the
// counter's samples, up) beside the Source's originals counter, for a
// failure message.
func bridgeTrace(st *model.Store, counter, up map[int64]float64, end int64) string {
	stored := map[int64]float64{}
	for _, s := range st.Select("flaky", model.MetricOriginals, nil) {
		for _, p := range s.Points {
			stored[p.T] += p.V
		}
	}
	var stamps []int64
	for ts := range up {
		stamps = append(stamps, ts)
	}
	for ts := range stored {
		if _, ok := up[ts]; !ok {
			stamps = append(stamps, ts)
		}
	}
	slices.Sort(stamps)
	var b strings.Builder
	for _, ts := range stamps {
		fmt.Fprintf(&b, "%+6d ms: up %v counter %v source %v\n", ts-end, up[ts], counter[ts], stored[ts])
	}
	return b.String()
}
