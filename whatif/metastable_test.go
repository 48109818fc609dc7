package whatif

import (
	"math"
	"testing"
	"time"

	"github.com/retrytop/retrytop/internal/simrec"
	"github.com/retrytop/retrytop/sim"
)

// recordFit records a sim scenario in virtual time at 1 s, the first
// scrape phase after the start, and fits it.
func recordFit(t *testing.T, name string, opts sim.Options, phase time.Duration) (Fitted, simrec.Run) {
	t.Helper()
	run := simrec.RecordPhase(t, name, opts, time.Second, phase)
	fit, err := Fit(load(t, run.Path), time.Second)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return fit, run
}

// checkMetastable holds what-if's recovery to an incident that does not
// heal itself: the fits of the metastable scenario and its bounded twin
// (same options). From the stuck baseline's recording alone, the bounded
// policy's recovery time is predicted within 20 % (or 5 s) of the bounded
// run's on the same traffic, and its success within 5 points; the
// recorded policy replays stuck to the end. From the bounded recording,
// the baseline's policy is predicted to get stuck.
func checkMetastable(t *testing.T, stuck, bounded Fitted, stuckRun, boundedRun simrec.Run) {
	t.Helper()
	const (
		successTolerance = 0.05
		recoveryShare    = 0.20
		recoveryFloorS   = 5.0
		baselineSpec     = "attempts=3,budget=none,limiter=none,backoff=none,attempt_timeout=300ms"
	)
	if stuckRun.Truth.Recovery.Recovered || !boundedRun.Truth.Recovery.Recovered {
		t.Fatalf("sim truth: baseline recovered %v, bounded %v", stuckRun.Truth.Recovery.Recovered, boundedRun.Truth.Recovery.Recovered)
	}
	if rec := Summarize(stuck.Recording); !rec.Metastable {
		t.Errorf("the stuck recording's own summary: recovery %s, not metastable", secs(rec.RecoveryS))
	}
	if got := runSpec(t, stuck, "recorded"); !got.Metastable {
		t.Errorf("recorded policy on the stuck recording: recovery %s, want no recovery within the recording", secs(got.RecoveryS))
	}
	if got := runSpec(t, bounded, baselineSpec); !got.Metastable {
		t.Errorf("baseline's policy on the bounded recording: recovery %s, want stuck", secs(got.RecoveryS))
	}
	got, want := runSpec(t, stuck, "bounded"), Summarize(bounded.Recording)
	t.Logf("bounded from the stuck recording: success %.3f (run %.3f), recovery %s (recording %s, sim %v)",
		val(got.SuccessRatio), val(want.SuccessRatio), secs(got.RecoveryS), secs(want.RecoveryS), boundedRun.Truth.Recovery.UserRecovery)
	if !(math.Abs(val(got.SuccessRatio)-val(want.SuccessRatio)) <= successTolerance) {
		t.Errorf("bounded success %.3f, run %.3f: more than 5 points apart", val(got.SuccessRatio), val(want.SuccessRatio))
	}
	if got.RecoveryS == nil || want.RecoveryS == nil ||
		!(math.Abs(*got.RecoveryS-*want.RecoveryS) <= max(recoveryShare**want.RecoveryS, recoveryFloorS)) {
		t.Errorf("bounded recovery %s, run %s: more than 20 %% (or 5 s) apart", secs(got.RecoveryS), secs(want.RecoveryS))
	}
}
