package promapi

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
)

// serviceAnswers are what a server answers to the native service queries
// (--by job, no selector, range 2 s), by exact PromQL: the query must be
// the aggregation the services view needs (sums of fleet gauges, the max of
// the oldest age, the code/reason/stage labels kept) or it gets nothing.
// Values are already summed over replicas, as the server sums them. Job
// provider has the sim's shape, job web promhttp's; nobody has the
// OpenTelemetry families, whose queries return empty results.
var serviceAnswers = map[string][]string{
	// Counters: increase per 2 s step, so the rate is half the value.
	`sum by (job, dependency) (` + inc2s(`sim_provider_requests_received_total`) + `)`: {`{"job":"provider"} 40`},
	`sum by (job, dependency) (` + inc2s(`sim_provider_completed_total`) + `)`:         {`{"job":"provider"} 30`},
	`sum by (job, dependency) (` + inc2s(`sim_provider_work_after_cancel_total`) + `)`: {`{"job":"provider"} 4`},
	`sum by (job, dependency) (` + inc2s(`sim_provider_errors_injected_total`) + `)`:   {`{"job":"provider"} 2`},
	`sum by (job, dependency, reason) (` + inc2s(`sim_provider_rejected_total`) + `)`: {
		`{"job":"provider","reason":"queue_full"} 6`, `{"job":"provider","reason":"safety_cap"} 0`},
	`sum by (job, dependency, stage) (` + inc2s(`sim_provider_cancelled_total`) + `)`: {
		`{"job":"provider","stage":"queued"} 3`, `{"job":"provider","stage":"executing"} 1`},
	`sum by (job, dependency, code) (` + inc2s(`sim_provider_responses_total`) + `)`: {
		`{"job":"provider","code":"200"} 26`, `{"job":"provider","code":"503"} 8`},
	// Gauges.
	`sum by (job, dependency) (sim_provider_in_flight)`:   {`{"job":"provider"} 8`},
	`sum by (job, dependency) (sim_provider_slots)`:       {`{"job":"provider"} 8`},
	`sum by (job, dependency) (sim_provider_queue_depth)`: {`{"job":"provider"} 12`},
	`sum by (job, dependency) (sim_provider_queue_limit * on (job) group_left () (min by (job) (sim_provider_queue_limit) > bool 0))`: {`{"job":"provider"} 50`},
	`max by (job, dependency) (sim_provider_queue_oldest_age_seconds)`:                                                                {`{"job":"provider"} 0.75`},
	// Histograms.
	`sum by (job, dependency, le) (` + inc2s(`sim_provider_queue_wait_seconds_bucket`) + `)`: {
		`{"job":"provider","le":"0.1"} 10`, `{"job":"provider","le":"1"} 20`, `{"job":"provider","le":"+Inf"} 20`},
	`sum by (job, dependency) (` + inc2s(`sim_provider_queue_wait_seconds_count`) + `)`: {`{"job":"provider"} 20`},
	`sum by (job, dependency) (` + inc2s(`sim_provider_queue_wait_seconds_sum`) + `)`:   {`{"job":"provider"} 5`},
	`sum by (job, dependency, le) (` + inc2s(`sim_provider_service_time_seconds_bucket`) + `)`: {
		`{"job":"provider","le":"0.02"} 24`, `{"job":"provider","le":"0.12"} 30`, `{"job":"provider","le":"+Inf"} 30`},
	`sum by (job, dependency) (` + inc2s(`sim_provider_service_time_seconds_count`) + `)`: {`{"job":"provider"} 30`},
	`sum by (job, dependency) (` + inc2s(`sim_provider_service_time_seconds_sum`) + `)`:   {`{"job":"provider"} 1.2`},

	`sum by (job, dependency, code) (` + inc2s(`http_requests_total`) + `)`: {
		`{"job":"web","code":"200"} 100`, `{"job":"web","code":"429"} 10`, `{"job":"web","code":"500"} 4`, `{"job":"web","code":"503"} 6`},
	`sum by (job, dependency) (http_requests_in_flight)`: {`{"job":"web"} 7`},
	`sum by (job, dependency, code, le) (` + inc2s(`http_request_duration_seconds_bucket`) + `)`: {
		`{"job":"web","code":"200","le":"0.05"} 100`, `{"job":"web","code":"200","le":"1"} 100`, `{"job":"web","code":"200","le":"+Inf"} 100`,
		`{"job":"web","code":"500","le":"0.05"} 0`, `{"job":"web","code":"500","le":"1"} 4`, `{"job":"web","code":"500","le":"+Inf"} 4`},
	`sum by (job, dependency, code) (` + inc2s(`http_request_duration_seconds_count`) + `)`: {
		`{"job":"web","code":"200"} 100`, `{"job":"web","code":"500"} 4`},
	`sum by (job, dependency, code) (` + inc2s(`http_request_duration_seconds_sum`) + `)`: {
		`{"job":"web","code":"200"} 3`, `{"job":"web","code":"500"} 2`},
}

// TestSourceServiceSignals: the services view's signals computed from the
// Prometheus path (native queries, results integrated and stored) are the
// numbers the server's answers imply, for a sim-shaped and a
// promhttp-shaped service; families no target has (OpenTelemetry) cost no
// error and leave their shape out.
func TestSourceServiceSignals(t *testing.T) {
	fake := &fakeServer{answer: func(q string, ts float64) string {
		var out []string
		for _, a := range serviceAnswers[q] {
			metric, value, _ := strings.Cut(a, " ")
			out = append(out, fmt.Sprintf(`{"metric":%s,"value":[%.3f,%q]}`, metric, ts, value))
		}
		return strings.Join(out, ",")
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	const t0 = 1700000000
	now := time.Unix(t0, 0)
	// Refreshes every 2 s (the counters' answers are increases per step);
	// the server has no up series, so samples are stored at their
	// evaluation times.
	src, err := New(Options{Delay: -1, Client: ClientConfig{URL: srv.URL}, Backfill: -1, Step: 2 * time.Second,
		Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	// Every answer above is a query the Source sends.
	sent := map[string]bool{}
	for _, q := range src.Queries() {
		sent[q.PromQL] = true
	}
	for q := range serviceAnswers {
		if !sent[q] {
			t.Errorf("not queried: %s", q)
		}
	}
	var st []model.TargetStatus
	for range 5 {
		st = src.Refresh(context.Background())
		now = now.Add(2 * time.Second)
	}
	if !st[0].Up || st[0].LastError != "" {
		t.Errorf("server status %+v", st[0])
	}
	store := src.Store()
	if got := analysis.Services(store); fmt.Sprint(got) != "[provider web]" {
		t.Fatalf("services %v", got)
	}
	from, to := int64(t0*1000), int64((t0+8)*1000)
	abs := model.Absent
	some := model.Some
	want := map[string]model.ServiceSignals{
		"provider": {Target: "provider", Source: "sim", StartMs: from, EndMs: to,
			ReceivedPerS: some(20), InFlight: some(8), Slots: some(8), QueueDepth: some(12), QueueLimit: some(50),
			QueueOldestAge: some(0.75),
			// Rank 19.8 of 20 in (0.1, 1] holding 10: 0.1 + 0.9 * 9.8/10.
			QueueWaitP99: some(0.982), QueueWaitMean: some(0.25),
			// Rank 15 of 30 in (0, 0.02] holding 24; rank 29.7 in (0.02, 0.12] holding 6.
			ServiceTimeP50: some(0.0125), ServiceTimeP99: some(0.115),
			SuccessServiceTimeP50: abs, SuccessServiceTimeP99: abs, ErrorServiceTimeP50: abs, ErrorServiceTimeP99: abs,
			Responses2xxPerS: some(13), Responses429PerS: some(0), Responses503PerS: some(4),
			Responses503RetryAfterPerS: some(3), ResponsesOther5xxPerS: some(0), Responses5xxPerS: some(4),
			WorkAfterCancelPerS: some(2), CancelledPerS: some(2)},
		"web": {Target: "web", Source: "promhttp", StartMs: from, EndMs: to,
			ReceivedPerS: some(60), InFlight: some(7), Slots: abs, QueueDepth: abs, QueueLimit: abs, QueueOldestAge: abs,
			QueueWaitP99: abs, QueueWaitMean: abs,
			// Merged: 100 in (0, 0.05], 4 in (0.05, 1]. p50 rank 52: 0.05 *
			// 52/100; p99 rank 102.96: 0.05 + 0.95 * 2.96/4.
			ServiceTimeP50: some(0.026), ServiceTimeP99: some(0.753),
			SuccessServiceTimeP50: some(0.025), SuccessServiceTimeP99: some(0.0495),
			// 4 in (0.05, 1]: ranks 2 and 3.96.
			ErrorServiceTimeP50: some(0.525), ErrorServiceTimeP99: some(0.9905),
			Responses2xxPerS: some(50), Responses429PerS: some(5), Responses503PerS: some(3),
			Responses503RetryAfterPerS: abs, ResponsesOther5xxPerS: some(2), Responses5xxPerS: some(5),
			WorkAfterCancelPerS: abs, CancelledPerS: abs},
	}
	for target, w := range want {
		got := analysis.ServiceSignalsFor(store, target, from, to)
		if d := diffService(got, w); d != "" {
			t.Errorf("%s:\n%s", target, d)
		}
	}
}

// diffService lists the fields of two ServiceSignals that differ (values
// within 1e-9).
func diffService(got, want model.ServiceSignals) string {
	var b strings.Builder
	if got.Target != want.Target || got.Source != want.Source || got.StartMs != want.StartMs || got.EndMs != want.EndMs {
		fmt.Fprintf(&b, "  target/source/window %s %s %d-%d, want %s %s %d-%d\n", got.Target, got.Source, got.StartMs, got.EndMs,
			want.Target, want.Source, want.StartMs, want.EndMs)
	}
	g, w := serviceValues(got), serviceValues(want)
	for _, k := range sortedKeys(w) {
		gv, wv := g[k], w[k]
		if gv.OK() != wv.OK() || gv.OK() && math.Abs(gv.V()-wv.V()) > 1e-9 {
			fmt.Fprintf(&b, "  %s: %v, want %v\n", k, gv, wv)
		}
	}
	return b.String()
}

// serviceValues are the numeric fields of ServiceSignals by name.
func serviceValues(s model.ServiceSignals) map[string]model.Value {
	return map[string]model.Value{
		"received/s": s.ReceivedPerS, "in flight": s.InFlight, "slots": s.Slots, "queue depth": s.QueueDepth,
		"queue limit": s.QueueLimit, "queue oldest age": s.QueueOldestAge, "queue wait p99": s.QueueWaitP99,
		"queue wait mean": s.QueueWaitMean, "service time p50": s.ServiceTimeP50, "service time p99": s.ServiceTimeP99,
		"success service time p50": s.SuccessServiceTimeP50, "success service time p99": s.SuccessServiceTimeP99,
		"error service time p50": s.ErrorServiceTimeP50, "error service time p99": s.ErrorServiceTimeP99,
		"2xx/s": s.Responses2xxPerS, "429/s": s.Responses429PerS, "503/s": s.Responses503PerS,
		"503 retry-after/s": s.Responses503RetryAfterPerS, "other 5xx/s": s.ResponsesOther5xxPerS, "5xx/s": s.Responses5xxPerS,
		"work after cancel/s": s.WorkAfterCancelPerS, "cancelled/s": s.CancelledPerS,
	}
}

// inc2s is a selector's counter expression at the tests' 2 s range.
func inc2s(sel string) string { return dialect.CounterExpr(sel, 2*time.Second) }
