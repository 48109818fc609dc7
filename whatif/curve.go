package whatif

import (
	"math"

	"github.com/retrytop/retrytop/policy"
)

// Curve is the recorded chain's policy checked as `retrytop policy check`
// checks one (policy.CheckChain, each hop with its fitted policy), with
// the incident's own point on it: what the policy allows at each failure
// fraction of the provider, and where the incident sat.
type Curve struct {
	// Layers are the hops, caller first, as the check read them.
	Layers []policy.CheckLayer `json:"layers"`
	// Points are the provider's load multiplier (attempts at the provider
	// per user original) at each failure fraction p, in steady state and
	// in the worst case; null where the check cannot tell.
	Points []CurvePoint `json:"points"`
	// Incident is the trigger's bins of the recording: the failure
	// fraction of the provider caller's attempts and the attempts per user
	// original; nil without a trigger or without attempt outcomes.
	Incident *IncidentPoint `json:"incident"`
}

// CurvePoint is the check at one failure fraction.
type CurvePoint struct {
	P          float64  `json:"p"`
	SteadyLoad *float64 `json:"steady_load"`
	WorstLoad  *float64 `json:"worst_load"`
}

// IncidentPoint is the recording over its trigger.
type IncidentPoint struct {
	P             float64 `json:"p"`
	Amplification float64 `json:"amplification"`
}

// curveOf checks the fitted hops' policies; nil when a hop's policy has
// no analysis (the check's error is not the report's).
func curveOf(f Fitted) *Curve {
	m, rec := f.Model, f.Recording
	if len(m.Hops) == 0 {
		return nil
	}
	specs := make([]policy.Spec, len(m.Hops))
	bases := make([]policy.Base, len(m.Hops))
	for i, h := range m.Hops {
		specs[i] = policy.Spec{Name: "recorded", Text: "recorded " + h.Name}
		bases[i] = h.Base
	}
	o := policy.CheckOptions{Bases: bases, Rate: mean(m.Arrivals) / m.Bin.Seconds()}
	inc := incidentPoint(rec)
	if inc != nil {
		var failed, timedOut float64
		for i := rec.Trigger.Start; i < rec.Trigger.End; i++ {
			failed += zeroNaN(at(rec.Failed, i))
			timedOut += zeroNaN(at(rec.TimedOut, i))
		}
		o.Timeouts = timedOut*2 > failed
	}
	c, err := policy.CheckChain(specs, o)
	if err != nil {
		return nil
	}
	out := &Curve{Layers: c.Layers, Incident: inc}
	for _, p := range c.Points {
		out.Points = append(out.Points, CurvePoint{P: p.P, SteadyLoad: finite(p.SteadyLoad), WorstLoad: finite(p.WorstLoad)})
	}
	return out
}

// incidentPoint sums the trigger's bins; nil when a bin of it lacks the
// attempts, their outcomes or the originals.
func incidentPoint(rec Series) *IncidentPoint {
	if rec.Trigger.End <= rec.Trigger.Start {
		return nil
	}
	var off, att, failed float64
	for i := rec.Trigger.Start; i < rec.Trigger.End; i++ {
		o, a, f := at(rec.Offered, i), at(rec.Attempts, i), at(rec.Failed, i)
		if math.IsNaN(o) || math.IsNaN(a) || math.IsNaN(f) {
			return nil
		}
		off, att, failed = off+o, att+a, failed+f
	}
	if off <= 0 || att <= 0 {
		return nil
	}
	return &IncidentPoint{P: min(failed/att, 1), Amplification: att / off}
}

// finite is v, nil when NaN or infinite (unknown to the check).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
