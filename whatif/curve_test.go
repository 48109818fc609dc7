package whatif

import (
	"testing"

	"github.com/retrytop/retrytop/sim"
)

// TestCurveOfBaseline: the recorded chain of the demo's baseline (the
// client makes up to 3 attempts, no budget; the hops above it 1) checks
// as 1 attempt per original at p = 0 and 3 at p = 1, steady and worst
// alike, and the incident's point is the trigger's bins: the share of the
// client's attempts that failed, and its attempts per user original.
func TestCurveOfBaseline(t *testing.T) {
	fit, _ := recordFit(t, "baseline", sim.Options{Seed: 1}, 0)
	rep, err := Build("baseline.rtd", fit, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Curve
	if c == nil {
		t.Fatal("no policy curve")
	}
	if len(c.Layers) != len(fit.Model.Hops) {
		t.Fatalf("%d layers, %d hops", len(c.Layers), len(fit.Model.Hops))
	}
	first, last := c.Points[0], c.Points[len(c.Points)-1]
	for _, v := range []struct {
		name string
		got  *float64
		want float64
	}{
		{"steady at 0", first.SteadyLoad, 1}, {"worst at 0", first.WorstLoad, 1},
		{"steady at 1", last.SteadyLoad, 3}, {"worst at 1", last.WorstLoad, 3},
	} {
		if v.got == nil || *v.got != v.want {
			t.Errorf("%s: %v, want %v", v.name, v.got, v.want)
		}
	}
	inc := c.Incident
	if inc == nil {
		t.Fatal("no incident point")
	}
	// Recomputed from the recording's bins over the trigger, as the
	// report's reader would.
	var off, att, failed float64
	rec := fit.Recording
	for i := rec.Trigger.Start; i < rec.Trigger.End; i++ {
		off, att, failed = off+rec.Offered[i], att+rec.Attempts[i], failed+rec.Failed[i]
	}
	if inc.P != failed/att || inc.Amplification != att/off {
		t.Errorf("incident %+v, want p %v amplification %v", *inc, failed/att, att/off)
	}
	// Three attempts bound the storm: the point sits at or under the
	// worst case, and most attempts of the slowdown time out.
	if inc.Amplification > 3 || inc.P < 0.5 {
		t.Errorf("incident %+v: over the 3-attempt cap, or a storm without failures", *inc)
	}
	t.Logf("incident p %.3f amplification %.3f over bins %d..%d", inc.P, inc.Amplification, rec.Trigger.Start, rec.Trigger.End)
}
