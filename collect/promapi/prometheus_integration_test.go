package promapi

import (
	"github.com/retrytop/retrytop/internal/testpeer"

	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/collect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/sim"
)

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestAgainstPrometheus runs the sim stack, a real Prometheus scraping it
// every second, a direct scraper and a Source on that Prometheus side by
// side, and checks that both stores give the same originals/s, attempts/s
// and amplification per hop (within 5 %) over the same window.
func TestAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("Prometheus integration test skipped in -short mode")
	}
	bin := testpeer.Require(t, "prometheus", "prometheus")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	sc, _ := sim.ScenarioByName("baseline")
	const healthy = 16 * time.Second
	recovered := make(chan struct{})
	var once sync.Once
	stack, err := sim.Start(ctx, sc, sim.Options{Healthy: healthy, Slow: 8 * time.Second, Recovered: 10 * time.Second, Seed: 7,
		OnPhase: func(_ int, name string) {
			if name == sim.PhaseRecovered {
				once.Do(func() { close(recovered) })
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer stack.Close()

	// Direct scraping from the start.
	var targets []collect.Target
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n")
	for _, st := range stack.Targets() {
		tgt, err := collect.ParseTarget(st.Name + "=" + st.URL)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tgt)
		u, _ := url.Parse(st.URL)
		fmt.Fprintf(&cfg, "  - job_name: %q\n    metrics_path: %q\n    static_configs:\n      - targets: [%q]\n", st.Name, u.Path, u.Host)
	}
	direct := collect.NewScraper(targets, model.NewStore(model.StoreConfig{}), collect.Options{})
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	prom := exec.CommandContext(ctx, bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	var promLog strings.Builder
	prom.Stdout, prom.Stderr = &promLog, &promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = prom.Process.Kill()
		_ = prom.Wait()
		if t.Failed() {
			t.Logf("prometheus output:\n%s", promLog.String())
		}
	}()
	base := "http://" + addr
	client, err := NewClient(ClientConfig{URL: base, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Ready when every sim target has been scraped successfully.
	for {
		res, err := client.Query(ctx, "sum(up)", time.Now())
		if err == nil && len(res.Series) == 1 && res.Series[0].Points[0].V == float64(len(targets)) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("prometheus never scraped every target: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if resp, err := http.Get(base + "/-/ready"); err == nil {
		resp.Body.Close()
	}

	const rng = 5 * time.Second
	src, err := New(Options{Client: ClientConfig{URL: base}, Step: time.Second, Range: rng, Backfill: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Scrape directly and query Prometheus on the same ticks, so both
	// stores have samples at (nearly) the same times and a window selects
	// the same span of both.
	var wg sync.WaitGroup
	defer wg.Wait()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			direct.ScrapeOnce(runCtx)
			src.Refresh(runCtx)
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
		}
	})

	// The window starts in the healthy phase once Prometheus has a full
	// range of data, and ends in the recovered phase a range (plus a
	// scrape) after the slow phase: both ends see the same steady traffic,
	// so the Range/2 lag of the integrated rates cancels out
	// (docs/prometheus.md) and the slow phase is inside the window for both.
	t0 := time.Now().Add(rng + 2*time.Second)
	if slowAt := stack.Started().Add(healthy); t0.After(slowAt.Add(-time.Second)) {
		t.Fatalf("prometheus took %v to scrape every target: no steady window left before the slow phase", time.Since(stack.Started()))
	}
	select {
	case <-recovered:
	case <-ctx.Done():
		t.Fatal("the sim never recovered")
	}
	time.Sleep(rng + 3*time.Second)
	t1 := time.Now()
	stopRun()
	wg.Wait()

	for _, st := range src.Statuses() {
		if !st.Up {
			t.Errorf("status %+v", st)
		}
	}
	a, b := direct.Store(), src.Store()
	rows := 0
	for _, tgt := range a.Targets() {
		for _, dep := range analysis.Dependencies(a, tgt) {
			sa := analysis.SignalsFor(a, tgt, dep, t0.UnixMilli(), t1.UnixMilli())
			sb := analysis.SignalsFor(b, tgt, dep, t0.UnixMilli(), t1.UnixMilli())
			rows++
			for _, c := range []struct {
				what   string
				da, db model.Value
			}{
				{"originals/s", sa.OriginalsPerS, sb.OriginalsPerS},
				{"attempts/s", sa.AttemptsPerS, sb.AttemptsPerS},
				{"amplification", sa.Amplification, sb.Amplification},
			} {
				va, oka := c.da.Get()
				vb, okb := c.db.Get()
				t.Logf("%s -> %s %s: direct %.3f, prometheus %.3f", tgt, dep, c.what, va, vb)
				if !oka || !okb || math.Abs(va-vb) > 0.05*math.Abs(va) {
					t.Errorf("%s -> %s %s: direct %v, prometheus %v: not within 5%%", tgt, dep, c.what, c.da, c.db)
				}
			}
		}
	}
	if rows == 0 {
		t.Fatal("no rows scraped directly")
	}
}
