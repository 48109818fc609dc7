package promapi

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/internal/testpeer"
	"github.com/retrytop/retrytop/model"
)

// Polly's breaker state through Prometheus equals what the dialect reads
// from a scrape (dialect's polly_breaker.prom): promtool evaluates the
// query on the fixture's transition counts. payments opened 3 times,
// half-opened 2, closed 1: open; inventory 2/2/2: closed; catalog 2/2/1
// may be closed or half-open: no sample.
func TestPollyBreakerStateWithPromtool(t *testing.T) {
	bin := testpeer.Require(t, "promtool", "prometheus")
	qs, err := BuildDialectQueries(goldenTranslator(t), []string{"polly"}, []string{"namespace", "job"}, `{namespace="shop"}`, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var expr string
	for _, q := range qs {
		if q.Name == model.MetricBreakerState {
			expr = q.PromQL
		}
	}
	if expr == "" {
		t.Fatal("no breaker state query for polly")
	}
	var in strings.Builder
	for _, p := range []struct {
		pipeline string
		counts   [3]int
	}{{"payments", [3]int{3, 2, 1}}, {"inventory", [3]int{2, 2, 2}}, {"catalog", [3]int{2, 2, 1}}} {
		for i, ev := range []string{"OnCircuitOpened", "OnCircuitHalfOpened", "OnCircuitClosed"} {
			fmt.Fprintf(&in, "      - series: 'resilience_polly_strategy_events_total{namespace=\"shop\",job=\"api\",instance=\"a:80\",pipeline_name=%q,event_name=%q}'\n        values: '%dx5'\n",
				p.pipeline, ev, p.counts[i])
		}
	}
	test := fmt.Sprintf(`rule_files: []
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
%s    promql_expr_test:
      - expr: %q
        eval_time: 2m
        exp_samples:
          - labels: '{namespace="shop",job="api",dependency="inventory"}'
            value: %d
          - labels: '{namespace="shop",job="api",dependency="payments"}'
            value: %d
`, in.String(), expr, model.BreakerClosed, model.BreakerOpen)
	path := filepath.Join(t.TempDir(), "breaker_test.yml")
	if err := os.WriteFile(path, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "test", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s\n%s", err, out, test)
	}
}
