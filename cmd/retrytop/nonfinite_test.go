package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestNonFiniteValuesNeverSilenceTheReport: a
// target serving +Inf (a concurrency limit for "unlimited"), -Inf or NaN in
// any family made analyze --format json exit 1 with no output, and so
// disabled --fail-on. Every format must print, JSON must stay valid, with
// non-finite numbers as Prometheus' HTTP API writes them.
func TestNonFiniteValuesNeverSilenceTheReport(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		// Counters move (so rates exist) beside values that are not
		// numbers: Inf - Inf and Inf / Inf make NaN rates and ratios.
		fmt.Fprintf(w, `retry_originals_total{dependency="pay",priority="critical"} %d
retry_attempts_total{dependency="pay",outcome="success"} +Inf
retry_attempts_total{dependency="pay",outcome="timeout"} NaN
retry_retries_total{dependency="pay"} %d
retry_admission_rejected_total{dependency="pay",priority="critical",reason="concurrency"} +Inf
retry_results_total{dependency="pay",priority="critical",result="success"} %d
retry_results_total{dependency="pay",priority="critical",result="provider_error"} NaN
retry_concurrency_limit{dependency="pay"} +Inf
retry_active_calls{dependency="pay"} -Inf
retry_budget_balance{dependency="pay"} NaN
retry_policy_max_attempts{dependency="pay"} +Inf
retry_policy_deadline_seconds{dependency="pay"} -Inf
retry_request_duration_seconds_bucket{dependency="pay",result_class="success",le="0.1"} %d
retry_request_duration_seconds_bucket{dependency="pay",result_class="success",le="+Inf"} +Inf
retry_request_duration_seconds_sum{dependency="pay",result_class="success"} NaN
retry_request_duration_seconds_count{dependency="pay",result_class="success"} +Inf
`, 10*k, 2*k, 9*k, 5*k)
	}))
	defer srv.Close()
	base := []string{"analyze", srv.URL + "/metrics", "--window", "400ms", "--interval", "100ms", "-q"}
	for _, format := range []string{"json", "text", "markdown"} {
		t.Run(format, func(t *testing.T) {
			out, stderr, err := execute(t, append(base, "--format", format, "--fail-on", "critical")...)
			var ee *exitError
			if err != nil && !(errors.As(err, &ee) && ee.code == exitFinding) {
				t.Fatalf("analyze --format %s: %v\n%s", format, err, stderr)
			}
			if strings.TrimSpace(out) == "" {
				t.Fatalf("analyze --format %s printed nothing", format)
			}
			if !strings.Contains(out, "+Inf") {
				t.Errorf("--format %s: the +Inf limit is not shown:\n%s", format, out)
			}
			if format != "json" {
				return
			}
			if !json.Valid([]byte(out)) {
				t.Fatalf("invalid JSON:\n%s", out)
			}
			var rep struct {
				Dependencies []struct {
					ConcurrencyLimit any `json:"concurrency_limit"`
					ActiveCalls      any `json:"active_calls"`
					BudgetBalance    any `json:"budget_balance"`
				} `json:"dependencies"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Dependencies) != 1 {
				t.Fatalf("%v: %s", err, out)
			}
			d := rep.Dependencies[0]
			// A NaN sample is no number: the store keeps it as a gap, so
			// the balance is absent (null), like a stale one.
			if d.ConcurrencyLimit != "+Inf" || d.ActiveCalls != "-Inf" || d.BudgetBalance != nil {
				t.Errorf("limit %v active %v balance %v, want \"+Inf\" \"-Inf\" null", d.ConcurrencyLimit, d.ActiveCalls, d.BudgetBalance)
			}
		})
	}
}
