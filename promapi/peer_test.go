package promapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/retrytop/retrytop/internal/testpeer"
)

// scrapeInterval is the live tests' Prometheus scrape interval; its scrape
// timeout is as long, so a stored sample's value was read less than one
// interval after the sample's stamp.
const scrapeInterval = time.Second

// startScraping starts a real Prometheus on 127.0.0.1 scraping the one
// target at host (path) as job name every scrapeInterval (skipped
// without the peer, see internal/testpeer); it is killed at the end of
// the test. It returns the base URL and a client with a long timeout: on
// a busy machine a query may wait seconds for a core.
func startScraping(t *testing.T, ctx context.Context, name, host, path string) (string, *Client) {
	t.Helper()
	cfg := fmt.Sprintf("global:\n  scrape_interval: %[1]s\n  scrape_timeout: %[1]s\nscrape_configs:\n"+
		"  - job_name: %[2]q\n    metrics_path: %[3]q\n    static_configs:\n      - targets: [%[4]q]\n", scrapeInterval, name, path, host)
	base, _ := testpeer.StartPrometheus(t, ctx, cfg)
	testpeer.WaitReady(t, ctx, base)
	cl, err := NewClient(ClientConfig{URL: base, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return base, cl
}

// waitFor polls the instant query q at the current time until its one
// result satisfies ok, and returns that result's value and stamp; ctx
// bounds the wait (failing the test). Nothing is timed: Prometheus may
// scrape as slowly as a busy machine makes it.
func waitFor(t *testing.T, ctx context.Context, cl *Client, q string, ok func(float64) bool) (float64, int64) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := cl.Query(ctx, q, time.Now())
		if err == nil && len(r.Series) == 1 && len(r.Series[0].Points) == 1 && ok(r.Series[0].Points[0].V) {
			return r.Series[0].Points[0].V, r.Series[0].Points[0].T
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last answer %+v, %v)", q, ctx.Err(), r.Series, err)
		case <-tick.C:
		}
	}
}

// rawSamples are the samples Prometheus stored of the one series of
// selector over the last 10 minutes, stamp (ms) -> value.
func rawSamples(t *testing.T, ctx context.Context, cl *Client, selector string) map[int64]float64 {
	t.Helper()
	r, err := cl.Query(ctx, selector+"[10m]", time.Now())
	if err != nil || len(r.Series) != 1 {
		t.Fatalf("%s: %v %+v", selector, err, r.Series)
	}
	out := map[int64]float64{}
	for _, p := range r.Series[0].Points {
		out[p.T] = p.V
	}
	return out
}

// newestUp is the stamp (ms) of the newest scrape of up's samples that
// worked.
func newestUp(up map[int64]float64) int64 {
	var end int64
	for ts, v := range up {
		if v == 1 {
			end = max(end, ts)
		}
	}
	return end
}

// evalPhase is how far after a scrape's stamp the live tests' Source
// evaluates (its clock: the newest scrape plus evalPhase, on a grid of
// scrapeInterval): half an interval, the farthest an evaluation can stand
// from the scrapes on both sides. On the scrapes' own phase, a scrape
// stamped a few ms after an evaluation (jitter) and a failed one before
// the next fall into one step, and the first one's increase is lost: the
// evaluation after it finds the series stale (docs/prometheus.md, "Not
// done yet").
const evalPhase = scrapeInterval / 2
