package analysis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// op is one original of the event model below: when it starts and, if it
// was admitted, how long each of its attempts takes (back to back, as a
// retry owner without backoff makes them) and whether the last succeeded.
type op struct {
	startMs  int64
	attempts []int64 // durations; none: refused by admission
	ok       bool
}

// counting replays ops into the contract's counters the way the retry
// library counts them (docs/metrics.md, "Counting moments"): an original
// when it starts; an attempt when it ends; the result and the request
// duration class when the operation ends, right after its last attempt; a
// refused original's result and fast_failure class at once.
func counting(ops []op, scrapes []int64) []ts {
	type event struct {
		atMs   int64
		series int
	}
	const (
		sOriginals = iota
		sAttemptOK
		sAttemptErr
		sSuccess
		sProviderError
		sRejected
		sAdmission
		sClassSuccess
		sClassFailure
		sClassFast
		sOpAttempts
		numSeries
	)
	var events []event
	for _, o := range ops {
		events = append(events, event{o.startMs, sOriginals})
		if len(o.attempts) == 0 {
			events = append(events, event{o.startMs, sRejected}, event{o.startMs, sAdmission}, event{o.startMs, sClassFast})
			continue
		}
		t := o.startMs
		for i, d := range o.attempts {
			t += d
			kind := sAttemptErr
			if i == len(o.attempts)-1 && o.ok {
				kind = sAttemptOK
			}
			events = append(events, event{t, kind})
		}
		if o.ok {
			events = append(events, event{t, sSuccess}, event{t, sClassSuccess})
		} else {
			events = append(events, event{t, sProviderError}, event{t, sClassFailure})
		}
		for range o.attempts { // added all at once, when the operation ends
			events = append(events, event{t, sOpAttempts})
		}
	}
	vals := make([][]string, numSeries)
	for _, at := range scrapes {
		var n [numSeries]int
		for _, e := range events {
			if e.atMs <= at {
				n[e.series]++
			}
		}
		for s := range vals {
			vals[s] = append(vals[s], fmt.Sprint(n[s]))
		}
	}
	dep := func(kv ...string) []string { return append([]string{model.LabelDependency, "provider"}, kv...) }
	v := func(s int) string { return strings.Join(vals[s], " ") }
	return []ts{
		{model.MetricOriginals, dep("priority", "critical"), v(sOriginals)},
		{model.MetricAttempts, dep("outcome", "success"), v(sAttemptOK)},
		{model.MetricAttempts, dep("outcome", "temporary_error"), v(sAttemptErr)},
		{model.MetricResults, dep("priority", "critical", "result", "success"), v(sSuccess)},
		{model.MetricResults, dep("priority", "critical", "result", "provider_error"), v(sProviderError)},
		{model.MetricResults, dep("priority", "critical", "result", "capacity_rejected"), v(sRejected)},
		{model.MetricAdmissionRejected, dep("priority", "critical", "reason", "concurrency"), v(sAdmission)},
		{model.MetricOperationAttempts, dep(), v(sOpAttempts)},
		{model.MetricRequestDuration + "_count", dep("result_class", "success"), v(sClassSuccess)},
		{model.MetricRequestDuration + "_count", dep("result_class", "failure"), v(sClassFailure)},
		{model.MetricRequestDuration + "_count", dep("result_class", "fast_failure"), v(sClassFast)},
		// One bucket each, so that the classes are histograms to the row.
		{model.MetricRequestDuration + "_bucket", dep("result_class", "success", "le", "+Inf"), v(sClassSuccess)},
		{model.MetricRequestDuration + "_bucket", dep("result_class", "failure", "le", "+Inf"), v(sClassFailure)},
		{model.MetricRequestDuration + "_bucket", dep("result_class", "fast_failure", "le", "+Inf"), v(sClassFast)},
	}
}

// storm builds 50 originals a second for 30 s. Latency steps from 100 ms
// to 2 s at 10 s. An admission limit refuses an original when limit
// operations are in flight (0: no limit); every third admitted original
// fails its first attempt and is rescued by a second.
func storm(limit int, retries bool) []op {
	var ops []op
	var ends []int64
	for t := int64(0); t < 30000; t += 20 {
		d := int64(100)
		if t >= 10000 {
			d = 2000
		}
		inFlight := 0
		for _, e := range ends {
			if e > t {
				inFlight++
			}
		}
		if limit > 0 && inFlight >= limit {
			ops = append(ops, op{startMs: t})
			continue
		}
		o := op{startMs: t, attempts: []int64{d}, ok: true}
		if retries && len(ops)%3 == 0 {
			o.attempts = []int64{d, d}
		}
		end := t
		for _, a := range o.attempts {
			end += a
		}
		ends = append(ends, end)
		ops = append(ops, o)
	}
	return ops
}

// Every bin of a step change: amplification per admitted original never
// falls below 1, whatever the latency does, where attempts per original
// started does; and over the whole run it equals the true attempts per
// admitted original.
func TestAmplificationIsCountedAtOneMoment(t *testing.T) {
	tests := []struct {
		name    string
		limit   int
		retries bool
		// wantSpan is attempts per admitted original over the whole run,
		// every operation finished (the run is scraped until 36 s).
		wantSpan float64
		// wantDip: attempts per original started falls below 1 in some
		// bin (the counting-moment and admission artefacts).
		wantDip bool
	}{
		{name: "one attempt per original, latency step", wantSpan: 1, wantDip: true},
		{name: "admission in front of retries", limit: 30, retries: true, wantDip: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := storm(tt.limit, tt.retries)
			var attempts, admitted int
			for _, o := range ops {
				attempts += len(o.attempts)
				if len(o.attempts) > 0 {
					admitted++
				}
			}
			if tt.wantSpan == 0 {
				tt.wantSpan = float64(attempts) / float64(admitted)
			}
			scrapes := every(t0, 1000, 37) // 0..36 s, 1 s apart
			shifted := make([]op, len(ops))
			for i, o := range ops {
				o.startMs += t0
				shifted[i] = o
			}
			st := load(t, nil, "app", scrapes, counting(shifted, scrapes)...)

			dipped := false
			maxAttempts := 1.0
			if tt.retries {
				maxAttempts = 2
			}
			for k := 1; k < len(scrapes); k++ {
				s := SignalsFor(st, "app", "provider", scrapes[k-1], scrapes[k])
				if s.AmplificationBasis != model.AmplificationOperations && s.Amplification.OK() {
					t.Fatalf("bin %d: basis %q, want %q", k, s.AmplificationBasis, model.AmplificationOperations)
				}
				// Both sides are added when an operation ends: between 1
				// and the most attempts an operation makes, in every bin.
				if a, ok := s.Amplification.Get(); ok && (a < 1 || a > maxAttempts) {
					t.Errorf("bin %d s: amplification %.3f outside 1..%v (operation attempts %.1f/s, admitted %.1f/s)",
						k, a, maxAttempts, s.OperationAttemptsPerS.V(), s.AdmittedPerS.V())
				}
				// Without the operation-attempts family (other emitters),
				// attempts over admitted originals still never read below 1.
				s.OperationAttemptsPerS = model.Absent
				deriveRatios(&s)
				if a, ok := s.Amplification.Get(); ok && (a < 1 || s.AmplificationBasis != model.AmplificationAdmitted) {
					t.Errorf("bin %d s: admitted basis %q reads %.3f < 1", k, s.AmplificationBasis, a)
				}
				if a, ok := s.AttemptsPerOriginal.Get(); ok && a < 1 {
					dipped = true
				}
			}
			if dipped != tt.wantDip {
				t.Errorf("attempts per original started dipped below 1: %v, want %v", dipped, tt.wantDip)
			}
			s := SignalsFor(st, "app", "provider", scrapes[0], scrapes[len(scrapes)-1])
			checkValue(t, "amplification over the run", s.Amplification, tt.wantSpan)
			if tt.limit > 0 {
				if a := s.AttemptsPerOriginal.V(); a >= 1 {
					t.Errorf("attempts per original started = %.3f; the fixture should shed enough to hide the storm", a)
				}
			}
		})
	}
}

// The fallbacks, each with its basis: without the class split the
// completed originals less those refused by admission; without results
// the originals started less admission rejections.
func TestAmplificationBasisFallbacks(t *testing.T) {
	sv := model.Some
	tests := []struct {
		name      string
		in        model.Signals
		want      model.Value
		wantBasis string
		wantEff   model.Value
	}{
		{name: "operations: both sides counted at the end",
			in: model.Signals{AttemptsPerS: sv(90), OriginalsPerS: sv(40), CompletedPerS: sv(40), AdmittedPerS: sv(20),
				OperationAttemptsPerS: sv(30), SuccessesPerS: sv(10)},
			want: sv(1.5), wantBasis: model.AmplificationOperations, wantEff: sv(0.25)},
		{name: "admitted",
			in:   model.Signals{AttemptsPerS: sv(30), OriginalsPerS: sv(40), CompletedPerS: sv(40), AdmittedPerS: sv(20), SuccessesPerS: sv(10)},
			want: sv(1.5), wantBasis: model.AmplificationAdmitted, wantEff: sv(0.25)},
		{name: "completed less capacity rejected",
			in: model.Signals{AttemptsPerS: sv(30), OriginalsPerS: sv(40), CompletedPerS: sv(36), SuccessesPerS: sv(18),
				ResultsPerS: map[string]model.Value{model.ResultCapacityRejected: sv(16)}},
			want: sv(1.5), wantBasis: model.AmplificationCompleted, wantEff: sv(0.5)},
		{name: "started less admission rejections",
			in:   model.Signals{AttemptsPerS: sv(30), OriginalsPerS: sv(40), AdmissionRejectedPerS: sv(20), SuccessesPerS: sv(10)},
			want: sv(1.5), wantBasis: model.AmplificationStarted, wantEff: sv(0.25)},
		{name: "started, rejections unknown",
			in:   model.Signals{AttemptsPerS: sv(30), OriginalsPerS: sv(20)},
			want: sv(1.5), wantBasis: model.AmplificationStarted, wantEff: model.Absent},
		{name: "nothing admitted: absent, no basis",
			in:   model.Signals{AttemptsPerS: sv(0), OriginalsPerS: sv(10), AdmittedPerS: sv(0), CompletedPerS: sv(10), SuccessesPerS: sv(0)},
			want: model.Absent, wantEff: sv(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.in
			deriveRatios(&s)
			if s.Amplification != tt.want || s.AmplificationBasis != tt.wantBasis || s.EffectiveSuccess != tt.wantEff {
				t.Errorf("amplification %v basis %q effective %v, want %v %q %v",
					s.Amplification, s.AmplificationBasis, s.EffectiveSuccess, tt.want, tt.wantBasis, tt.wantEff)
			}
		})
	}
}

// End to end divides the provider's attempts by the user actions that got
// in, on the first hop's own basis: a browser shedding half its actions
// does not halve the chain's amplification.
func TestEndToEndUsesTheFirstHopsAdmittedOriginals(t *testing.T) {
	sv := model.Some
	rows := []model.Signals{
		{Target: "browser", Dependency: "app", OriginalsPerS: sv(100), AdmissionRejectedPerS: sv(50),
			AttemptsPerS: sv(50), MaxAttempts: sv(1)},
		{Target: "app", Dependency: "provider", OriginalsPerS: sv(50), AttemptsPerS: sv(150), MaxAttempts: sv(3)},
	}
	for i := range rows {
		deriveRatios(&rows[i])
	}
	r := EvaluateChain(Chain{Hops: []Hop{{Target: "browser", Dependency: "app"}, {Target: "app", Dependency: "provider"}}}, rows)
	checkValue(t, "end to end", r.EndToEndAmplification, 3) // 150 / (100 - 50)
	checkValue(t, "worst case", r.WorstCaseAmplification, 3)
	checkValue(t, "product", r.ProductAmplification, 3)
}

// Nested owners, cancelled attempts, abandoned attempts and late successes
// reach the signals from the library's families, and nesting is a finding.
func TestNestedOwnersAndLateWork(t *testing.T) {
	dep := func(kv ...string) []string { return append([]string{model.LabelDependency, "provider"}, kv...) }
	st := load(t, nil, "svc", every(t0, 1000, 11),
		ts{model.MetricOriginals, dep("priority", "critical"), "0+10x10"},
		ts{model.MetricAttempts, dep("outcome", "success"), "0+8x10"},
		ts{model.MetricAttempts, dep("outcome", "cancelled"), "0+2x10"},
		ts{model.MetricAbandonedAttempts, dep(), "0+2x10"},
		ts{model.MetricLateSuccesses, dep(), "0+1x10"},
		ts{model.MetricNestedOperations, dep(model.LabelOuterDependency, "quote-service"), "0+10x10"},
		ts{model.MetricHedges, dep(), "0+3x10"},
		ts{model.MetricHedgesWon, dep(), "0+2x10"},
		ts{model.MetricHedgesAbandoned, dep(), "0+1x10"},
		ts{model.MetricPolicyMaxAttempts, dep(), "3x10"},
	)
	s := SignalsFor(st, "svc", "provider", t0, t0+10000)
	checkValue(t, "cancelled attempts", s.CancelledAttemptsPerS, 2)
	checkValue(t, "provider errors", s.ProviderErrorsPerS, 0) // a cancel is not the provider's
	checkValue(t, "abandoned", s.AbandonedAttemptsPerS, 2)
	checkValue(t, "late successes", s.LateSuccessesPerS, 1)
	checkValue(t, "nested", s.NestedPerS, 10)
	checkValue(t, "hedges", s.HedgesPerS, 3)
	checkValue(t, "hedges won", s.HedgesWonPerS, 2)
	checkValue(t, "hedges abandoned", s.HedgesAbandonedPerS, 1)
	if len(s.NestedIn) != 1 || s.NestedIn[0].Key != "quote-service" || s.NestedIn[0].PerS != 10 {
		t.Errorf("NestedIn = %+v, want quote-service at 10/s", s.NestedIn)
	}
	fs := evaluateRows([]model.Signals{s}, nil, DefaultThresholds())
	var nested *Finding
	for i := range fs {
		if fs[i].Code == CodeNestedRetryOwners {
			nested = &fs[i]
		}
	}
	if nested == nil || nested.Severity != SeverityWarning || !strings.Contains(nested.Message, "inside attempts of quote-service") {
		t.Fatalf("findings %+v, want a NESTED_RETRY_OWNERS warning naming quote-service", fs)
	}

	// Without the family: absent, and no finding.
	s = SignalsFor(st, "svc", "other", t0, t0+10000)
	if s.NestedPerS.OK() || s.LateSuccessesPerS.OK() {
		t.Errorf("nested %v late %v for a dependency without them, want absent", s.NestedPerS, s.LateSuccessesPerS)
	}
}

// Absent is never zero and zero is never absent: a limit or a budget that
// is configured proves its counter is in force, 0 until it moves; an
// attempt split that labels only timeouts says nothing of provider errors.
func TestProvenActiveAndPartialOutcomes(t *testing.T) {
	dep := func(kv ...string) []string { return append([]string{model.LabelDependency, "provider"}, kv...) }
	st := load(t, nil, "proxy", every(t0, 1000, 11),
		ts{model.MetricOriginals, dep(), "0+10x10"},
		ts{model.MetricAttempts, dep(), "0+9x10"},
		ts{model.MetricAttempts, dep("outcome", "timeout"), "0+1x10"},
		ts{model.MetricConcurrencyLimit, dep(), "64x10"},
		ts{model.MetricBudgetBalance, dep(), "20x10"},
	)
	s := SignalsFor(st, "proxy", "provider", t0, t0+10000)
	checkValue(t, "admission rejected (limit configured)", s.AdmissionRejectedPerS, 0)
	checkValue(t, "budget denied (budget configured)", s.BudgetDeniedPerS, 0)
	checkValue(t, "timeouts (labelled)", s.TimeoutsPerS, 1)
	checkValue(t, "attempts", s.AttemptsPerS, 10)
	for name, v := range map[string]model.Value{
		"provider errors": s.ProviderErrorsPerS, "temporary errors": s.TemporaryErrorsPerS,
		"permanent errors": s.PermanentErrorsPerS, "attempt success": s.AttemptSuccess,
		"cancelled attempts": s.CancelledAttemptsPerS,
	} {
		if v.OK() {
			t.Errorf("%s = %v, want absent: the emitter labels timeouts only", name, v.V())
		}
	}
	// No traffic data in the window: nothing is proven.
	s = SignalsFor(st, "proxy", "provider", t0-60000, t0-1)
	if s.AdmissionRejectedPerS.OK() || s.BudgetDeniedPerS.OK() {
		t.Errorf("before the data: admission %v budget %v, want absent", s.AdmissionRejectedPerS, s.BudgetDeniedPerS)
	}
}

func TestEvaluateTargets(t *testing.T) {
	now := time.Unix(1700000000, 0)
	targets := []model.TargetStatus{
		{Name: "never", Up: false, LastError: "connection refused", Scrapes: 3, Failures: 3},
		{Name: "lost", Up: false, LastError: "timeout", LastSuccess: now, Scrapes: 3, Failures: 1},
		{Name: "silent", Up: true, LastSuccess: now, Series: 42, Dialect: "envoy"},
		{Name: "caller", Up: true, LastSuccess: now},
		{Name: "provider", Up: true, LastSuccess: now},
	}
	rows := []model.Signals{{Target: "caller", Dependency: "provider"}}
	services := []model.ServiceSignals{{Target: "provider"}}
	got := EvaluateTargets(targets, rows, services)
	want := []struct {
		code, target string
		sev          Severity
		msg          string
	}{
		{CodeTargetDown, "never", SeverityCritical, "no scrape succeeded (connection refused)"},
		{CodeTargetDown, "lost", SeverityWarning, "its newest scrape failed (timeout)"},
		{CodeNoRetrySignals, "silent", SeverityWarning, "42 series, envoy"},
	}
	if len(got) != len(want) {
		t.Fatalf("findings %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.Code != w.code || g.Target != w.target || g.Severity != w.sev || !strings.Contains(g.Message, w.msg) {
			t.Errorf("finding %d = %s %s %s %q, want %s %s %s containing %q", i, g.Code, g.Target, g.Severity, g.Message, w.code, w.target, w.sev, w.msg)
		}
	}
}

// The Prometheus server a --prometheus report reads is a source, never a
// silent target.
func TestEvaluateTargetsSkipsThePrometheusSource(t *testing.T) {
	got := EvaluateTargets([]model.TargetStatus{{Name: "prometheus", Layer: "prometheus", Dialect: "prometheus-api:native", Up: true}}, nil, nil)
	if len(got) != 0 {
		t.Errorf("findings %+v, want none", got)
	}
}

// Where deadlines are not propagated: the dependency's own count of
// requests without one reaches the rows that call it, and most of them
// missing is a finding.
func TestDeadlineNotPropagated(t *testing.T) {
	st := load(t, nil, "app", every(t0, 1000, 11),
		ts{model.MetricOriginals, []string{model.LabelDependency, "client"}, "0+10x10"},
		ts{model.MetricAttempts, []string{model.LabelDependency, "client", "outcome", "success"}, "0+10x10"},
	)
	load(t, st, "client", every(t0, 1000, 11),
		ts{model.MetricServerRequests, []string{model.LabelDeadline, "propagated"}, "0+2x10"},
		ts{model.MetricServerRequests, []string{model.LabelDeadline, "missing"}, "0+7x10"},
		ts{model.MetricServerRequests, []string{model.LabelDeadline, "invalid"}, "0+1x10"},
	)
	s := SignalsFor(st, "app", "client", t0, t0+10000)
	checkValue(t, "propagated", s.DependencyDeadlinePropagatedPerS, 2)
	checkValue(t, "missing (and invalid)", s.DependencyDeadlineMissingPerS, 8)
	fs := evaluateRows([]model.Signals{s}, nil, DefaultThresholds())
	found := false
	for _, f := range fs {
		if f.Code == CodeDeadlineDropped {
			found = true
			if v, _ := f.Evidence.Get("share_missing"); v != 0.8 {
				t.Errorf("share_missing %v, want 0.8", v)
			}
		}
	}
	if !found {
		t.Errorf("no DEADLINE_NOT_PROPAGATED in %+v", fs)
	}
	// Mostly propagated: no finding.
	st2 := load(t, nil, "client", every(t0, 1000, 11),
		ts{model.MetricServerRequests, []string{model.LabelDeadline, "propagated"}, "0+9x10"},
		ts{model.MetricServerRequests, []string{model.LabelDeadline, "missing"}, "0+1x10"})
	load(t, st2, "app", every(t0, 1000, 11), ts{model.MetricOriginals, []string{model.LabelDependency, "client"}, "0+10x10"})
	s = SignalsFor(st2, "app", "client", t0, t0+10000)
	for _, f := range evaluateRows([]model.Signals{s}, nil, DefaultThresholds()) {
		if f.Code == CodeDeadlineDropped {
			t.Errorf("finding at 10%% missing: %s", f.Message)
		}
	}
}

// A gap compares what a hop sent with what the next one received at the
// same moment: its attempts end as the next hop's operations end, so the
// next hop's completed operations are what arrived; its originals started
// (a latency earlier) only stand in without results.
func TestGapsCompareAtOneMoment(t *testing.T) {
	sv := model.Some
	chain := Chain{Hops: []Hop{{Target: "app", Dependency: "client"}, {Target: "client", Dependency: "provider"}}}
	tests := []struct {
		name     string
		client   model.Signals
		wantCode string
	}{
		// Latency rose: the client started 80/s but ended 50/s, as many
		// as the app's attempts ended. No gap.
		{"step change", model.Signals{OriginalsPerS: sv(80), CompletedPerS: sv(50)}, ""},
		// A hidden layer retried: 90/s ended at the client for 50 sent.
		{"hidden retries", model.Signals{OriginalsPerS: sv(90), CompletedPerS: sv(90)}, CodeHiddenRetries},
		// Without results, originals stand in.
		{"no results", model.Signals{OriginalsPerS: sv(50)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := model.Signals{Target: "app", Dependency: "client", OriginalsPerS: sv(50), AttemptsPerS: sv(50)}
			cl := tt.client
			cl.Target, cl.Dependency, cl.AttemptsPerS = "client", "provider", sv(60)
			r := EvaluateChain(chain, []model.Signals{app, cl})
			code := ""
			if len(r.Gaps) > 0 {
				code = r.Gaps[0].Code
			}
			if code != tt.wantCode {
				t.Errorf("gaps %+v, want %q", r.Gaps, tt.wantCode)
			}
		})
	}
}

// A fleet row's pool wait mean is its worst replica's (a mean of means is
// no mean), and waiting calls add up.
func TestAggregatePoolMeanAndQueueDepth(t *testing.T) {
	sv := model.Some
	got := Aggregate("app", []model.Signals{
		{Target: "a", Dependency: "db", PoolWaitMean: sv(0.01), QueueDepth: sv(2)},
		{Target: "b", Dependency: "db", PoolWaitMean: sv(0.03), QueueDepth: sv(3)},
		{Target: "c", Dependency: "db"},
	})
	checkValue(t, "pool wait mean", got.PoolWaitMean, 0.03)
	checkValue(t, "queue depth", got.QueueDepth, 5)
}
