package promapi

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dialect"
)

// increaseOf matches increase(SELECTOR[RANGE]) in the expected queries,
// which are written as plain increases for readability.
var increaseOf = regexp.MustCompile(`increase\(([^\[]+)\[([0-9a-z]+)\]\)`)

// counterExprs replaces each increase(S[R]) by the counter expression
// the dialects build (dialect.CounterExpr).
func counterExprs(s string) string {
	return increaseOf.ReplaceAllStringFunc(s, func(m string) string {
		sub := increaseOf.FindStringSubmatch(m)
		d, err := time.ParseDuration(sub[2])
		if err != nil {
			panic(err)
		}
		return dialect.CounterExpr(sub[1], d)
	})
}

func TestBuildQueriesGolden(t *testing.T) {
	qs, err := BuildQueries([]string{"job"}, `{job="checkout"}`, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, q := range qs {
		if _, dup := got[q.Name]; dup {
			t.Errorf("duplicate query for %s", q.Name)
		}
		got[q.Name] = q.PromQL
	}
	golden := map[string]string{
		"retry_originals_total":                 `sum by (job, dependency, priority) (increase(retry_originals_total{job="checkout"}[1m]))`,
		"retry_attempts_total":                  `sum by (job, dependency, outcome) (increase(retry_attempts_total{job="checkout"}[1m]))`,
		"retry_retries_total":                   `sum by (job, dependency) (increase(retry_retries_total{job="checkout"}[1m]))`,
		"retry_admission_rejected_total":        `sum by (job, dependency, priority, reason) (increase(retry_admission_rejected_total{job="checkout"}[1m]))`,
		"retry_results_total":                   `sum by (job, dependency, priority, result) (increase(retry_results_total{job="checkout"}[1m]))`,
		"retry_active_calls":                    `sum by (job, dependency) (retry_active_calls{job="checkout"})`,
		"retry_concurrency_limit":               `sum by (job, dependency) (retry_concurrency_limit{job="checkout"})`,
		"retry_policy_max_attempts":             `max by (job, dependency) (retry_policy_max_attempts{job="checkout"})`,
		"retry_request_duration_seconds_bucket": `sum by (job, dependency, result_class, le) (increase(retry_request_duration_seconds_bucket{job="checkout"}[1m]))`,
		"retry_request_duration_seconds_count":  `sum by (job, dependency, result_class) (increase(retry_request_duration_seconds_count{job="checkout"}[1m]))`,
		"retry_request_duration_seconds_sum":    `sum by (job, dependency, result_class) (increase(retry_request_duration_seconds_sum{job="checkout"}[1m]))`,
		"retry_pool_wait_seconds_bucket":        `sum by (job, dependency, le) (increase(retry_pool_wait_seconds_bucket{job="checkout"}[1m]))`,
		"sim_provider_requests_received_total":  `sum by (job, dependency) (increase(sim_provider_requests_received_total{job="checkout"}[1m]))`,
		"retry_limit_exceeded_total":            `sum by (job, dependency) (increase(retry_limit_exceeded_total{job="checkout"}[1m]))`,
		"retry_pending_calls":                   `sum by (job, dependency) (retry_pending_calls{job="checkout"})`,
		"retry_pool_wait_average_seconds":       `max by (job, dependency) (retry_pool_wait_average_seconds{job="checkout"})`,
		// The services view: fleet totals, the oldest request of any
		// replica, the status and stage labels kept.
		"sim_provider_in_flight":                     `sum by (job, dependency) (sim_provider_in_flight{job="checkout"})`,
		"sim_provider_slots":                         `sum by (job, dependency) (sim_provider_slots{job="checkout"})`,
		"sim_provider_queue_depth":                   `sum by (job, dependency) (sim_provider_queue_depth{job="checkout"})`,
		"sim_provider_queue_limit":                   `sum by (job, dependency) (sim_provider_queue_limit{job="checkout"} * on (job) group_left () (min by (job) (sim_provider_queue_limit{job="checkout"}) > bool 0))`,
		"sim_provider_queue_oldest_age_seconds":      `max by (job, dependency) (sim_provider_queue_oldest_age_seconds{job="checkout"})`,
		"sim_provider_queue_wait_seconds_bucket":     `sum by (job, dependency, le) (increase(sim_provider_queue_wait_seconds_bucket{job="checkout"}[1m]))`,
		"sim_provider_completed_total":               `sum by (job, dependency) (increase(sim_provider_completed_total{job="checkout"}[1m]))`,
		"sim_provider_errors_injected_total":         `sum by (job, dependency) (increase(sim_provider_errors_injected_total{job="checkout"}[1m]))`,
		"sim_provider_rejected_total":                `sum by (job, dependency, reason) (increase(sim_provider_rejected_total{job="checkout"}[1m]))`,
		"sim_provider_cancelled_total":               `sum by (job, dependency, stage) (increase(sim_provider_cancelled_total{job="checkout"}[1m]))`,
		"sim_provider_responses_total":               `sum by (job, dependency, code) (increase(sim_provider_responses_total{job="checkout"}[1m]))`,
		"http_requests_total":                        `sum by (job, dependency, code) (increase(http_requests_total{job="checkout"}[1m]))`,
		"http_request_duration_seconds_bucket":       `sum by (job, dependency, code, le) (increase(http_request_duration_seconds_bucket{job="checkout"}[1m]))`,
		"http_request_duration_seconds_sum":          `sum by (job, dependency, code) (increase(http_request_duration_seconds_sum{job="checkout"}[1m]))`,
		"http_requests_in_flight":                    `sum by (job, dependency) (http_requests_in_flight{job="checkout"})`,
		"http_server_request_duration_seconds_count": `sum by (job, dependency, http_response_status_code) (increase(http_server_request_duration_seconds_count{job="checkout"}[1m]))`,
		"http_server_active_requests":                `sum by (job, dependency) (http_server_active_requests{job="checkout"})`,
	}
	for name, want := range golden {
		if want = counterExprs(want); got[name] != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got[name], want)
		}
	}
	// 19 counters, 9 gauges, 5 histograms of 3 series each, as they are
	// (43: the contract, server side, breakers, settings and extensions),
	// and for the services view 6 counters, 7 gauges and 3 histograms (22).
	if len(qs) != 19+9+5*3+6+7+3*3 {
		t.Errorf("%d queries", len(qs))
	}
	for _, q := range qs {
		if q.LeScale != 1 || q.Split || len(q.Dialects) != 1 || q.Dialects[0] != "native" {
			t.Errorf("%s: %+v", q.Name, q)
		}
	}
}

func TestBuildQueriesByAndSelector(t *testing.T) {
	tests := []struct {
		by       []string
		selector string
		rng      time.Duration
		want     string
	}{
		{[]string{"job"}, "", 15 * time.Second, `sum by (job, dependency, priority) (increase(retry_originals_total[15s]))`},
		{[]string{"namespace", "job"}, `namespace="shop", pod=~"checkout-.*"`, 1500 * time.Millisecond,
			`sum by (namespace, job, dependency, priority) (increase(retry_originals_total{namespace="shop", pod=~"checkout-.*"}[1500ms]))`},
		{[]string{"dependency"}, `{ job="a", }`, 2 * time.Hour, `sum by (dependency, priority) (increase(retry_originals_total{job="a"}[2h]))`},
	}
	for _, tt := range tests {
		qs, err := BuildQueries(tt.by, tt.selector, tt.rng)
		if err != nil {
			t.Fatal(err)
		}
		if want := counterExprs(tt.want); qs[0].PromQL != want {
			t.Errorf("got  %s\nwant %s", qs[0].PromQL, want)
		}
	}
	for _, bad := range []struct {
		by  []string
		sel string
	}{{nil, ""}, {[]string{"job-name"}, ""}, {[]string{"job"}, `{job="a"`}, {[]string{"0x"}, ""}} {
		if _, err := BuildQueries(bad.by, bad.sel, time.Minute); err == nil {
			t.Errorf("BuildQueries(%q, %q): no error", bad.by, bad.sel)
		}
	}
	if _, err := BuildQueries([]string{"job"}, "", 0); err == nil || !strings.Contains(err.Error(), "range") {
		t.Errorf("zero range: %v", err)
	}
}
