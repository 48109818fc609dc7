package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/retrytop/retrytop/retry"
)

// The retry library's families reach analyze through a live scrape (the
// parse filter keeps them): late successes, abandoned attempts, hedges and
// nested operations are present, 0 where nothing happened, never null.
func TestLibraryFamiliesReachAnalyze(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := retry.NewMetrics(reg)
	outer, err := retry.New(retry.Config{Dependency: "quote", Policy: retry.DefaultPolicy(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := retry.New(retry.Config{Dependency: "pay", Policy: retry.DefaultPolicy(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	nest := func() {
		_ = outer.Do(context.Background(), retry.Critical, func(ctx context.Context) error {
			return inner.Do(ctx, retry.Critical, func(context.Context) error { return nil })
		})
	}
	nest()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { // nesting goes on while analyze scrapes
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				nest()
			}
		}
	}()
	// The scrape timeout is long (a config file sets it): on a busy
	// machine a 100 ms scrape of this server may take longer, and what is
	// checked is which families arrive, not how fast.
	cfg := filepath.Join(t.TempDir(), "retrytop.yml")
	writeFile(t, cfg, "targets:\n  - name: lib\n    url: "+srv.URL+"/metrics\n    interval: 100ms\n    timeout: 30s\n")
	// A 3 s window holds two scrapes even when each takes a second.
	out, stderr, err := execute(t, "analyze", "--config", cfg, "--window", "3s", "-q", "--format", "json")
	close(stop)
	<-done
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var rep struct {
		Dependencies []struct {
			Dependency string   `json:"dependency"`
			Late       *float64 `json:"late_successes_per_s"`
			Abandoned  *float64 `json:"abandoned_attempts_per_s"`
			Hedges     *float64 `json:"hedges_per_s"`
			HedgesWon  *float64 `json:"hedges_won_per_s"`
			HedgesLost *float64 `json:"hedges_abandoned_per_s"`
			Nested     *float64 `json:"nested_operations_per_s"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range rep.Dependencies {
		seen[d.Dependency] = true
		if d.Late == nil || d.Abandoned == nil || d.Hedges == nil || *d.Late != 0 || *d.Hedges != 0 {
			t.Errorf("%s: late %v abandoned %v hedges %v, want present zeros", d.Dependency, d.Late, d.Abandoned, d.Hedges)
		}
		if d.HedgesWon == nil || d.HedgesLost == nil || *d.HedgesWon != 0 || *d.HedgesLost != 0 {
			t.Errorf("%s: hedges won %v abandoned %v, want present zeros", d.Dependency, d.HedgesWon, d.HedgesLost)
		}
		if d.Dependency == "pay" && (d.Nested == nil || *d.Nested <= 0) {
			t.Errorf("pay: nested %v, want operations nested inside quote's attempts", d.Nested)
		}
	}
	if !seen["pay"] || !seen["quote"] {
		t.Errorf("dependencies %v, want pay and quote", seen)
	}
}
