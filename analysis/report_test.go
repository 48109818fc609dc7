package analysis

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/model"
)

func TestReportJSONSchemaAndTimelineTotals(t *testing.T) {
	times := every(1_000_000, 1000, 61) // one minute at 1 s
	dep := []string{model.LabelDependency, "db"}
	st := load(t, nil, "app", times,
		ts{model.MetricOriginals, append(dep, "priority", "critical"), "0+10x60"},
		ts{model.MetricAttempts, append(dep, "outcome", "success"), "0+12x60"},
		ts{model.MetricAttempts, append(dep, "outcome", "timeout"), "0+3x60"},
	)
	rep := BuildReport(st, nil, ReportOptions{Window: 30e9, Bin: 10e9})
	if rep.WindowSeconds != 30 || rep.StartUnix != 1000 || rep.EndUnix != 1060 {
		t.Fatalf("report header = %+v", rep)
	}
	if len(rep.Dependencies) != 1 {
		t.Fatalf("dependencies = %d, want 1", len(rep.Dependencies))
	}
	d := rep.Dependencies[0]
	checkValue(t, "originals_per_s", d.OriginalsPerS, 10)
	checkValue(t, "attempts_per_s", d.AttemptsPerS, 15)
	checkValue(t, "amplification", d.Amplification, 1.5)
	checkValue(t, "timeouts_per_s", d.TimeoutsPerS, 3)

	var total float64
	for _, b := range d.Timeline {
		total += b.OriginalsPerS.Or(0) * (b.EndUnix - b.StartUnix)
	}
	if !near(total, 600) || len(d.Timeline) != 6 {
		t.Errorf("timeline: %d bins adding up to %v originals, want 6 bins and 600", len(d.Timeline), total)
	}

	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	row := generic["dependencies"].([]any)[0].(map[string]any)
	for _, key := range []string{"target", "dependency", "originals_per_s", "attempts_per_s", "amplification",
		"retries_per_s", "rescued_per_s", "budget_denied_per_s", "admission_rejected_per_s",
		"provider_errors_per_s", "timeouts_per_s", "effective_success", "attempt_success",
		"active_calls", "concurrency_limit", "pool_wait_p99_s", "latency_p99_s", "timeline"} {
		if _, ok := row[key]; !ok {
			t.Errorf("JSON row lacks %q", key)
		}
	}
	// Signals this target does not expose are null, never 0.
	for _, key := range []string{"budget_denied_per_s", "concurrency_limit", "pool_wait_p99_s"} {
		if row[key] != nil {
			t.Errorf("%s = %v, want null (absent)", key, row[key])
		}
	}
	if p99 := row["latency_p99_s"].(map[string]any); len(p99) != 3 || p99["success"] != nil {
		t.Errorf("latency_p99_s = %v, want three null classes", p99)
	}
	bin := row["timeline"].([]any)[0].(map[string]any)
	if bin["start_unix"].(float64) != 1000 || bin["end_unix"].(float64) != 1010 || bin["originals_per_s"].(float64) != 10 {
		t.Errorf("first bin = %v", bin)
	}
	if !strings.Contains(string(b), `"window_seconds":30`) {
		t.Errorf("window_seconds missing: %s", b[:80])
	}
	// The fate ledger of the row: this target counts no
	// results, so every fate is null, never 0.
	fates, ok := row["fates"].(map[string]any)
	if !ok || fates["dependency"] != "db" {
		t.Fatalf("fates = %v", row["fates"])
	}
	for _, key := range []string{"succeeded_first_try_per_s", "failed_after_attempts_per_s", "not_retried_budget_per_s", "not_retried_breaker_per_s"} {
		if v, present := fates[key]; !present || v != nil {
			t.Errorf("fates.%s = %v (present %v), want null", key, v, present)
		}
	}
}

// TestReportFates: the ledger reads the window's results and rescued.
func TestReportFates(t *testing.T) {
	times := every(1_000_000, 1000, 31)
	dep := []string{model.LabelDependency, "db"}
	res := func(r string) []string {
		return append(append([]string{}, dep...), "priority", "critical", "result", r)
	}
	st := load(t, nil, "app", times,
		ts{model.MetricOriginals, append(dep, "priority", "critical"), "0+10x30"},
		ts{model.MetricResults, res(model.ResultSuccess), "0+7x30"},
		ts{model.MetricResults, res(model.ResultProviderError), "0+1x30"},
		ts{model.MetricResults, res(model.ResultBudgetExhausted), "0+2x30"},
		ts{model.MetricRescued, dep, "0+3x30"},
	)
	f := BuildReport(st, nil, ReportOptions{Window: 30e9, Bin: 10e9}).Dependencies[0].Fates
	checkValue(t, "first try", f.SucceededFirstTry, 4)
	checkValue(t, "after retry", f.SucceededAfterRetry, 3)
	checkValue(t, "attempts used", f.FailedAfterAttempts, 1)
	checkValue(t, "budget", f.NotRetriedBudget, 2)
	checkValue(t, "deadline", f.NotRetriedDeadline, 0)
	if f.NotRetriedBreaker.OK() {
		t.Errorf("breaker %v, want absent (no contract result says so)", f.NotRetriedBreaker)
	}
}

func TestReportOnEmptyStore(t *testing.T) {
	rep := BuildReport(model.NewStore(model.StoreConfig{}), nil, ReportOptions{})
	b, _ := json.Marshal(rep)
	if got := string(b); !strings.Contains(got, `"dependencies":[]`) || !strings.Contains(got, `"targets":[]`) {
		t.Errorf("empty report = %s, want empty arrays, not null", got)
	}
}

// TestReportTargetDialects: each target lists the dialects
// that read it, [] when none, through Prometheus without the API prefix.
func TestReportTargetDialects(t *testing.T) {
	st := model.NewStore(model.StoreConfig{})
	rep := BuildReport(st, []model.TargetStatus{{Name: "a", Dialect: "native+pools"}, {Name: "b"}, {Name: "c", Dialect: "prometheus-api:envoy+native"}}, ReportOptions{})
	want := [][]string{{"native", "pools"}, {}, {"envoy", "native"}}
	for i, tg := range rep.Targets {
		if strings.Join(tg.Dialects, ",") != strings.Join(want[i], ",") || tg.Dialects == nil {
			t.Errorf("%s: dialects %#v, want %v", tg.Name, tg.Dialects, want[i])
		}
	}
}
