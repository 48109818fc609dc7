package analysis

import (
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// rowBin is one 10 s timeline bin of a row starting at i*10 s.
func rowBin(i int, fill func(s *model.Signals)) model.Signals {
	s := model.Signals{Target: "app", Dependency: "db", StartMs: int64(i) * 10_000, EndMs: int64(i+1) * 10_000}
	s.SampledFromMs, s.SampledToMs = s.StartMs, s.EndMs
	fill(&s)
	return s
}

// attempts sets a bin's attempts and errors per second.
func attempts(s *model.Signals, att, errs float64) {
	s.OriginalsPerS, s.AttemptsPerS = model.Some(att), model.Some(att)
	s.ProviderErrorsPerS, s.TimeoutsPerS = model.Some(errs), model.Some(0)
	s.SuccessesPerS = model.Some(att - errs)
	s.AttemptSuccess = model.Some((att - errs) / max(att, 1e-9))
}

func codesOf(fs []Finding) map[string]Finding {
	out := map[string]Finding{}
	for _, f := range fs {
		out[f.Code] = f
	}
	return out
}

// Breaker and quota rules over a row's timeline: 10 s bins, failures in
// bins 2-3, then the dependency answers again. The default thresholds
// (MetastableAfter 30 s) decide; every case is its own truth.
func TestTimelineRules(t *testing.T) {
	th := DefaultThresholds()
	const n = 10
	open := func(probeErrs float64, closeAt int) []model.Signals {
		tl := make([]model.Signals, n)
		for i := range tl {
			tl[i] = rowBin(i, func(s *model.Signals) {
				switch {
				case i < 2:
					attempts(s, 50, 0)
					s.BreakerState, s.BreakerRejectedPerS = model.Some(model.BreakerClosed), model.Some(0)
				case i < 4:
					attempts(s, 50, 40)
					s.BreakerState, s.BreakerRejectedPerS = model.Some(model.BreakerOpen), model.Some(10)
				case i < closeAt:
					attempts(s, 1, probeErrs) // one probe a second
					s.BreakerState, s.BreakerRejectedPerS = model.Some(model.BreakerOpen), model.Some(49)
				default:
					attempts(s, 50, 0)
					s.BreakerState, s.BreakerRejectedPerS = model.Some(model.BreakerClosed), model.Some(0)
				}
			})
		}
		return tl
	}
	quota := func(refill float64) []model.Signals {
		tl := make([]model.Signals, n)
		bal := 500.0
		for i := range tl {
			tl[i] = rowBin(i, func(s *model.Signals) {
				switch {
				case i < 2:
					attempts(s, 50, 0)
				case i < 4:
					attempts(s, 50, 20)
					bal -= 240 // 5 tokens per failure, capped at 0
					bal = max(bal, 20)
				default:
					attempts(s, 50, 0)
					bal += refill
				}
				s.BudgetBalance = model.Some(bal)
			})
		}
		return tl
	}
	for _, tc := range []struct {
		name string
		tl   []model.Signals
		want map[string]Severity // code -> severity; absent codes must not fire
	}{
		{"breaker open to the end while probes succeed", open(0, n), map[string]Severity{CodeBreakerStuckOpen: SeverityCritical}},
		{"breaker open 40 s after recovery, then closes", open(0, 8), map[string]Severity{CodeBreakerStuckOpen: SeverityWarning}},
		{"breaker closes 20 s after recovery", open(0, 6), nil},
		{"probes still fail: the breaker is right", open(1, n), nil},
		{"quota never refills", quota(0), map[string]Severity{CodeQuotaNotRefilling: SeverityWarning}},
		{"quota refills with successes", quota(10), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := codesOf(timelineFindings(model.Key{Target: "app", Dependency: "db"}, tc.tl, th))
			for _, c := range []string{CodeBreakerStuckOpen, CodeQuotaNotRefilling} {
				f, fired := got[c]
				sev, want := tc.want[c]
				switch {
				case fired && !want:
					t.Errorf("%s fired: %s", c, f.Message)
				case !fired && want:
					t.Errorf("%s did not fire", c)
				case fired && f.Severity != sev:
					t.Errorf("%s severity %v, want %v", c, f.Severity, sev)
				}
			}
		})
	}
}

// The quota case's numbers: 500 before, 20 at the low, 20 at the end,
// 60 s quiet.
func TestQuotaNotRefillingEvidence(t *testing.T) {
	tl := make([]model.Signals, 10)
	bal := []float64{500, 500, 260, 20, 20, 20, 20, 20, 20, 20}
	for i := range tl {
		tl[i] = rowBin(i, func(s *model.Signals) {
			attempts(s, 50, map[bool]float64{true: 20}[i == 2 || i == 3])
			s.BudgetBalance = model.Some(bal[i])
		})
	}
	f, ok := quotaNotRefilling(model.Key{Target: "app", Dependency: "db"}, tl, DefaultThresholds())
	if !ok {
		t.Fatal("no finding")
	}
	for name, want := range map[string]float64{"quota_before": 500, "quota_low": 20, "quota_now": 20, "quiet_s": 60} {
		if v, _ := f.Evidence.Get(name); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	if !f.Start.Equal(time.UnixMilli(40_000).UTC()) {
		t.Errorf("start %v", f.Start)
	}
}

// Row rules: unsafe retries on labelled methods, and settings off.
func TestUnsafeRetriesAndSettingsOff(t *testing.T) {
	th := DefaultThresholds()
	for _, tc := range []struct {
		name       string
		orig, att  model.Value
		settings   []string
		want       string
		wantResent float64
	}{
		{"POST re-sent", model.Some(10), model.Some(13), nil, CodeUnsafeRetries, 3},
		{"POST once each", model.Some(10), model.Some(10), nil, "", 0},
		{"under the retrying share", model.Some(100), model.Some(101), nil, "", 0},
		{"method unknown", model.Absent, model.Absent, nil, "", 0},
		{"istio stats off", model.Absent, model.Absent, []string{model.SettingIstioProxyStats}, CodeEmitterDataOff, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := rowBin(0, func(s *model.Signals) {
				s.UnsafeOriginalsPerS, s.UnsafeAttemptsPerS, s.SettingsOff = tc.orig, tc.att, tc.settings
			})
			fs := evaluateRows([]model.Signals{s}, nil, th)
			var got []string
			for _, f := range fs {
				got = append(got, f.Code)
			}
			if (tc.want == "" && len(got) > 0) || (tc.want != "" && (len(got) != 1 || got[0] != tc.want)) {
				t.Fatalf("findings %v, want %q", got, tc.want)
			}
			if tc.want == CodeUnsafeRetries {
				if v, _ := fs[0].Evidence.Get("resent_per_s"); v != tc.wantResent {
					t.Errorf("resent = %v, want %v", v, tc.wantResent)
				}
			}
		})
	}
}
