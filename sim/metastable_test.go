package sim

import (
	"testing"
	"testing/synctest"
	"time"
)

// The metastable scenario's ground truth: after the 15 s trigger the
// baseline policy never gets its users back, sustained by its own retries
// (every attempt times out in the queue: 3 per original) and by the dead
// work the provider finishes for callers who gave up; the bounded policy,
// on the same provider and traffic, drains its smaller backlog and
// recovers.
func TestMetastableTruth(t *testing.T) {
	for _, tc := range []struct {
		name      string
		recovered bool
	}{
		{"metastable", false},
		{"metastable-bounded", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, _ := ScenarioByName(tc.name)
			synctest.Test(t, func(t *testing.T) {
				run := runVirtual(t, sc, Options{Seed: 1}, time.Second)
				tr := run.s.Truth()
				r := tr.Recovery
				if !r.Measured || r.Recovered != tc.recovered {
					t.Fatalf("recovery %+v, want recovered %v", r, tc.recovered)
				}
				after := tr.Phases[len(tr.Phases)-1]
				if tc.recovered {
					// The trigger's dead work, drained at the spare
					// 50 requests/s: seconds, not the whole phase.
					if r.UserRecovery <= 0 || r.UserRecovery > 10*time.Second || after.Amplification > 1.1 {
						t.Errorf("bounded: recovery after %v, amplification %.2f after the trigger", r.UserRecovery, after.Amplification)
					}
					return
				}
				// Stuck: 3 attempts per original (above the 2 the slots
				// serve), no user success, most finished work for nobody.
				p := tr.Provider
				if after.Amplification < 2.9 || after.Succeeded != 0 || p.WorkAfterCancel*2 < p.Completed || r.Drained {
					t.Errorf("after the trigger: amplification %.2f, %d successes, work after cancel %d of %d, drained %v",
						after.Amplification, after.Succeeded, p.WorkAfterCancel, p.Completed, r.Drained)
				}
			})
		})
	}
}
