package analysis

import (
	"math"
	"slices"
	"testing"

	"github.com/retrytop/retrytop/model"
)

const t0 = int64(1_700_000_000_000)

// fixture is one target, "svc", scraped every second for 30 s, with four
// dependencies:
//
//   - db: every contract family, linear counters (rates are the steps);
//   - cache: originals, attempts (success only) and active calls;
//   - auth: originals that appear at the last scrape only, and attempts;
//   - idle: originals and attempts that never move.
func fixture(tb testing.TB) *model.Store {
	db := func(rest ...string) []string { return append([]string{model.LabelDependency, "db"}, rest...) }
	hist := func(name, le, vals string, rest ...string) ts {
		return ts{name + "_bucket", db(append(rest, "le", le)...), vals}
	}
	series := []ts{
		{model.MetricOriginals, db("priority", "critical"), "0+6x30"},
		{model.MetricOriginals, db("priority", "batch"), "0+4x30"},
		{model.MetricAttempts, db("outcome", "success"), "0+9x30"},
		{model.MetricAttempts, db("outcome", "temporary_error"), "0+2x30"},
		{model.MetricAttempts, db("outcome", "permanent_error"), "0+1x30"},
		{model.MetricAttempts, db("outcome", "timeout"), "0+3x30"},
		{model.MetricRetries, db(), "0+5x30"},
		{model.MetricRescued, db(), "0+2x30"},
		{model.MetricBudgetDenied, db(), "0+1x30"},
		{model.MetricAdmissionRejected, db("reason", "queue", "priority", "critical"), "0+1x30"},
		{model.MetricAdmissionRejected, db("reason", "concurrency", "priority", "batch"), "0+2x30"},
		{model.MetricResults, db("result", "success", "priority", "critical"), "0+5x30"},
		{model.MetricResults, db("result", "success", "priority", "batch"), "0+3x30"},
		{model.MetricResults, db("result", "deadline_exhausted", "priority", "batch"), "0+1x30"},
		{model.MetricResults, db("result", "provider_error", "priority", "critical"), "0+1x30"},
		{model.MetricActiveCalls, db(), "2x29 7"},
		{model.MetricConcurrencyLimit, db(), "20x30"},
		{model.MetricBudgetBalance, db(), "200-1x30"},
		{model.MetricPolicyMaxAttempts, db(), "3x30"},
		{model.MetricPolicyDeadline, db(), "2.5x30"},
		// Pool wait, 120 observations: 30 <= 1 ms, 60 in (1, 10] ms,
		// 30 in (10, 100] ms.
		hist(model.MetricPoolWait, "0.001", "0+1x30"),
		hist(model.MetricPoolWait, "0.01", "0+3x30"),
		hist(model.MetricPoolWait, "0.1", "0+4x30"),
		hist(model.MetricPoolWait, "+Inf", "0+4x30"),
		// Request duration: success 150 <= 0.1 s and 90 in (0.1, 0.5];
		// fast_failure 60 <= 0.1 s; no failure series at all.
		hist(model.MetricRequestDuration, "0.1", "0+5x30", "result_class", "success"),
		hist(model.MetricRequestDuration, "0.5", "0+8x30", "result_class", "success"),
		hist(model.MetricRequestDuration, "1", "0+8x30", "result_class", "success"),
		hist(model.MetricRequestDuration, "+Inf", "0+8x30", "result_class", "success"),
		{model.MetricRequestDuration + "_sum", db("result_class", "success"), "0+1.5x30"},
		hist(model.MetricRequestDuration, "0.1", "0+2x30", "result_class", "fast_failure"),
		hist(model.MetricRequestDuration, "0.5", "0+2x30", "result_class", "fast_failure"),
		hist(model.MetricRequestDuration, "1", "0+2x30", "result_class", "fast_failure"),
		hist(model.MetricRequestDuration, "+Inf", "0+2x30", "result_class", "fast_failure"),
		// Backoff, 120 sleeps: 30 <= 25 ms, 30 in (25, 50], 60 in (50, 100].
		hist(model.MetricBackoff, "0.025", "0+1x30"),
		hist(model.MetricBackoff, "0.05", "0+2x30"),
		hist(model.MetricBackoff, "0.1", "0+4x30"),
		hist(model.MetricBackoff, "0.2", "0+4x30"),
		hist(model.MetricBackoff, "+Inf", "0+4x30"),

		{model.MetricOriginals, []string{"dependency", "cache"}, "100+1x30"},
		{model.MetricAttempts, []string{"dependency", "cache", "outcome", "success"}, "100+1x30"},
		{model.MetricActiveCalls, []string{"dependency", "cache", "pool", "a"}, "1x30"},
		{model.MetricActiveCalls, []string{"dependency", "cache", "pool", "b"}, "4x30"},

		{model.MetricOriginals, []string{"dependency", "auth"}, "_x30 1"},
		{model.MetricAttempts, []string{"dependency", "auth", "outcome", "success"}, "0+1x30"},

		{model.MetricOriginals, []string{"dependency", "idle"}, "0x30"},
		{model.MetricAttempts, []string{"dependency", "idle", "outcome", "success"}, "0x30"},

		// No dependency label: belongs to no row.
		{model.MetricOriginals, nil, "0+1x30"},
	}
	return load(tb, nil, "svc", every(t0, 1000, 31), series...)
}

// want lists expected signal values; absent (NaN) for Absent.
type want map[string]float64

func signalValues(s *model.Signals) map[string]model.Value {
	return map[string]model.Value{
		"originals": s.OriginalsPerS, "attempts": s.AttemptsPerS, "amplification": s.Amplification,
		"attempts_per_original": s.AttemptsPerOriginal, "completed": s.CompletedPerS, "admitted": s.AdmittedPerS,
		"retries": s.RetriesPerS, "rescued": s.RescuedPerS, "budget_denied": s.BudgetDeniedPerS,
		"admission_rejected": s.AdmissionRejectedPerS, "provider_errors": s.ProviderErrorsPerS,
		"temporary_errors": s.TemporaryErrorsPerS, "permanent_errors": s.PermanentErrorsPerS,
		"timeouts": s.TimeoutsPerS, "successes": s.SuccessesPerS, "deadline_exhausted": s.DeadlineExhaustedPerS,
		"effective_success": s.EffectiveSuccess, "attempt_success": s.AttemptSuccess,
		"active_calls": s.ActiveCalls, "concurrency_limit": s.ConcurrencyLimit,
		"pool_wait_p50": s.PoolWaitP50, "pool_wait_p99": s.PoolWaitP99,
		"backoff_p50": s.BackoffP50, "backoff_p99": s.BackoffP99,
		"budget_balance": s.BudgetBalance, "max_attempts": s.MaxAttempts, "deadline": s.DeadlineSeconds,
		"mixed_p50": s.MixedLatency.P50, "mixed_p90": s.MixedLatency.P90, "mixed_p99": s.MixedLatency.P99,
	}
}

// allAbsent is the expectation of a row without data.
func allAbsent() want {
	w := want{}
	for k := range signalValues(&model.Signals{}) {
		w[k] = absent
	}
	return w
}

func (w want) with(kv want) want {
	out := want{}
	for k, v := range w {
		out[k] = v
	}
	for k, v := range kv {
		out[k] = v
	}
	return out
}

func checkSignals(t *testing.T, s *model.Signals, w want) {
	t.Helper()
	vals := signalValues(s)
	for k, v := range w {
		got, ok := vals[k]
		if !ok {
			t.Fatalf("unknown signal %q", k)
		}
		checkValue(t, k, got, v)
	}
}

// TestMixedLatencyOfOneClass: a row whose only latency class is success
// mixes to that class's quantiles (120 requests in 30 s: 30 <= 0.1 s, 60
// in (0.1, 0.5], 30 above), and an empty one leaves the mix absent.
func TestMixedLatencyOfOneClass(t *testing.T) {
	h := func(dep, le, vals string) ts {
		return ts{model.MetricRequestDuration + "_bucket", []string{model.LabelDependency, dep, "result_class", "success", "le", le}, vals}
	}
	st := load(t, nil, "svc", every(t0, 1000, 31),
		h("db", "0.1", "0+1x30"), h("db", "0.5", "0+3x30"), h("db", "+Inf", "0+4x30"),
		h("idle", "0.1", "0x30"), h("idle", "+Inf", "0x30"))
	s := SignalsFor(st, "svc", "db", t0, t0+30000)
	checkSignals(t, &s, want{
		"mixed_p50": 0.1 + 0.4*30/60, // rank 60: 30 into (0.1, 0.5] holding 60
		"mixed_p90": 0.5,             // rank 108 in +Inf: the bound below
		"mixed_p99": 0.5,
	})
	if got, _ := s.Latency.Get(model.ClassSuccess); got != s.MixedLatency {
		t.Errorf("success %+v, mixed %+v: want the same", got, s.MixedLatency)
	}
	s = SignalsFor(st, "svc", "idle", t0, t0+30000)
	checkSignals(t, &s, want{"mixed_p50": absent, "mixed_p90": absent, "mixed_p99": absent})
}

func TestSignalsForAllFamilies(t *testing.T) {
	st := fixture(t)
	s := SignalsFor(st, "svc", "db", t0, t0+30000)
	if s.Target != "svc" || s.Dependency != "db" || s.StartMs != t0 || s.EndMs != t0+30000 {
		t.Errorf("identity = %q %q %d %d", s.Target, s.Dependency, s.StartMs, s.EndMs)
	}
	checkSignals(t, &s, want{
		"originals": 10,
		"attempts":  15,
		// Per admitted original: the success class (8/s) and no failure
		// series, fast failures (2/s) apart; 15 / 8.
		"amplification":         15.0 / 8,
		"attempts_per_original": 1.5,
		"completed":             10, // every result
		"admitted":              8,
		"retries":               5,
		"rescued":               2,
		"budget_denied":         1,
		"admission_rejected":    3,
		"provider_errors":       3, // temporary 2 + permanent 1; timeouts apart
		"temporary_errors":      2,
		"permanent_errors":      1,
		"timeouts":              3,
		"successes":             8,
		"deadline_exhausted":    1,
		"effective_success":     0.8, // 8 / 10
		"attempt_success":       0.6, // 9 / 15
		"active_calls":          7,   // newest scrape
		"concurrency_limit":     20,
		"budget_balance":        170,
		"max_attempts":          3,
		"deadline":              2.5,
		// rank 60 of 120: 30 into (0.001, 0.01] holding 60.
		"pool_wait_p50": 0.001 + 0.009*30/60,
		// rank 118.8: 28.8 into (0.01, 0.1] holding 30.
		"pool_wait_p99": 0.01 + 0.09*28.8/30,
		// rank 60 of 120: 30 into (0.025, 0.05] holding 30.
		"backoff_p50": 0.05,
		// rank 118.8: 58.8 into (0.05, 0.1] holding 60.
		"backoff_p99": 0.05 + 0.05*58.8/60,
		// All classes: 210 <= 0.1, 300 <= 0.5. p50 rank 150 of 300.
		"mixed_p50": 0.1 * 150 / 210,
		"mixed_p90": 0.1 + 0.4*60/90, // rank 270
		"mixed_p99": 0.1 + 0.4*87/90, // rank 297
	})

	wantBy := []model.Breakdown{
		{Key: "concurrency/batch", PerS: 2, Labels: model.LabelsFromPairs("reason", "concurrency", "priority", "batch")},
		{Key: "queue/critical", PerS: 1, Labels: model.LabelsFromPairs("reason", "queue", "priority", "critical")},
	}
	if !slices.EqualFunc(s.AdmissionRejectedBy, wantBy, func(a, b model.Breakdown) bool {
		return a.Key == b.Key && near(a.PerS, b.PerS) && a.Labels.Equal(b.Labels)
	}) {
		t.Errorf("AdmissionRejectedBy = %+v, want %+v", s.AdmissionRejectedBy, wantBy)
	}

	wantResults := map[string]float64{
		"success": 8, "deadline_exhausted": 1, "provider_error": 1,
		// In the contract but never counted: present zeros.
		"capacity_rejected": 0, "budget_exhausted": 0, "permanent_error": 0, "cancelled": 0,
	}
	if len(s.ResultsPerS) != len(wantResults) {
		t.Errorf("ResultsPerS = %v", s.ResultsPerS)
	}
	for k, v := range wantResults {
		checkValue(t, "results "+k, s.ResultsPerS[k], v)
	}

	if len(s.Latency) != 3 {
		t.Errorf("Latency classes = %v", s.Latency)
	}
	// success: 150 <= 0.1, 240 <= 0.5, none above.
	lat := s.Latency.At("success")
	checkValue(t, "success p50", lat.P50, 0.1*120/150)
	checkValue(t, "success p90", lat.P90, 0.1+0.4*66/90)
	checkValue(t, "success p99", lat.P99, 0.1+0.4*87.6/90)
	lat = s.Latency.At("fast_failure")
	checkValue(t, "fast_failure p50", lat.P50, 0.05)
	checkValue(t, "fast_failure p90", lat.P90, 0.09)
	checkValue(t, "fast_failure p99", lat.P99, 0.099)
	lat = s.Latency.At("failure")
	checkValue(t, "failure p50", lat.P50, absent)
	checkValue(t, "failure p99", lat.P99, absent)

	if s.LatencyHist.Has("failure") || len(s.LatencyHist) != 2 {
		t.Errorf("LatencyHist classes = %v", s.LatencyHist)
	}
	checkHistogram(t, s.LatencyHist.At("success"), model.HistogramWindow{
		Buckets: bk(0.1, 150, 0.5, 240, 1, 240, inf, 240), Count: 240, Sum: 45,
	})
}

func TestSignalsForAbsentAndZero(t *testing.T) {
	st := fixture(t)
	for _, tc := range []struct {
		name, dep  string
		start, end int64
		want       want
	}{
		{
			name: "few families", dep: "cache", start: t0, end: t0 + 30000,
			want: allAbsent().with(want{
				"originals": 1, "attempts": 1, "amplification": 1, "attempts_per_original": 1, "attempt_success": 1,
				// The attempts family is there: outcomes never counted are zero.
				"provider_errors": 0, "temporary_errors": 0, "permanent_errors": 0, "timeouts": 0,
				"active_calls": 5, // two label sets summed
			}),
		},
		{
			// originals appears at the last scrape of a target scraped all
			// along: its first value is an increase from 0.
			name: "series with a single sample", dep: "auth", start: t0, end: t0 + 30000,
			want: allAbsent().with(want{
				"originals": 1.0 / 30, "amplification": 30, "attempts_per_original": 30,
				"attempts": 1, "attempt_success": 1,
				"provider_errors": 0, "temporary_errors": 0, "permanent_errors": 0, "timeouts": 0,
			}),
		},
		{
			name: "nothing happened", dep: "idle", start: t0, end: t0 + 30000,
			want: allAbsent().with(want{
				"originals": 0, "attempts": 0,
				"provider_errors": 0, "temporary_errors": 0, "permanent_errors": 0, "timeouts": 0,
				// 0/0 has no meaning: absent, not zero and not NaN.
				"amplification": absent, "attempt_success": absent,
			}),
		},
		{name: "unknown dependency", dep: "nope", start: t0, end: t0 + 30000, want: allAbsent()},
		{name: "window before the data", dep: "db", start: t0 - 60000, end: t0 - 1, want: allAbsent()},
		{
			// One scrape in the window: gauges have their value, every
			// rate and quantile is absent.
			name: "window with one scrape", dep: "db", start: t0 + 29500, end: t0 + 30500,
			want: allAbsent().with(want{
				"active_calls": 7, "concurrency_limit": 20, "budget_balance": 170, "max_attempts": 3, "deadline": 2.5,
			}),
		},
		{
			name: "part of the window", dep: "db", start: t0 + 10000, end: t0 + 20000,
			want: want{
				"originals": 10, "attempts": 15, "amplification": 15.0 / 8, "attempts_per_original": 1.5, "active_calls": 2,
				"budget_balance": 180, "pool_wait_p50": 0.0055, "backoff_p50": 0.05,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := SignalsFor(st, "svc", tc.dep, tc.start, tc.end)
			checkSignals(t, &s, tc.want)
			if math.IsNaN(tc.want["originals"]) && s.ResultsPerS != nil {
				t.Errorf("ResultsPerS = %v, want nil", s.ResultsPerS)
			}
			if tc.dep != "db" && (s.Latency != nil || s.LatencyHist != nil || s.AdmissionRejectedBy != nil || s.ResultsPerS != nil) {
				t.Errorf("breakdowns of a dependency without those families: %+v", s)
			}
		})
	}
}

func TestSignalsForResetsGapsAndStaleness(t *testing.T) {
	dep := []string{model.LabelDependency, "db"}
	st := load(t, nil, "svc", every(t0, 1000, 11),
		// The target restarts after 5 s and is down for two scrapes:
		// 50 before, then 0 -> 10 after. Increase 50 + 0 + 10 over 10 s.
		ts{model.MetricOriginals, dep, "0+10x5 _ _ 0+5x2"},
		ts{model.MetricAttempts, append(dep, "outcome", "success"), "0+10x5 _ _ 0+5x2"},
		// The limit was removed (unlimited) 2 s before the end: absent,
		// never its last value.
		ts{model.MetricConcurrencyLimit, dep, "8x8 _ _"},
		// Active calls went missing at the newest scrape only.
		ts{model.MetricActiveCalls, dep, "3x9 _"},
		ts{model.MetricBudgetBalance, dep, "10x10"},
	)
	s := SignalsFor(st, "svc", "db", t0, t0+10000)
	checkSignals(t, &s, want{
		"originals": 6, "attempts": 6, "amplification": 1,
		"concurrency_limit": absent, "active_calls": absent, "budget_balance": 10,
	})
	// Up to 8 s the limit is there.
	s = SignalsFor(st, "svc", "db", t0, t0+8000)
	checkSignals(t, &s, want{"concurrency_limit": 8, "active_calls": 3})
}

func TestDependencies(t *testing.T) {
	st := fixture(t)
	load(t, st, "other", every(t0, 1000, 2),
		ts{model.MetricAttemptDuration + "_count", []string{"dependency", "only-histogram", "outcome", "success"}, "1 2"},
		ts{model.MetricPolicyDeadline, []string{"dependency", "gauge-only"}, "1 1"},
		ts{"unrelated_total", []string{"dependency", "not-contract"}, "1 2"},
	)
	if got, want := Dependencies(st, "svc"), []string{"auth", "cache", "db", "idle"}; !slices.Equal(got, want) {
		t.Errorf("Dependencies(svc) = %v, want %v", got, want)
	}
	if got, want := Dependencies(st, "other"), []string{"gauge-only", "only-histogram"}; !slices.Equal(got, want) {
		t.Errorf("Dependencies(other) = %v, want %v", got, want)
	}
	if got := Dependencies(st, "missing"); len(got) != 0 {
		t.Errorf("Dependencies(missing) = %v", got)
	}
}

func TestSignalsForJitteredScrapes(t *testing.T) {
	// Scrapes 1 s apart give or take 100 ms; the counter grows 7 per
	// second of real time. The rate is exact over the scrapes in the window.
	times := []int64{t0, t0 + 1100, t0 + 1950, t0 + 3080, t0 + 4000, t0 + 4900}
	var vals string
	for _, tm := range times {
		vals += " " + fmtFloat(float64(tm-t0)*7/1000)
	}
	st := load(t, nil, "svc", times, ts{model.MetricOriginals, []string{"dependency", "db"}, vals})
	s := SignalsFor(st, "svc", "db", t0+500, t0+5000)
	checkValue(t, "originals", s.OriginalsPerS, 7)
	if math.IsNaN(s.OriginalsPerS.V()) {
		t.Fatal("NaN")
	}
}

func fmtFloat(v float64) string { return model.FormatFloat(v) }

// Attempts without an outcome label (Envoy, HAProxy) give attempts/s but
// leave the outcome signals absent rather than a made-up 0.
func TestAttemptsWithoutOutcomeLeaveErrorsAbsent(t *testing.T) {
	times := every(1_000_000, 1000, 11)
	st := load(t, nil, "edge", times,
		ts{model.MetricOriginals, []string{model.LabelDependency, "svc"}, "0+10x10"},
		ts{model.MetricAttempts, []string{model.LabelDependency, "svc"}, "0+12x10"},
	)
	s := SignalsFor(st, "edge", "svc", times[0], times[10])
	checkValue(t, "attempts", s.AttemptsPerS, 12)
	checkValue(t, "provider errors", s.ProviderErrorsPerS, absent)
	checkValue(t, "timeouts", s.TimeoutsPerS, absent)
	checkValue(t, "attempt success", s.AttemptSuccess, absent)
}
