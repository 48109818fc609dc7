package analysis

import (
	"testing"

	"github.com/retrytop/retrytop/model"
)

// incident is a 12-bin story of client -> provider: no traffic, healthy,
// the provider slows (degraded, then overloaded), the provider is fast
// again but the retries keep it overloaded for two bins, one recovering
// bin, then healthy.
func incident(t *testing.T, withTrigger bool) []model.Signals {
	spec := map[string]string{
		"originals": "0 50x10",
		"attempts":  "0 50 50 70 120 120 125 125 65 50 50 50",
		"successes": "0 50 50 48 20 20 15 15 44 50 50 50",
	}
	if withTrigger {
		spec["service_p50"] = "_ 0.015 0.015 0.11 0.11 0.11 0.015 0.015 0.015 0.015 0.015 0.015"
	}
	return tline(t, "client>provider", spec)
}

type phaseWant struct {
	kind               PhaseKind
	startS, endS, bins int
	peak, goodput, eff float64
	trigger            bool
	recovery           float64
}

func checkPhases(t *testing.T, got []Phase, want []phaseWant) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d phases, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		p := got[i]
		if p.Kind != w.kind || p.Bins != w.bins || p.Trigger != w.trigger ||
			!p.Start.Equal(msTime(t0+int64(w.startS)*1000)) || !p.End.Equal(msTime(t0+int64(w.endS)*1000)) {
			t.Errorf("phase %d = %s %d bins trigger %v [%v, %v], want %s %d bins trigger %v [%ds, %ds]",
				i, p.Kind, p.Bins, p.Trigger, p.Start, p.End, w.kind, w.bins, w.trigger, w.startS, w.endS)
		}
		checkValue(t, string(w.kind)+" peak amplification", p.PeakAmplification, w.peak)
		checkValue(t, string(w.kind)+" goodput", p.GoodputPerS, w.goodput)
		checkValue(t, string(w.kind)+" effective success", p.EffectiveSuccess, w.eff)
		checkValue(t, string(w.kind)+" recovery", p.RecoveryS, w.recovery)
	}
}

func TestPhases(t *testing.T) {
	th := DefaultThresholds()
	for _, tc := range []struct {
		name    string
		trigger bool
		want    []phaseWant
	}{
		{
			name: "with the provider's service time", trigger: true,
			want: []phaseWant{
				{PhaseNoData, 0, 10, 1, absent, 0, absent, false, absent},
				{PhaseHealthy, 10, 30, 2, 1, 50, 1, false, absent},
				{PhaseDegraded, 30, 40, 1, 1.4, 48, 0.96, true, absent},
				// 2 slow bins, then 2 with the trigger gone: still overloaded.
				{PhaseOverloaded, 40, 80, 4, 2.5, 17.5, 0.35, true, absent},
				{PhaseRecovering, 80, 90, 1, 1.3, 44, 0.88, false, absent},
				// The trigger ended at 60 s. Goodput is back above 90 %
				// inside the recovering bin: read as a step from the 30 %
				// before it to the 100 % after it that makes its 88 %,
				// 12/70 of the bin in: 20 s + 10 s x 12/70 to recover.
				{PhaseHealthy, 90, 120, 3, 1, 50, 1, false, 20 + 10*12.0/70},
			},
		},
		{
			// Without a trigger signal, recovering is a degraded bin after
			// an overloaded one, and there is no recovery time.
			name: "without a trigger",
			want: []phaseWant{
				{PhaseNoData, 0, 10, 1, absent, 0, absent, false, absent},
				{PhaseHealthy, 10, 30, 2, 1, 50, 1, false, absent},
				{PhaseDegraded, 30, 40, 1, 1.4, 48, 0.96, false, absent},
				{PhaseOverloaded, 40, 80, 4, 2.5, 17.5, 0.35, false, absent},
				{PhaseRecovering, 80, 90, 1, 1.3, 44, 0.88, false, absent},
				{PhaseHealthy, 90, 120, 3, 1, 50, 1, false, absent},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkPhases(t, Phases(incident(t, tc.trigger), th), tc.want)
		})
	}

	// Recovered at once: the first bin after the trigger is healthy.
	tl := tline(t, "client>provider", map[string]string{
		"originals":   "50x3",
		"attempts":    "50 50 50 50",
		"successes":   "50 44 50 50",
		"service_p50": "0.015 0.11 0.015 0.015",
	})
	checkPhases(t, Phases(tl, th), []phaseWant{
		{PhaseHealthy, 0, 10, 1, 1, 50, 1, false, absent},
		{PhaseDegraded, 10, 20, 1, 1, 44, 0.88, true, absent},
		{PhaseHealthy, 20, 40, 2, 1, 50, 1, false, 0},
	})

	// Goodput back at once while amplification stays above its
	// threshold: no bin after the trigger is healthy, and the recovery
	// (goodput's) goes on the first phase after it.
	tl = tline(t, "client>provider", map[string]string{
		"originals":   "50x3",
		"attempts":    "50 50 65 65",
		"successes":   "50 44 50 50",
		"service_p50": "0.015 0.11 0.015 0.015",
	})
	checkPhases(t, Phases(tl, th), []phaseWant{
		{PhaseHealthy, 0, 10, 1, 1, 50, 1, false, absent},
		{PhaseDegraded, 10, 20, 1, 1, 44, 0.88, true, absent},
		{PhaseRecovering, 20, 40, 2, 1.3, 50, 1, false, 0},
	})

	// A healthy control run is one healthy phase; a bin with no
	// amplification still counts its goodput.
	tl = tline(t, "client>provider", map[string]string{"originals": "50x2", "attempts": "50 50 _", "successes": "50x2"})
	checkPhases(t, Phases(tl, th), []phaseWant{{PhaseHealthy, 0, 30, 3, 1, 50, 1, false, absent}})

	if Phases(nil, th) != nil {
		t.Error("phases of nothing")
	}
}

func TestMetastable(t *testing.T) {
	// Bins of 10 s: healthy, healthy, slow, slow, then the provider is fast
	// again and what follows varies.
	story := func(attempts, successes, service string) []model.Signals {
		return tline(t, "client>provider", map[string]string{
			"originals": "50x10", "attempts": attempts, "successes": successes, "service_p50": service,
		})
	}
	const fast = "0.015 0.015 0.11 0.11 0.015x6"
	stuck := story("50 50 120 120 125x6", "50 50 20 20 15x6", fast)
	late := story("50 50 120 120 125x2 50x3", "50 50 20 20 15x2 50x3", fast)
	for _, tc := range []ruleCase{
		{
			name: "stuck to the end", code: CodeMetastable, sev: SeverityCritical, hop: "client>provider",
			tls: [][]model.Signals{stuck},
			ev: want{"stuck_s": 70, "effective_success": 0.3, "goodput_per_s": 15, "originals_per_s": 50,
				"amplification": 2.5, "peak_amplification": 2.5, "service_time_p50_s": 0.015, "baseline_service_time_p50_s": 0.015},
			msg: "service time is back to normal but for 1m10s since, goodput stays at 30% of originals with 2.50 attempts each",
		},
		{
			name: "out after 40 s", code: CodeMetastable, sev: SeverityWarning,
			tls: [][]model.Signals{story("50 50 120 120 125x3 50x2", "50 50 20 20 15x3 50x2", fast)},
			ev:  want{"stuck_s": 40, "effective_success": 0.3},
			msg: "for 40s before recovering",
		},
		{
			name: "out after 30 s", code: CodeMetastable, sev: SeverityWarning,
			tls: [][]model.Signals{late},
			ev:  want{"stuck_s": 30},
		},
		{
			name: "recovers within the threshold", code: CodeMetastable,
			tls: [][]model.Signals{story("50 50 120 120 125x1 50x4", "50 50 20 20 15x1 50x4", fast)},
		},
		{
			name: "trigger still on", code: CodeMetastable,
			tls: [][]model.Signals{story("50 50 120x8", "50 50 20x8", "0.015 0.015 0.11x8")},
		},
		{
			name: "no trigger signal", code: CodeMetastable,
			tls: [][]model.Signals{story("50 50 120x8", "50 50 20x8", "")},
		},
		{
			// Goodput stays low, but nothing is retried: shedding, not a
			// retry storm.
			name: "low goodput without amplification", code: CodeMetastable,
			tls: [][]model.Signals{story("50 50 120 120 40x6", "50 50 20 20 30x6", fast)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := tc.tls[0][len(tc.tls[0])-1]
			tc.rows = []model.Signals{last}
			runRuleCase(t, tc)
		})
	}

	// The finding covers the stretch after the trigger; EvaluateHistory
	// reports it once.
	frame := model.Frame{Rows: []model.Signals{stuck[10]}, Timelines: timelines(stuck)}
	fs := findCode(EvaluateHistory(frame, nil, DefaultThresholds()), CodeMetastable)
	if len(fs) != 1 || !fs[0].Start.Equal(msTime(t0+40000)) || !fs[0].End.Equal(msTime(t0+110000)) {
		t.Fatalf("history = %+v", fs)
	}
	if _, ok := fs[0].Evidence.Get("bins"); ok {
		t.Error("METASTABLE is not a per-bin finding")
	}
	// A longer threshold lets the 30 s case go.
	th := DefaultThresholds()
	th.MetastableAfter = 31e9
	frame = model.Frame{Timelines: timelines(late)}
	if fs := findCode(Evaluate(frame, nil, th), CodeMetastable); len(fs) != 0 {
		t.Errorf("31 s threshold: %+v", fs)
	}
	// The stuck story never leaves overload, trigger or not: no recovery.
	checkPhases(t, Phases(stuck, th), []phaseWant{
		{PhaseHealthy, 0, 20, 2, 1, 50, 1, false, absent},
		{PhaseOverloaded, 20, 110, 9, 2.5, 145.0 / 9, 145.0 / 450, true, absent},
	})
}

// A provider that finishes nothing while it receives requests has no
// service time; that counts as the trigger being on, not as unknown.
func TestTriggerBusyWithoutCompletions(t *testing.T) {
	tl := tline(t, "client>provider", map[string]string{
		"originals":   "50x8",
		"attempts":    "50 50 150 150 150 100 50 50 50",
		"successes":   "50 50 0 0 0 30 50 50 50",
		"received":    "50 50 150 150 150 100 50 50 50",
		"service_p50": "0.035 0.035 _ _ _ 0.035x3",
	})
	checkPhases(t, Phases(tl, DefaultThresholds()), []phaseWant{
		{PhaseHealthy, 0, 20, 2, 1, 50, 1, false, absent},
		{PhaseOverloaded, 20, 60, 4, 3, 7.5, 0.15, true, absent},
		// The trigger's last bin ends at 50 s; the bin after it reads 60 %:
		// a step from 0 % to 100 % 4 s into it.
		{PhaseHealthy, 60, 90, 3, 1, 50, 1, false, 4},
	})
	// Without the received rate, those bins are unknown: no trigger at all.
	for i := range tl {
		tl[i].DependencyReceivedPerS = model.Absent
	}
	for _, p := range Phases(tl, DefaultThresholds()) {
		if p.Trigger || p.RecoveryS.OK() {
			t.Errorf("phase %s: trigger %v recovery %v", p.Kind, p.Trigger, p.RecoveryS)
		}
	}
}
