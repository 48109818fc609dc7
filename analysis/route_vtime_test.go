package analysis

import (
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/internal/simrec"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/sim"
)

// The sim's route options, recorded in virtual time and reported whole:
// a client that retries its POSTs gets UNSAFE_RETRIES, one whose breaker
// keeps refusing after the provider recovered gets BREAKER_STUCK_OPEN,
// and the control (the same baseline scenario without either) gets
// neither, nor a breaker or method signal at all.
func TestRouteOptionFindings(t *testing.T) {
	key := model.Key{Target: sim.NameClient, Dependency: sim.NameProvider}
	for _, tc := range []struct {
		name string
		opts sim.Options
		want []string
	}{
		{"control", sim.Options{Seed: 1}, nil},
		{"non-idempotent route", sim.Options{Seed: 1, NonIdempotent: true}, []string{CodeUnsafeRetries}},
		// The recovered phase outlasts the breaker's 45 probes: it closes
		// inside the recording, after refusing for longer than
		// metastable_after while its probes succeeded.
		{"sticky breaker", sim.Options{Seed: 1, Breaker: true, Recovered: 60 * time.Second}, []string{CodeBreakerStuckOpen}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := simrec.Record(t, "baseline", tc.opts, time.Second)
			r, err := dump.OpenRecording(run.Path, dump.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			st := model.NewStore(model.StoreConfig{History: r.Len() + 1, MaxSeriesPerTarget: 20000})
			targets := dump.LoadStore(r, st, nil)
			rep := BuildReport(st, targets, ReportOptions{})
			fired := map[string]Finding{}
			for _, f := range rep.Findings {
				if f.Target == key.Target && f.Dependency == key.Dependency {
					if _, twice := fired[f.Code]; twice {
						t.Errorf("%s reported twice", f.Code)
					}
					fired[f.Code] = f
				}
			}
			for _, c := range []string{CodeUnsafeRetries, CodeBreakerStuckOpen, CodeQuotaNotRefilling, CodeEmitterDataOff} {
				f, ok := fired[c]
				want := false
				for _, w := range tc.want {
					want = want || w == c
				}
				switch {
				case ok && !want:
					t.Errorf("%s fired: %s", c, f.Message)
				case !ok && want:
					t.Errorf("%s did not fire; findings %v", c, codesOfReport(rep.Findings))
				case ok:
					t.Logf("%s: %s", c, f.Message)
				}
			}
			row := findRow(t, rep.Dependencies, key.Target, key.Dependency)
			t.Logf("whole run: unsafe %v/%v, breaker %v", row.UnsafeAttemptsPerS, row.UnsafeOriginalsPerS, row.BreakerState)
			if tc.opts.NonIdempotent != row.UnsafeOriginalsPerS.OK() || tc.opts.Breaker != row.BreakerState.OK() {
				t.Errorf("unsafe originals %v, breaker state %v: want present only with the option", row.UnsafeOriginalsPerS, row.BreakerState)
			}
		})
	}
}

func codesOfReport(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Code+"("+f.Target+"->"+f.Dependency+")")
	}
	return out
}
