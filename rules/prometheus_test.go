package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/retrytop/retrytop/internal/testpeer"
	"github.com/retrytop/retrytop/sim"
)

// The live run's schedule: a healthy phase longer than the rules'
// lookback and first evaluation, a slowdown long enough for the alert to
// fire within fireWithin, a short recovery.
const (
	liveHealthy   = 45 * time.Second
	liveSlow      = 40 * time.Second
	liveRecovered = 10 * time.Second
	// liveEvery is Prometheus' scrape and evaluation interval.
	liveEvery = time.Second
)

// TestPrometheusAlertsOnLiveSim: a real Prometheus loaded with the rules
// (rule_files, one-second evaluation) scrapes the sim's baseline on
// loopback: no RetryAmplification fires while the provider is healthy,
// and RetryAmplification on client -> provider is in ALERTS, firing,
// before the slowdown ends. The phases' starts, as the sim reports them,
// are the deadlines; nothing sleeps.
func TestPrometheusAlertsOnLiveSim(t *testing.T) {
	testpeer.Require(t, "prometheus", "prometheus")
	if testing.Short() {
		t.Skip("runs the baseline for a minute and a half in real time")
	}
	// A bound on a hang, not on a number: the schedule's length and more.
	ctx, cancel := context.WithTimeout(context.Background(), 2*(liveHealthy+liveSlow+liveRecovered)+time.Minute)
	defer cancel()
	sc, _ := sim.ScenarioByName("baseline")
	phases := make(chan string, 8)
	stack, err := sim.Start(ctx, sc, sim.Options{Seed: 1, Healthy: liveHealthy, Slow: liveSlow, Recovered: liveRecovered,
		OnPhase: func(_ int, name string) { phases <- name }})
	if err != nil {
		t.Fatal(err)
	}
	defer stack.Close()
	dir := t.TempDir()
	rules, _ := nativeRules(t, dir)
	cfg := fmt.Sprintf("global:\n  scrape_interval: %[1]s\n  scrape_timeout: %[1]s\n  evaluation_interval: %[1]s\nrule_files: [%[2]q]\nscrape_configs:\n", liveEvery, rules)
	for _, tg := range stack.Targets() {
		u, err := url.Parse(tg.URL)
		if err != nil {
			t.Fatal(err)
		}
		cfg += fmt.Sprintf("  - job_name: %q\n    metrics_path: %q\n    static_configs:\n      - targets: [%q]\n", tg.Name, u.Path, u.Host)
	}
	base, _ := testpeer.StartPrometheus(t, ctx, cfg)
	testpeer.WaitReady(t, ctx, base)

	firing := `ALERTS{alertname="RetryAmplification", alertstate="firing"}`
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	phase := sim.PhaseHealthy
	var slowAt time.Time
	for {
		select {
		case p := <-phases:
			if p == sim.PhaseSlow {
				slowAt = time.Now()
			}
			if p == sim.PhaseRecovered || p == "" {
				t.Fatalf("the slowdown ended (%s) without RetryAmplification firing on client -> provider", p)
			}
			if p != "" {
				phase = p
			}
		case <-ctx.Done():
			t.Fatalf("no RetryAmplification by the bound: %v", ctx.Err())
		case <-tick.C:
		}
		got := alerts(t, ctx, base, firing)
		if phase == sim.PhaseHealthy && len(got) > 0 {
			t.Fatalf("RetryAmplification fires while the provider is healthy: %v", got)
		}
		if phase == sim.PhaseSlow && len(got) > 0 {
			if !slices.Contains(got, "client -> provider") {
				t.Fatalf("RetryAmplification fires on %v, not on client -> provider", got)
			}
			t.Logf("RetryAmplification firing %v after the slowdown began: %v", time.Since(slowAt).Round(time.Second), got)
			return
		}
	}
}

// alerts runs the instant query q and returns each result's job ->
// dependency pair.
func alerts(t *testing.T, ctx context.Context, base, q string) []string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil // not answering yet: the next tick asks again
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v (status %q)", q, err, r.Status)
	}
	var out []string
	for _, s := range r.Data.Result {
		out = append(out, s.Metric[TargetLabel]+" -> "+s.Metric["dependency"])
	}
	return out
}
