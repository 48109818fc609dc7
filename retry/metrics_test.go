package retry

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// contract is the family list of docs/metrics.md, with types.
var contract = map[string]string{
	"retry_originals_total":          "COUNTER",
	"retry_attempts_total":           "COUNTER",
	"retry_retries_total":            "COUNTER",
	"retry_rescued_total":            "COUNTER",
	"retry_budget_denied_total":      "COUNTER",
	"retry_admission_rejected_total": "COUNTER",
	"retry_results_total":            "COUNTER",
	"retry_active_calls":             "GAUGE",
	"retry_concurrency_limit":        "GAUGE",
	"retry_pool_wait_seconds":        "HISTOGRAM",
	"retry_request_duration_seconds": "HISTOGRAM",
	"retry_attempt_duration_seconds": "HISTOGRAM",
	"retry_backoff_seconds":          "HISTOGRAM",
	"retry_budget_balance":           "GAUGE",
	"retry_policy_max_attempts":      "GAUGE",
	"retry_policy_deadline_seconds":  "GAUGE",
	"retry_abandoned_attempts_total": "COUNTER",
	"retry_late_successes_total":     "COUNTER",
	"retry_nested_operations_total":  "COUNTER",
	"retry_operation_attempts_total": "COUNTER",
	"retry_hedges_total":             "COUNTER",
	"retry_hedges_won_total":         "COUNTER",
	"retry_hedges_abandoned_total":   "COUNTER",
	"retry_attempt_panics_total":     "COUNTER",
}

// contractLabels are each family's label names, as documented.
var contractLabels = map[string][]string{
	"retry_originals_total":          {"dependency", "priority"},
	"retry_attempts_total":           {"dependency", "outcome"},
	"retry_admission_rejected_total": {"dependency", "priority", "reason"},
	"retry_results_total":            {"dependency", "priority", "result"},
	"retry_request_duration_seconds": {"dependency", "result_class"},
	"retry_attempt_duration_seconds": {"dependency", "outcome"},
	"retry_nested_operations_total":  {"dependency", "outer_dependency"},
}

func TestFamiliesMatchTheContract(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	b := NewBudget(BudgetConfig{})
	for range 35 {
		b.RecordOriginal()
	}
	if _, err := New(Config{Dependency: "quote", Policy: DefaultPolicy(), Limiter: NewLimiter(4, 1), Budget: b, Metrics: m}); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf.GetType().String()
		want := contractLabels[mf.GetName()]
		if want == nil {
			want = []string{"dependency"}
		}
		for _, metric := range mf.GetMetric() {
			var names []string
			for _, lp := range metric.GetLabel() {
				names = append(names, lp.GetName())
			}
			slices.Sort(names)
			w := slices.Sorted(slices.Values(want))
			if !slices.Equal(names, w) {
				t.Errorf("%s labels = %v, want %v", mf.GetName(), names, w)
			}
		}
	}
	for name, typ := range contract {
		if name == "retry_nested_operations_total" && got[name] == "" {
			continue // has series only once an operation nests
		}
		if got[name] != typ {
			t.Errorf("family %s: type %q, want %q", name, got[name], typ)
		}
	}
	for name := range got {
		if _, ok := contract[name]; !ok {
			t.Errorf("family %s is not in the contract", name)
		}
	}

	// Gauges carry the configuration.
	const want = `
# HELP retry_budget_balance Retries the shared retry budget would allow now; absent without a budget.
# TYPE retry_budget_balance gauge
retry_budget_balance{dependency="quote"} 3
# HELP retry_concurrency_limit Admission limit on concurrent attempts; absent when unlimited.
# TYPE retry_concurrency_limit gauge
retry_concurrency_limit{dependency="quote"} 4
# HELP retry_policy_deadline_seconds Configured operation deadline cap; absent when there is none.
# TYPE retry_policy_deadline_seconds gauge
retry_policy_deadline_seconds{dependency="quote"} 0.9
# HELP retry_policy_max_attempts Configured attempt cap, first try included.
# TYPE retry_policy_max_attempts gauge
retry_policy_max_attempts{dependency="quote"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"retry_budget_balance", "retry_concurrency_limit", "retry_policy_deadline_seconds", "retry_policy_max_attempts"); err != nil {
		t.Error(err)
	}
}

func TestUnlimitedFamiliesAreAbsent(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	if _, err := New(Config{Dependency: "baseline", Policy: Policy{MaxAttempts: 3, PerAttemptTimeout: 300 * ms}, Metrics: m}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"retry_concurrency_limit", "retry_budget_balance"} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != 0 {
			t.Errorf("%s: %d series (err %v), want none without a limit/budget", name, n, err)
		}
	}
	// Every owner has a deadline: without Policy.Deadline it is derived,
	// 3 attempts x 300 ms + 2 waits of DefaultMaxRetryAfter (5 s) = 10.9 s.
	if got := testutilGauge(m.policyDeadline, "baseline"); got != 10.9 {
		t.Errorf("retry_policy_deadline_seconds = %v, want the derived 10.9", got)
	}
}

func TestOneMetricsServesManyDependencies(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	for _, dep := range []string{"quote", "catalog"} {
		o, err := New(Config{Dependency: dep, Policy: Policy{MaxAttempts: 1, Deadline: time.Second}, Metrics: m, Budget: NewBudget(BudgetConfig{})})
		if err != nil {
			t.Fatal(err)
		}
		_ = o.Do(context.Background(), Critical, func(context.Context) error { return nil })
	}
	for _, dep := range []string{"quote", "catalog"} {
		if got := testutil.ToFloat64(m.results.WithLabelValues(dep, "critical", "success")); got != 1 {
			t.Errorf("%s successes = %v, want 1", dep, got)
		}
	}
	if n, _ := testutil.GatherAndCount(reg, "retry_budget_balance"); n != 2 {
		t.Errorf("retry_budget_balance series = %d, want one per dependency", n)
	}
}

func TestMetricsNeverUseTheGlobalRegistry(t *testing.T) {
	o, err := New(Config{Dependency: "quote", Policy: DefaultPolicy(), Metrics: NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	_ = o.Do(context.Background(), Critical, func(context.Context) error { return nil })
	if _, err := New(Config{Dependency: "nometrics", Policy: DefaultPolicy()}); err != nil {
		t.Fatal(err)
	}
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "retry_") {
			t.Errorf("%s registered globally", mf.GetName())
		}
	}
}

func TestNewMetricsTwiceOnOneRegistryPanics(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	defer func() {
		if recover() == nil {
			t.Error("second NewMetrics on the same registry did not panic")
		}
	}()
	NewMetrics(reg)
}

func TestBucketsResolveFastFailuresAndSlowCalls(t *testing.T) {
	if !slices.IsSorted(buckets) {
		t.Fatal("buckets not sorted")
	}
	// A 1 ms local refusal must land in its own bucket, apart from both
	// sub-millisecond and 2-3 ms results, and a 5 s call apart from 10 s.
	for _, le := range []float64{0.0005, 0.001, 0.0025, 2.5, 5, 10} {
		if !slices.Contains(buckets, le) {
			t.Errorf("bucket %v missing", le)
		}
	}
}
