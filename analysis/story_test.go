package analysis

import (
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

func TestRecovery(t *testing.T) {
	const th = 0.95
	bins := func(ratios ...float64) []RecoveryBin {
		out := make([]RecoveryBin, len(ratios))
		for i, r := range ratios {
			out[i] = RecoveryBin{StartMs: int64(i) * 10000, EndMs: int64(i+1) * 10000}
			if r >= 0 {
				out[i].Ratio = model.Some(r)
			}
		}
		return out
	}
	const unknown = -1
	for _, tc := range []struct {
		name  string
		bins  []RecoveryBin
		endMs int64
		want  float64 // absent: no recovery
		stuck bool
	}{
		{"back at once", bins(1, 0, 0, 1, 1), 30000, 0, false},
		// Bin 3 reads 0.6 between 0.2 before and 1 after: half of it
		// still failing, the step 5 s in.
		{"a step inside a bin", bins(1, 0.2, 0.2, 0.6, 1), 30000, 5, false},
		// The end inside the bin holding the step, after it: at once.
		{"end after the step", bins(1, 0.2, 0.2, 0.6, 1), 37000, 0, false},
		// The bin before the last one below is above: taken as 0.
		{"a dip", bins(1, 0, 0, 1, 0.75, 1), 30000, 12.5, false},
		// Unknown bins between the last one below and the next known one:
		// not known to be back before that one's start.
		{"unknown after", bins(1, 0, 0, 0.5, unknown, 1), 30000, 20, false},
		{"unknown first", bins(1, 0, 0, unknown, 1), 30000, 10, false},
		{"never", bins(1, 0, 0, 1, 0.5), 30000, absent, true},
		{"nothing known after", bins(1, 0, 0, unknown), 30000, absent, false},
		{"nothing after", bins(1, 0, 0), 30000, absent, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, stuck := Recovery(tc.bins, tc.endMs, th)
			checkValue(t, "recovery", got, tc.want)
			if stuck != tc.stuck {
				t.Errorf("stuck %v, want %v", stuck, tc.stuck)
			}
		})
	}
}

func TestIncidentSpan(t *testing.T) {
	at := func(s int) time.Time { return msTime(t0 + int64(s)*1000) }
	phase := func(k PhaseKind, from, to int, trigger bool) Phase {
		return Phase{Kind: k, Start: at(from), End: at(to), Trigger: trigger}
	}
	// A recording from start to end seconds after t0, in bins of 10 s.
	recording := func(start, end float64, rows ...[]Phase) *Report {
		r := &Report{StartUnix: float64(t0)/1000 + start, EndUnix: float64(t0)/1000 + end, BinSeconds: 10}
		for _, ps := range rows {
			r.Dependencies = append(r.Dependencies, DependencyReport{Phases: ps})
		}
		return r
	}
	rep := func(rows ...[]Phase) *Report { return recording(0, 120, rows...) }
	for _, tc := range []struct {
		name       string
		rep        *Report
		kind       string
		start, end int // seconds after t0
	}{
		{"healthy throughout", rep([]Phase{phase(PhaseHealthy, 0, 120, false)}), SpanRecording, 0, 120},
		// A degraded stretch without overload or trigger is no incident.
		{"degraded only", rep([]Phase{phase(PhaseHealthy, 0, 40, false), phase(PhaseDegraded, 40, 50, false), phase(PhaseHealthy, 50, 120, false)}),
			SpanRecording, 0, 120},
		{"a storm", rep(
			[]Phase{phase(PhaseHealthy, 0, 30, false), phase(PhaseDegraded, 30, 40, true), phase(PhaseOverloaded, 40, 60, true),
				phase(PhaseRecovering, 60, 70, false), phase(PhaseHealthy, 70, 120, false)},
			// Another row degraded only: left out.
			[]Phase{phase(PhaseHealthy, 0, 90, false), phase(PhaseDegraded, 90, 100, false), phase(PhaseHealthy, 100, 120, false)},
			// Another row in the storm, longer: the union.
			[]Phase{phase(PhaseHealthy, 0, 40, false), phase(PhaseOverloaded, 40, 80, false), phase(PhaseHealthy, 80, 120, false)},
		), SpanIncident, 20, 90},
		// Padded by a bin, kept inside the recording.
		{"at the edges", rep([]Phase{phase(PhaseOverloaded, 0, 120, true)}), SpanIncident, 0, 120},
		// The timeline's bins 7-20 s (the first, from the first scrape,
		// merged with the short one before 10 s), 20-30 s, …, 110-124 s
		// (the 4 s after 120 merged into the last): padded by the bins
		// before and after, not by 10 s, which ended the span 4 s inside
		// the last bin and started it 3 s inside the first.
		{"padded by the first and last bins", recording(7, 124, []Phase{phase(PhaseHealthy, 7, 20, false), phase(PhaseOverloaded, 20, 100, true),
			phase(PhaseRecovering, 100, 110, false), phase(PhaseHealthy, 110, 124, false)}), SpanIncident, 7, 124},
		{"padded by a bin inside", recording(7, 124, []Phase{phase(PhaseHealthy, 7, 30, false), phase(PhaseOverloaded, 30, 90, true),
			phase(PhaseHealthy, 90, 124, false)}), SpanIncident, 20, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := IncidentSpan(tc.rep)
			if got.Kind != tc.kind || got.StartMs() != t0+int64(tc.start)*1000 || got.EndMs() != t0+int64(tc.end)*1000 {
				t.Errorf("span %s %d..%d s, want %s %d..%d s", got.Kind, (got.StartMs()-t0)/1000, (got.EndMs()-t0)/1000, tc.kind, tc.start, tc.end)
			}
		})
	}
}

func TestRecordingEnded(t *testing.T) {
	end := time.UnixMilli(t0 + 60000)
	target := func(name string, up bool, lastOK int) model.TargetStatus {
		s := model.TargetStatus{Name: name, Up: up, LastError: "connection refused", Scrapes: 60, Failures: 2}
		if lastOK >= 0 {
			s.LastSuccess = time.UnixMilli(t0 + int64(lastOK)*1000)
		}
		return s
	}
	rows := []model.Signals{{Target: "app"}, {Target: "client"}, {Target: "late"}}
	for _, tc := range []struct {
		name    string
		targets []model.TargetStatus
		endedAt time.Time
		want    map[string]string // target -> code
	}{
		{"every target stopped", []model.TargetStatus{target("app", false, 58), target("client", false, 59)}, end,
			map[string]string{"app": CodeRecordingEnded, "client": CodeRecordingEnded}},
		// One target still answered: the other really went down.
		{"one down among others up", []model.TargetStatus{target("app", false, 58), target("client", true, 60)}, end,
			map[string]string{"app": CodeTargetDown}},
		// Never answered: nothing the recording saw end.
		{"never answered", []model.TargetStatus{target("app", false, 58), target("late", false, -1)}, end,
			map[string]string{"app": CodeRecordingEnded, "late": CodeTargetDown}},
		{"live data", []model.TargetStatus{target("app", false, 58), target("client", false, 59)}, time.Time{},
			map[string]string{"app": CodeTargetDown, "client": CodeTargetDown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := recordingEnded(EvaluateTargets(tc.targets, rows, nil), tc.targets, tc.endedAt)
			if len(fs) != len(tc.want) {
				t.Fatalf("findings %+v, want %v", fs, tc.want)
			}
			for _, f := range fs {
				if f.Code != tc.want[f.Target] {
					t.Errorf("%s: %s, want %s", f.Target, f.Code, tc.want[f.Target])
				}
				if f.Code == CodeRecordingEnded && (f.Severity != SeverityInfo || !f.End.Equal(end)) {
					t.Errorf("%s: %v until %v, want info until the end", f.Target, f.Severity, f.End)
				}
			}
		})
	}
}

// A finding that holds from the first bin (here a warning: a steady 1.5
// attempts per original, a third of them timing out) is a standing
// condition: the first warning is the one the trigger brings (3 attempts
// per original: critical).
func TestDetectStanding(t *testing.T) {
	tl := tline(t, "client>provider", map[string]string{
		"originals":   "50x8",
		"attempts":    "75 75 75 150 150 150 75 75 75",
		"retries":     "25 25 25 100 100 100 25 25 25",
		"timeouts":    "25 25 25 145 145 145 25 25 25",
		"successes":   "50 50 50 5 5 5 50 50 50",
		"service_p50": "0.015 0.015 0.015 0.11 0.11 0.11 0.015 0.015 0.015",
	})
	frame := model.Frame{Bin: 10 * time.Second, Timelines: timelines(tl)}
	all := EvaluateHistory(frame, nil, DefaultThresholds())
	if len(findCode(all, CodeRetryAmplification)) == 0 {
		t.Fatalf("no amplification finding over the timeline: %+v", all)
	}
	d := Detect(frame, nil, DefaultThresholds())
	checkValue(t, "trigger start", d.TriggerStartUnix, float64(t0)/1000+30)
	// The trigger's first bin [30, 40] shows it at its end.
	checkValue(t, "first warning", d.FirstWarningUnix, float64(t0)/1000+40)
	checkValue(t, "first critical", d.FirstCriticalUnix, float64(t0)/1000+40)
	checkValue(t, "warning after the trigger", d.WarningAfterTriggerS, 10)
	if d.FirstCriticalCode == "" || d.FirstWarningCode == "" {
		t.Errorf("codes %q %q", d.FirstWarningCode, d.FirstCriticalCode)
	}
	// Without a trigger nothing is measured from it.
	frame.Timelines = timelines(tl[:3])
	if d := Detect(frame, nil, DefaultThresholds()); d.TriggerStartUnix.OK() || d.FirstWarningUnix.OK() || d.WarningAfterTriggerS.OK() {
		t.Errorf("steady timeline: %+v", d)
	}
}
