package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// setters name the signals that sig and tline fill.
var setters = map[string]func(s *model.Signals, v float64){
	"originals": func(s *model.Signals, v float64) { s.OriginalsPerS = model.Some(v) },
	"attempts":  func(s *model.Signals, v float64) { s.AttemptsPerS = model.Some(v) },
	"retries":   func(s *model.Signals, v float64) { s.RetriesPerS = model.Some(v) },
	"errors":    func(s *model.Signals, v float64) { s.ProviderErrorsPerS = model.Some(v) },
	"timeouts":  func(s *model.Signals, v float64) { s.TimeoutsPerS = model.Some(v) },
	"successes": func(s *model.Signals, v float64) {
		s.SuccessesPerS = model.Some(v)
		setResult(s, model.ResultSuccess, v)
	},
	"budget_denied":     func(s *model.Signals, v float64) { s.BudgetDeniedPerS = model.Some(v) },
	"balance":           func(s *model.Signals, v float64) { s.BudgetBalance = model.Some(v) },
	"admission":         func(s *model.Signals, v float64) { s.AdmissionRejectedPerS = model.Some(v) },
	"capacity_rejected": func(s *model.Signals, v float64) { setResult(s, model.ResultCapacityRejected, v) },
	"budget_exhausted":  func(s *model.Signals, v float64) { setResult(s, model.ResultBudgetExhausted, v) },
	"active":            func(s *model.Signals, v float64) { s.ActiveCalls = model.Some(v) },
	"active_change":     func(s *model.Signals, v float64) { s.ActiveCallsChangePerS = model.Some(v) },
	"completed":         func(s *model.Signals, v float64) { s.CompletedPerS = model.Some(v) },
	"limit":             func(s *model.Signals, v float64) { s.ConcurrencyLimit = model.Some(v) },
	"pool_p99":          func(s *model.Signals, v float64) { s.PoolWaitP99 = model.Some(v) },
	"max_attempts":      func(s *model.Signals, v float64) { s.MaxAttempts = model.Some(v) },
	"success_p50": func(s *model.Signals, v float64) {
		setLatency(s, model.ClassSuccess, func(q *model.Quantiles) { q.P50 = model.Some(v) })
	},
	"success_p99": func(s *model.Signals, v float64) {
		setLatency(s, model.ClassSuccess, func(q *model.Quantiles) { q.P99 = model.Some(v) })
	},
	"fast_p99": func(s *model.Signals, v float64) {
		setLatency(s, model.ClassFastFailure, func(q *model.Quantiles) { q.P99 = model.Some(v) })
	},
	"mixed_p99": func(s *model.Signals, v float64) { s.MixedLatency.P99 = model.Some(v) },
	"success_count": func(s *model.Signals, v float64) {
		setHist(s, model.ClassSuccess, func(h *model.HistogramWindow) { h.Count = v })
	},
	"success_sum": func(s *model.Signals, v float64) {
		setHist(s, model.ClassSuccess, func(h *model.HistogramWindow) { h.Sum = v })
	},
	"fast_count": func(s *model.Signals, v float64) {
		setHist(s, model.ClassFastFailure, func(h *model.HistogramWindow) { h.Count = v })
	},
	"failure_count": func(s *model.Signals, v float64) {
		setHist(s, model.ClassFailure, func(h *model.HistogramWindow) { h.Count = v })
	},
	"service_p50":   func(s *model.Signals, v float64) { s.DependencyServiceTimeP50 = model.Some(v) },
	"received":      func(s *model.Signals, v float64) { s.DependencyReceivedPerS = model.Some(v) },
	"wac":           func(s *model.Signals, v float64) { s.DependencyWorkAfterCancelPerS = model.Some(v) },
	"amplification": func(s *model.Signals, v float64) { s.Amplification = model.Some(v) },
	"effective":     func(s *model.Signals, v float64) { s.EffectiveSuccess = model.Some(v) },
}

func setResult(s *model.Signals, r string, v float64) {
	if s.ResultsPerS == nil {
		s.ResultsPerS = map[string]model.Value{}
	}
	s.ResultsPerS[r] = model.Some(v)
}

func setLatency(s *model.Signals, class string, f func(*model.Quantiles)) {
	if s.Latency == nil {
		s.Latency = model.ClassesOf(map[string]model.Quantiles{})
	}
	q := s.Latency.At(class)
	f(&q)
	s.Latency.Set(class, q)
}

func setHist(s *model.Signals, class string, f func(*model.HistogramWindow)) {
	if s.LatencyHist == nil {
		s.LatencyHist = model.ClassesOf(map[string]model.HistogramWindow{})
	}
	h := s.LatencyHist.At(class)
	f(&h)
	s.LatencyHist.Set(class, h)
}

// derive fills amplification and effective success from the rates, unless
// they were given.
func derive(s *model.Signals, given map[string]bool) {
	if !given["amplification"] {
		s.Amplification = ratio(s.AttemptsPerS, s.OriginalsPerS)
	}
	if !given["effective"] {
		s.EffectiveSuccess = ratio(s.SuccessesPerS, s.OriginalsPerS)
	}
}

// sig builds one row over a 30 s window from "name=value" pairs, e.g.
// sig(t, "client>provider", "originals=50 attempts=120").
func sig(tb testing.TB, hop, spec string) model.Signals {
	tb.Helper()
	target, dep, _ := strings.Cut(hop, ">")
	s := model.Signals{Target: target, Dependency: dep, StartMs: t0, EndMs: t0 + 30000}
	given := map[string]bool{}
	for _, kv := range strings.Fields(spec) {
		k, v, ok := strings.Cut(kv, "=")
		set := setters[k]
		f, err := strconv.ParseFloat(v, 64)
		if !ok || set == nil || err != nil {
			tb.Fatalf("bad signal %q", kv)
		}
		set(&s, f)
		given[k] = true
	}
	derive(&s, given)
	return s
}

// tline builds a timeline of 10 s bins from t0: each signal's values per
// bin in the compact series notation ("50x5 20" is six bins; "_" absent).
func tline(tb testing.TB, hop string, spec map[string]string) []model.Signals {
	tb.Helper()
	target, dep, _ := strings.Cut(hop, ">")
	vals := map[string][]float64{}
	n := 0
	for k, v := range spec {
		if setters[k] == nil {
			tb.Fatalf("unknown signal %q", k)
		}
		vals[k] = expand(tb, v)
		n = max(n, len(vals[k]))
	}
	out := make([]model.Signals, n)
	for i := range out {
		s := model.Signals{Target: target, Dependency: dep, StartMs: t0 + int64(i)*10000, EndMs: t0 + int64(i+1)*10000}
		given := map[string]bool{}
		for k, vs := range vals {
			if i < len(vs) && !math.IsNaN(vs[i]) {
				setters[k](&s, vs[i])
				given[k] = true
			}
		}
		derive(&s, given)
		out[i] = s
	}
	return out
}

func findCode(fs []Finding, code string) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Code == code {
			out = append(out, f)
		}
	}
	return out
}

// checkEvidence compares evidence with wanted values; absent (NaN) means
// the name must not be there.
func checkEvidence(t *testing.T, f Finding, w want) {
	t.Helper()
	for k, v := range w {
		got, ok := f.Evidence.Get(k)
		switch {
		case math.IsNaN(v) && ok:
			t.Errorf("%s evidence %s = %v, want none", f.Code, k, got)
		case !math.IsNaN(v) && !ok:
			t.Errorf("%s evidence %s missing (have %v)", f.Code, k, f.Evidence)
		case !math.IsNaN(v) && !near(got, v):
			t.Errorf("%s evidence %s = %v, want %v", f.Code, k, got, v)
		}
	}
}

type ruleCase struct {
	name   string
	rows   []model.Signals
	tls    []([]model.Signals) // timelines, keyed by their rows' keys
	chains []Chain             // nil: inferred
	code   string
	sev    Severity // 0: the code must not fire
	hop    string   // target>dependency of the finding
	ev     want
	msg    string // a substring of the message
}

func runRuleCase(t *testing.T, tc ruleCase) {
	t.Helper()
	th := DefaultThresholds()
	frame := model.Frame{Rows: tc.rows, Timelines: map[model.Key]*model.Timeline{}}
	for _, tl := range tc.tls {
		frame.Timelines[tl[0].Key()] = model.NewTimeline(tl)
	}
	fs := Evaluate(frame, EvaluateChains(tc.rows, tc.chains, th.Gap), th)
	got := findCode(fs, tc.code)
	if tc.sev == 0 {
		if len(got) != 0 {
			t.Fatalf("unexpected %s: %+v", tc.code, got)
		}
		return
	}
	if len(got) != 1 {
		t.Fatalf("%d %s findings, want 1; all: %+v", len(got), tc.code, fs)
	}
	f := got[0]
	if f.Severity != tc.sev {
		t.Errorf("severity = %v, want %v (%s)", f.Severity, tc.sev, f.Message)
	}
	if h := f.Target + ">" + f.Dependency; tc.hop != "" && h != tc.hop {
		t.Errorf("finding on %s, want %s", h, tc.hop)
	}
	if !strings.Contains(f.Message, tc.msg) {
		t.Errorf("message %q does not contain %q", f.Message, tc.msg)
	}
	checkEvidence(t, f, tc.ev)
	if len(f.Evidence) == 0 || f.Message == "" {
		t.Errorf("finding without evidence or message: %+v", f)
	}
}

func TestRetryAmplification(t *testing.T) {
	slowTL := func(t *testing.T) []model.Signals {
		return tline(t, "client>provider", map[string]string{"originals": "50x3", "success_p50": "0.05 0.06 0.05 0.3"})
	}
	for _, tc := range []ruleCase{
		{
			name: "errors and timeouts", code: CodeRetryAmplification, sev: SeverityCritical, hop: "client>provider",
			rows: []model.Signals{sig(t, "client>provider", "originals=50 attempts=120 errors=10 timeouts=30")},
			ev: want{"amplification": 2.4, "originals_per_s": 50, "attempts_per_s": 120, "provider_errors_per_s": 10,
				"timeouts_per_s": 30, "failure_share": 40.0 / 120, "baseline_success_p50_s": absent},
			msg: "2.40 attempts per admitted original",
		},
		{
			name: "latency rising", code: CodeRetryAmplification, sev: SeverityWarning, hop: "client>provider",
			rows: []model.Signals{sig(t, "client>provider", "originals=50 attempts=70 errors=0 timeouts=1 success_p50=0.3")},
			tls:  [][]model.Signals{slowTL(t)},
			ev:   want{"amplification": 1.4, "failure_share": 1.0 / 70, "success_p50_s": 0.3, "baseline_success_p50_s": 0.05},
			msg:  "success p50 rose 50ms -> 300ms",
		},
		{
			name: "amplification below threshold", code: CodeRetryAmplification,
			rows: []model.Signals{sig(t, "client>provider", "originals=50 attempts=57.5 errors=20 timeouts=20")},
		},
		{
			name: "amplified without stress", code: CodeRetryAmplification,
			rows: []model.Signals{sig(t, "client>provider", "originals=50 attempts=75 errors=1 timeouts=1 success_p50=0.09")},
			tls:  [][]model.Signals{slowTL(t)},
		},
		{
			name: "too little traffic", code: CodeRetryAmplification,
			rows: []model.Signals{sig(t, "client>provider", "originals=0.5 attempts=1.5 errors=1")},
		},
		{
			// 4x its baseline, but only 3 ms above it.
			name: "tiny latency rise", code: CodeRetryAmplification,
			rows: []model.Signals{sig(t, "client>provider", "originals=50 attempts=75 errors=0 timeouts=0 success_p50=0.004")},
			tls:  [][]model.Signals{tline(t, "client>provider", map[string]string{"success_p50": "0.001 0.004"})},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runRuleCase(t, tc) })
	}
}

func TestMultipleRetryLayers(t *testing.T) {
	r := func(hop string, o, a, m float64) model.Signals {
		return sig(t, hop, fmt.Sprintf("originals=%v attempts=%v retries=%v max_attempts=%v", o, a, a-o, m))
	}
	for _, tc := range []ruleCase{
		{
			name: "three layers retry", code: CodeMultipleRetryLayers, sev: SeverityWarning, hop: "browser>provider",
			rows: []model.Signals{r("browser>app", 50, 60, 3), r("app>client", 60, 90, 3), r("client>provider", 90, 180, 3)},
			ev: want{"retrying_hops": 3, "configured_retry_hops": 3, "end_to_end_amplification": 3.6,
				"product_amplification": 3.6, "worst_case_amplification": 27,
				"retries_per_s.browser": 10, "retries_per_s.app": 30, "retries_per_s.client": 90},
			msg: "worst case 27 attempts per user action",
		},
		{
			name: "configured at three, retrying at one", code: CodeMultipleRetryLayers, sev: SeverityInfo,
			rows: []model.Signals{r("browser>app", 50, 50, 3), r("app>client", 50, 50, 3), r("client>provider", 50, 75, 3)},
			ev:   want{"retrying_hops": 1, "configured_retry_hops": 3, "worst_case_amplification": 27, "retries_per_s.client": 25},
			msg:  "configured to retry",
		},
		{
			name: "one retry owner", code: CodeMultipleRetryLayers,
			rows: []model.Signals{r("browser>app", 50, 50, 1), r("app>client", 50, 50, 1), r("client>provider", 50, 150, 3)},
		},
		{
			// 0.5 retries/s on 50 originals is below the 2 % share.
			name: "a trickle is not a retry layer", code: CodeMultipleRetryLayers,
			rows: []model.Signals{
				sig(t, "browser>app", "originals=50 attempts=50.5 retries=0.5"),
				r("app>client", 50.5, 50.5, 1), r("client>provider", 50.5, 150, 3)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runRuleCase(t, tc) })
	}
}

func TestGapFindings(t *testing.T) {
	for _, tc := range []ruleCase{
		{
			name: "hidden layer tripling", code: CodeHiddenRetries, sev: SeverityCritical, hop: "client>provider",
			rows: []model.Signals{sig(t, "client>provider", "originals=50 attempts=60 received=180")},
			ev: want{"gap_per_s": 120, "sent_per_s": 60, "arrived_per_s": 180, "relative": 2, "factor": 3,
				"tolerance_per_s": 9.5},
			msg: "provider received 180.0/s but its visible callers sent 60.0/s",
		},
		{
			name: "hidden layer adding half", code: CodeHiddenRetries, sev: SeverityWarning, hop: "app>client",
			rows: []model.Signals{sig(t, "app>client", "originals=50 attempts=50"), sig(t, "client>provider", "originals=75 attempts=75")},
			ev:   want{"gap_per_s": 25, "factor": 1.5, "relative": 0.5},
		},
		{
			name: "hidden within tolerance", code: CodeHiddenRetries,
			rows: []model.Signals{sig(t, "client>provider", "originals=50 attempts=60 received=69")},
		},
		{
			name: "loss", code: CodeHopLoss, sev: SeverityWarning, hop: "browser>app",
			rows: []model.Signals{sig(t, "browser>app", "originals=50 attempts=50"), sig(t, "app>client", "originals=40 attempts=40")},
			ev:   want{"gap_per_s": -10, "sent_per_s": 50, "arrived_per_s": 40, "relative": -0.2, "factor": 0.8, "tolerance_per_s": 8},
			msg:  "10.0/s (20%) lost",
		},
		{
			name: "loss within tolerance", code: CodeHopLoss,
			rows: []model.Signals{sig(t, "browser>app", "originals=50 attempts=50"), sig(t, "app>client", "originals=47.5 attempts=47.5")},
		},
		// A storm: app's work in flight grows. browser started 130
		// attempts/s (100 ended, its active calls grew by 30/s) and app
		// started 130 operations/s, of which 80 ended. Attempts ended
		// against operations ended read 20/s lost (tolerance 15.5).
		{
			name: "storm counted when calls start", code: CodeHopLoss,
			rows: []model.Signals{sig(t, "browser>app", "originals=100 attempts=100 active_change=30"),
				sig(t, "app>client", "originals=130 attempts=130 completed=80")},
		},
		// Without active calls: 130 ended against 80 ended, the 50/s
		// app's work in flight grew by is allowed for (tolerance 20 + 50).
		{
			name: "storm counted when calls end", code: CodeHopLoss,
			rows: []model.Signals{sig(t, "browser>app", "originals=130 attempts=130"),
				sig(t, "app>client", "originals=130 attempts=130 completed=80")},
		},
		// The same with 30/s more lost than in flight: 130 sent, 50 ended,
		// 80 started (in flight +30): 80 short, 20 + 30 allowed.
		{
			name: "loss beyond the work in flight", code: CodeHopLoss, sev: SeverityWarning, hop: "browser>app",
			rows: []model.Signals{sig(t, "browser>app", "originals=130 attempts=130"),
				sig(t, "app>client", "originals=80 attempts=80 completed=50")},
			ev: want{"gap_per_s": -80, "sent_per_s": 130, "arrived_per_s": 50, "tolerance_per_s": 50, "in_flight_per_s": 30},
		},
		{
			name: "loss counted when calls start", code: CodeHopLoss, sev: SeverityWarning, hop: "browser>app",
			rows: []model.Signals{sig(t, "browser>app", "originals=100 attempts=100 active_change=30"),
				sig(t, "app>client", "originals=100 attempts=100 completed=100")},
			ev: want{"gap_per_s": -30, "sent_per_s": 130, "arrived_per_s": 100, "tolerance_per_s": 20,
				"active_change_per_s": 30, "in_flight_per_s": math.NaN()},
		},
		{
			name: "loss counted when calls end", code: CodeHopLoss, sev: SeverityWarning, hop: "browser>app",
			rows: []model.Signals{sig(t, "browser>app", "originals=130 attempts=130"),
				sig(t, "app>client", "originals=80 attempts=80 completed=80")},
			ev: want{"gap_per_s": -50, "sent_per_s": 130, "arrived_per_s": 80, "tolerance_per_s": 20,
				"in_flight_per_s": math.NaN(), "active_change_per_s": math.NaN()},
		},
		// The provider counts requests when they arrive: against the 60
		// attempts/s client started (50 ended, 10 more in flight), not the
		// 50 that ended (a gap of 10 over a tolerance of 8).
		{
			name: "received against attempts started", code: CodeHiddenRetries,
			rows: []model.Signals{sig(t, "client>provider", "originals=50 attempts=50 active_change=10 received=60")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runRuleCase(t, tc) })
	}

	// Thresholds filter the chain results again.
	rows := []model.Signals{sig(t, "client>provider", "originals=50 attempts=60 received=70")}
	th := DefaultThresholds()
	chains := EvaluateChains(rows, nil, th.Gap)
	if got := findCode(Evaluate(model.Frame{Rows: rows}, chains, th), CodeHiddenRetries); len(got) != 1 {
		t.Fatalf("default: %+v", got)
	}
	th.Gap.Relative = 0.5
	if got := findCode(Evaluate(model.Frame{Rows: rows}, chains, th), CodeHiddenRetries); len(got) != 0 {
		t.Errorf("a looser tolerance still reports %+v", got)
	}
}

func TestBudgetExhausted(t *testing.T) {
	for _, tc := range []ruleCase{
		{
			name: "denials while empty", code: CodeBudgetExhausted, sev: SeverityWarning, hop: "client>provider",
			rows: []model.Signals{sig(t, "client>provider", "originals=50 budget_denied=5 balance=0 budget_exhausted=5")},
			ev:   want{"budget_denied_per_s": 5, "budget_balance": 0, "denied_share": 0.1, "budget_exhausted_per_s": 5, "originals_per_s": 50},
			msg:  "retry budget empty (balance 0): 5.0/s retries denied, 10% of originals",
		},
		{
			name: "a few denials near zero", code: CodeBudgetExhausted, sev: SeverityInfo,
			rows: []model.Signals{sig(t, "client>provider", "originals=50 budget_denied=1 balance=0.5")},
			ev:   want{"budget_denied_per_s": 1, "budget_balance": 0.5, "denied_share": 0.02, "budget_exhausted_per_s": absent},
		},
		{
			name: "no balance exported", code: CodeBudgetExhausted, sev: SeverityWarning,
			rows: []model.Signals{sig(t, "client>provider", "originals=50 budget_denied=5")},
			ev:   want{"budget_denied_per_s": 5, "budget_balance": absent},
			msg:  "no balance exported",
		},
		{
			name: "balance left", code: CodeBudgetExhausted,
			rows: []model.Signals{sig(t, "client>provider", "originals=50 budget_denied=5 balance=12")},
		},
		{
			name: "negligible denials", code: CodeBudgetExhausted,
			rows: []model.Signals{sig(t, "client>provider", "originals=50 budget_denied=0.05 balance=0")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runRuleCase(t, tc) })
	}
}

func TestAdmissionShedding(t *testing.T) {
	shed := sig(t, "client>provider", "originals=50 admission=6 capacity_rejected=5.5")
	shed.AdmissionRejectedBy = []model.Breakdown{
		{Key: "concurrency/critical", PerS: 0.5, Labels: model.LabelsFromPairs("reason", "concurrency", "priority", "critical")},
		{Key: "concurrency/sheddable", PerS: 5, Labels: model.LabelsFromPairs("reason", "concurrency", "priority", "sheddable")},
		{Key: "queue/sheddable", PerS: 0.5}, // no labels: the key tells the priority
	}
	for _, tc := range []ruleCase{
		{
			name: "shedding", code: CodeAdmissionShedding, sev: SeverityInfo, hop: "client>provider",
			rows: []model.Signals{shed},
			ev: want{"admission_rejected_per_s": 6, "share_of_originals": 0.11, "capacity_rejected_per_s": 5.5,
				"rejected_per_s.critical": 0.5, "rejected_per_s.sheddable": 5.5},
			msg: "11% of originals (6.0/s rejected); shed: sheddable 5.5/s, critical 0.5/s; protection working",
		},
		{
			name: "without results, rejections over originals", code: CodeAdmissionShedding, sev: SeverityInfo,
			rows: []model.Signals{sig(t, "client>provider", "originals=50 admission=5")},
			ev:   want{"share_of_originals": 0.1, "capacity_rejected_per_s": absent},
		},
		{
			name: "nothing shed", code: CodeAdmissionShedding,
			rows: []model.Signals{sig(t, "client>provider", "originals=50 admission=0 capacity_rejected=0")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runRuleCase(t, tc) })
	}
}

func TestPoolSaturation(t *testing.T) {
	for _, tc := range []ruleCase{
		{
			name: "at the limit, wait high", code: CodePoolSaturation, sev: SeverityWarning, hop: "client>provider",
			rows: []model.Signals{sig(t, "client>provider", "active=4 limit=4 pool_p99=0.08")},
			ev:   want{"active_calls": 4, "concurrency_limit": 4, "utilisation": 1, "pool_wait_p99_s": 0.08, "baseline_pool_wait_p99_s": absent},
			msg:  "4 of 4 slots busy and pool wait p99 80ms",
		},
		{
			name: "near the limit, wait rising", code: CodePoolSaturation, sev: SeverityWarning,
			rows: []model.Signals{sig(t, "client>provider", "active=19 limit=20 pool_p99=0.03")},
			tls:  [][]model.Signals{tline(t, "client>provider", map[string]string{"pool_p99": "0.002 0.003 0.03"})},
			ev:   want{"utilisation": 0.95, "pool_wait_p99_s": 0.03, "baseline_pool_wait_p99_s": 0.002},
		},
		{
			name: "at the limit, wait flat", code: CodePoolSaturation,
			rows: []model.Signals{sig(t, "client>provider", "active=4 limit=4 pool_p99=0.01")},
			tls:  [][]model.Signals{tline(t, "client>provider", map[string]string{"pool_p99": "0.008 0.01"})},
		},
		{
			name: "wait high, pool not full", code: CodePoolSaturation,
			rows: []model.Signals{sig(t, "client>provider", "active=2 limit=4 pool_p99=0.5")},
		},
		{
			name: "unlimited", code: CodePoolSaturation,
			rows: []model.Signals{sig(t, "client>provider", "active=200 pool_p99=0.5")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runRuleCase(t, tc) })
	}
}

func TestCapacityShortfall(t *testing.T) {
	for _, tc := range []ruleCase{
		{
			// (40 admitted + 12 refused) x 0.13 s mean = 6.76 slots.
			name: "shedding hides the demand", code: CodeCapacityShortfall, sev: SeverityWarning, hop: "client>provider",
			rows: []model.Signals{sig(t, "client>provider", "attempts=40 admission=12 limit=4 success_count=100 success_sum=13 success_p50=0.1")},
			ev: want{"needed_slots": 6.76, "concurrency_limit": 4, "arrival_per_s": 52, "attempts_per_s": 40,
				"admission_rejected_per_s": 12, "latency_s": 0.13},
			msg: "needs 7 slots, has 4",
		},
		{
			// The seed's numbers: 100/s x 2 s = 200 slots for a pool of 50.
			name: "slow provider, p50", code: CodeCapacityShortfall, sev: SeverityCritical,
			rows: []model.Signals{sig(t, "client>provider", "attempts=100 limit=50 success_p50=2")},
			ev:   want{"needed_slots": 200, "latency_s": 2, "admission_rejected_per_s": absent},
			msg:  "2s p50",
		},
		{
			name: "enough slots", code: CodeCapacityShortfall,
			rows: []model.Signals{sig(t, "client>provider", "attempts=50 limit=4 success_count=500 success_sum=10")},
		},
		{
			name: "no limit", code: CodeCapacityShortfall,
			rows: []model.Signals{sig(t, "client>provider", "attempts=100 success_p50=2")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runRuleCase(t, tc) })
	}
}

func TestMisleadingLatency(t *testing.T) {
	for _, tc := range []ruleCase{
		{
			name: "fast failures dominate", code: CodeMisleadingLatency, sev: SeverityWarning, hop: "client>provider",
			rows: []model.Signals{sig(t, "client>provider",
				"originals=50 mixed_p99=0.004 success_p99=0.4 fast_p99=0.002 success_count=30 fast_count=70")},
			ev:  want{"mixed_p99_s": 0.004, "success_p99_s": 0.4, "ratio": 0.01, "fast_failure_share": 0.7, "fast_failure_p99_s": 0.002},
			msg: "mixed p99 4ms looks fine but success p99 is 400ms: 70% of operations",
		},
		{
			name: "mixed close to success", code: CodeMisleadingLatency,
			rows: []model.Signals{sig(t, "client>provider",
				"originals=50 mixed_p99=0.35 success_p99=0.4 success_count=90 fast_count=10")},
		},
		{
			name: "few fast failures", code: CodeMisleadingLatency,
			rows: []model.Signals{sig(t, "client>provider",
				"originals=50 mixed_p99=0.1 success_p99=0.4 success_count=90 fast_count=5 failure_count=5")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runRuleCase(t, tc) })
	}
}

func TestWorkAfterCancel(t *testing.T) {
	for _, tc := range []ruleCase{
		{
			// Both callers carry the provider's numbers: one finding, on
			// the caller that timed out most.
			name: "provider ignores cancel", code: CodeWorkAfterCancel, sev: SeverityWarning, hop: "client>provider",
			rows: []model.Signals{
				sig(t, "batch>provider", "originals=5 attempts=5 timeouts=5 wac=12 received=150"),
				sig(t, "client>provider", "originals=100 attempts=145 timeouts=40 wac=12 received=150"),
			},
			ev:  want{"work_after_cancel_per_s": 12, "dependency_received_per_s": 150, "share_of_received": 0.08, "caller_timeouts_per_s": 40},
			msg: "provider still finishes 12.0/s of requests its callers gave up on (8% of what it received)",
		},
		{
			// A few requests finish as their caller gives up: a race,
			// not a provider that ignores cancellation.
			name: "a trickle of races", code: CodeWorkAfterCancel,
			rows: []model.Signals{sig(t, "client>provider", "originals=100 attempts=290 timeouts=200 wac=1.4 received=550")},
		},
		{
			name: "no received rate: the rate alone decides", code: CodeWorkAfterCancel, sev: SeverityWarning,
			rows: []model.Signals{sig(t, "client>provider", "originals=100 attempts=290 timeouts=200 wac=1.4")},
			ev:   want{"work_after_cancel_per_s": 1.4, "share_of_received": absent, "dependency_received_per_s": absent},
		},
		{
			name: "provider stops on cancel", code: CodeWorkAfterCancel,
			rows: []model.Signals{sig(t, "client>provider", "originals=50 attempts=50 timeouts=10 wac=0 received=50")},
		},
		{
			name: "no provider metrics", code: CodeWorkAfterCancel,
			rows: []model.Signals{sig(t, "client>provider", "originals=50 attempts=50 timeouts=10")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runRuleCase(t, tc) })
	}
}

func TestSeverity(t *testing.T) {
	for _, s := range []Severity{SeverityInfo, SeverityWarning, SeverityCritical} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Severity
		if err := json.Unmarshal(b, &back); err != nil || back != s || string(b) != `"`+s.String()+`"` {
			t.Errorf("%v: %s -> %v %v", s, b, back, err)
		}
	}
	if s, err := ParseSeverity("WARNING"); err != nil || s != SeverityWarning {
		t.Errorf("ParseSeverity = %v %v", s, err)
	}
	if _, err := ParseSeverity("fatal"); err == nil {
		t.Error("ParseSeverity(fatal) succeeded")
	}
	if _, err := json.Marshal(Severity(0)); err == nil {
		t.Error("zero severity marshalled")
	}
	if !(SeverityInfo < SeverityWarning && SeverityWarning < SeverityCritical) {
		t.Error("severities out of order")
	}
}

func TestFindingJSON(t *testing.T) {
	f := Finding{
		Code: CodeHiddenRetries, Severity: SeverityCritical, Target: "client", Dependency: "provider",
		Message:  "m",
		Evidence: Evidence{{"gap_per_s", 120}, {"arrived_per_s", 180}, {"relative", 2.5e-7}},
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"code":"HIDDEN_RETRIES","severity":"critical","target":"client","dependency":"provider","message":"m",` +
		`"evidence":{"gap_per_s":120,"arrived_per_s":180,"relative":2.5e-07}}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant %s", b, want)
	}
	var back Finding
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, f) {
		t.Errorf("round trip = %+v %v", back, err)
	}
	f.Start, f.End = msTime(t0), msTime(t0+30000)
	b, _ = json.Marshal(f)
	if !strings.Contains(string(b), `"start":"2023-11-14T22:13:20Z","end":"2023-11-14T22:13:50Z"`) {
		t.Errorf("times: %s", b)
	}
	// Non-finite values never get in.
	var e Evidence
	e.add("nan", math.NaN())
	e.add("inf", math.Inf(1))
	e.addValue("absent", model.Absent)
	if len(e) != 0 {
		t.Errorf("evidence = %v", e)
	}
	// One built by hand still marshals, as Prometheus' API writes it.
	ib, ierr := json.Marshal(Evidence{{"x", math.Inf(1)}, {"y", math.Inf(-1)}})
	if ierr != nil || string(ib) != `{"x":"+Inf","y":"-Inf"}` {
		t.Errorf("infinite evidence: %s, %v", ib, ierr)
	}
	var iback Evidence
	if err := json.Unmarshal(ib, &iback); err != nil || len(iback) != 2 || !math.IsInf(iback[0].Value, 1) || !math.IsInf(iback[1].Value, -1) {
		t.Errorf("round trip: %v, %v", iback, err)
	}
}

func TestEvaluateOrder(t *testing.T) {
	rows := []model.Signals{
		sig(t, "b>provider", "originals=50 attempts=120 errors=60 admission=5"),
		sig(t, "a>provider", "originals=50 attempts=120 errors=60 admission=5"),
		sig(t, "a>db", "originals=50 attempts=70 errors=20 budget_denied=5 balance=0"),
	}
	th := DefaultThresholds()
	fs := Evaluate(model.Frame{Rows: rows}, EvaluateChains(rows, nil, th.Gap), th)
	var got []string
	for _, f := range fs {
		got = append(got, fmt.Sprintf("%s %s %s>%s", f.Severity, f.Code, f.Target, f.Dependency))
	}
	wantOrder := []string{
		"critical RETRY_AMPLIFICATION a>provider",
		"critical RETRY_AMPLIFICATION b>provider",
		"warning BUDGET_EXHAUSTED a>db",
		"warning RETRY_AMPLIFICATION a>db",
		"info ADMISSION_SHEDDING a>provider",
		"info ADMISSION_SHEDDING b>provider",
	}
	if !reflect.DeepEqual(got, wantOrder) {
		t.Errorf("order:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantOrder, "\n"))
	}
	for _, f := range fs {
		if !f.Start.Equal(msTime(t0)) || !f.End.Equal(msTime(t0+30000)) {
			t.Errorf("%s window %v %v", f.Code, f.Start, f.End)
		}
	}
	// Deterministic whatever the row order.
	for range 10 {
		rows[0], rows[1], rows[2] = rows[2], rows[0], rows[1]
		if again := Evaluate(model.Frame{Rows: rows}, EvaluateChains(rows, nil, th.Gap), th); !reflect.DeepEqual(again, fs) {
			t.Fatal("order-dependent findings")
		}
	}
	if fs := Evaluate(model.Frame{}, nil, th); len(fs) != 0 {
		t.Errorf("empty frame: %+v", fs)
	}
}

func TestEvaluateHistory(t *testing.T) {
	// Bins 1, 2 and 5 amplify under timeouts; bin 2 is the peak. The
	// shedding row sheds in one bin only: below HistoryMinBins.
	client := tline(t, "client>provider", map[string]string{
		"originals": "50x5",
		"attempts":  "50 120 130 50 50 125",
		"timeouts":  "0 30 35 0 0 30",
	})
	edge := tline(t, "edge>client", map[string]string{
		"originals": "50x5",
		"attempts":  "50x5",
		"admission": "0 0 0 7 0 0",
	})
	frame := model.Frame{
		Rows:      []model.Signals{client[5], edge[5]},
		Timelines: timelines(client, edge),
	}
	th := DefaultThresholds()
	fs := EvaluateHistory(frame, nil, th)
	if len(fs) != 1 || fs[0].Code != CodeRetryAmplification {
		t.Fatalf("findings = %+v", fs)
	}
	f := fs[0]
	if f.Severity != SeverityCritical || !f.Start.Equal(msTime(t0+10000)) || !f.End.Equal(msTime(t0+60000)) {
		t.Errorf("finding = %v %v..%v", f.Severity, f.Start, f.End)
	}
	checkEvidence(t, f, want{"amplification": 2.6, "timeouts_per_s": 35, "bins": 3})

	// One bin is enough when asked; then the shedding bin shows too.
	th.HistoryMinBins = 1
	fs = EvaluateHistory(frame, nil, th)
	if got := findCode(fs, CodeAdmissionShedding); len(got) != 1 {
		t.Fatalf("shedding = %+v", got)
	} else {
		checkEvidence(t, got[0], want{"admission_rejected_per_s": 7, "bins": 1})
		if !got[0].Start.Equal(msTime(t0+30000)) || !got[0].End.Equal(msTime(t0+40000)) {
			t.Errorf("shedding window %v..%v", got[0].Start, got[0].End)
		}
	}
	// Declared chains are used as given.
	if fs := EvaluateHistory(frame, []Chain{{Name: "edge", Hops: []Hop{{"edge", "client"}}}}, DefaultThresholds()); len(fs) != 1 {
		t.Errorf("declared: %+v", fs)
	}
	if fs := EvaluateHistory(model.Frame{}, nil, DefaultThresholds()); len(fs) != 0 {
		t.Errorf("empty: %+v", fs)
	}
}

// A finding held over several bins quotes the bin where its first number
// is largest; bins whose numbers differ only in their last digits (the
// same steady rate over bins whose edges cut scrape intervals differently)
// are the same, and the earliest is quoted, so the rest of the evidence
// never turns on a rounding: shedding 1000/s throughout quotes the share of
// the first bin, 1000/1700, not that of a last partial bin a digit higher.
func TestEvaluateHistoryQuotesTheEarliestOfEqualBins(t *testing.T) {
	for _, tc := range []struct {
		admission string
		share     float64
	}{
		{"1000x4 1000.0000000000001", 1000.0 / 1700},
		{"999.9999999999999 1000x4", 1000.0 / 1700},
		{"1000x4 1000.001", 1000.001 / 97500}, // larger beyond rounding: quoted
	} {
		edge := tline(t, "edge>client", map[string]string{
			"originals": "1700 1700 73550 97500x2",
			"attempts":  "1700 1700 73550 97500x2",
			"admission": tc.admission,
		})
		frame := model.Frame{Rows: []model.Signals{edge[5]}, Timelines: timelines(edge)}
		got := findCode(EvaluateHistory(frame, nil, DefaultThresholds()), CodeAdmissionShedding)
		if len(got) != 1 {
			t.Fatalf("%s: shedding = %+v", tc.admission, got)
		}
		checkEvidence(t, got[0], want{"share_of_originals": tc.share, "bins": 6})
		if !got[0].Start.Equal(msTime(t0)) {
			t.Errorf("%s: shedding from %v, want the first bin's start", tc.admission, got[0].Start)
		}
	}
}

// Per bin, two targets' rates disagree by a scrape interval's worth (a 5 s
// bin covering 4 or 6 s of one target); over GapWindow they agree, and
// only a real gap shows.
func TestHistoryGapWindow(t *testing.T) {
	bins := func(sent, arrived string) model.Frame {
		app := tline(t, "app>client", map[string]string{"originals": "50x8", "attempts": sent})
		client := tline(t, "client>provider", map[string]string{"originals": arrived, "attempts": arrived})
		return model.Frame{Timelines: timelines(app, client)}
	}
	th := DefaultThresholds() // 30 s: three 10 s bins
	for _, tc := range []struct {
		name, sent, arrived string
		code                string
		ev                  want
		startS, endS        int64
	}{
		{name: "jitter only", sent: "50 60 40 50 60 40 50 50 50", arrived: "60 40 50 60 40 50 50 50 50"},
		{
			// From bin 4 on, client starts 75/s for 50/s sent: the windows
			// ending at bins 4..8 see it (8.3/s over the first), the full
			// 25/s once all three bins are at 75/s. Bin 9 has no sender.
			name: "hidden layer", sent: "50x8", arrived: "50x3 75x5",
			code: CodeHiddenRetries, ev: want{"gap_per_s": 25, "sent_per_s": 50, "arrived_per_s": 75, "factor": 1.5, "bins": 5},
			startS: 20, endS: 90,
		},
		{
			// A bin without data on one side: no window covering it.
			name: "hole", sent: "50x8", arrived: "50x3 _ 50x4",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := EvaluateHistory(bins(tc.sent, tc.arrived), nil, th)
			gaps := append(findCode(fs, CodeHiddenRetries), findCode(fs, CodeHopLoss)...)
			if tc.code == "" {
				if len(gaps) != 0 {
					t.Fatalf("gaps = %+v", gaps)
				}
				return
			}
			if len(gaps) != 1 || gaps[0].Code != tc.code {
				t.Fatalf("gaps = %+v", gaps)
			}
			checkEvidence(t, gaps[0], tc.ev)
			if !gaps[0].Start.Equal(msTime(t0+tc.startS*1000)) || !gaps[0].End.Equal(msTime(t0+tc.endS*1000)) {
				t.Errorf("window %v..%v", gaps[0].Start, gaps[0].End)
			}
		})
	}
	// Per bin (a 10 s window), the jitter would be gaps.
	th.GapWindow = 10 * time.Second
	if fs := EvaluateHistory(bins("50 60 40 50 60 40 50 50 50", "60 40 50 60 40 50 50 50 50"), nil, th); len(fs) == 0 {
		t.Error("no gap per bin")
	}
}

// A hop that makes no retries is never RETRY_AMPLIFICATION, whatever a
// transient bin's attempts/originals ratio (starts and ends counted apart).
func TestRetryAmplificationNeedsRetries(t *testing.T) {
	s := model.Signals{Target: "browser", Dependency: "app",
		OriginalsPerS: model.Some(40), AttemptsPerS: model.Some(50), Amplification: model.Some(1.25),
		RetriesPerS: model.Some(0), ProviderErrorsPerS: model.Some(50), TimeoutsPerS: model.Some(0)}
	if _, ok := retryAmplification(&s, baseline{}, DefaultThresholds()); ok {
		t.Error("RETRY_AMPLIFICATION fired on a hop without retries")
	}
	s.RetriesPerS = model.Some(10)
	if _, ok := retryAmplification(&s, baseline{}, DefaultThresholds()); !ok {
		t.Error("RETRY_AMPLIFICATION did not fire with retries and failures")
	}
}

// timelines holds each of tls by its first bin's key.
func timelines(tls ...[]model.Signals) map[model.Key]*model.Timeline {
	m := make(map[model.Key]*model.Timeline, len(tls))
	for _, tl := range tls {
		m[tl[0].Key()] = model.NewTimeline(tl)
	}
	return m
}

// The history's rules read each bin's own histograms: MISLEADING_LATENCY
// (the fast failures' share of the histograms' counts) fires from bins
// held by field.
func TestHistoryReadsEachBinsHistograms(t *testing.T) {
	var bins []model.Signals
	for i := range 3 {
		s := sig(t, "client>provider", "originals=50 mixed_p99=0.004 success_p99=0.4 fast_p99=0.002 success_count=30 fast_count=70")
		s.StartMs, s.EndMs = int64(i)*10_000, int64(i+1)*10_000
		bins = append(bins, s)
	}
	if bins[0].LatencyHist.At(model.ClassFastFailure).Count != 70 {
		t.Fatalf("fixture: fast failures %v, want 70", bins[0].LatencyHist.At(model.ClassFastFailure).Count)
	}
	th := DefaultThresholds()
	fs := EvaluateHistory(model.Frame{Bin: 10 * time.Second, Timelines: timelines(bins)}, nil, th)
	for _, f := range fs {
		if f.Code == CodeMisleadingLatency {
			for _, n := range f.Evidence {
				if n.Name == "bins" && n.Value != 3 {
					t.Errorf("MISLEADING_LATENCY held in %v bins, want 3", n.Value)
				}
			}
			return
		}
	}
	t.Errorf("no MISLEADING_LATENCY from the history: %+v", fs)
}
