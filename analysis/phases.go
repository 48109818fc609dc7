package analysis

import (
	"fmt"
	"slices"
	"time"

	"github.com/retrytop/retrytop/model"
)

// PhaseKind is what the system was doing during a phase.
type PhaseKind string

// Phase kinds (docs/findings.md, "The incident story").
const (
	PhaseHealthy    PhaseKind = "healthy"
	PhaseDegraded   PhaseKind = "degraded"
	PhaseOverloaded PhaseKind = "overloaded"
	PhaseRecovering PhaseKind = "recovering"
	// PhaseNoData is a stretch with too little traffic to tell.
	PhaseNoData PhaseKind = "no_data"
)

// Phase is a run of consecutive timeline bins of one kind.
type Phase struct {
	Kind  PhaseKind `json:"kind"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Bins  int       `json:"bins"`
	// PeakAmplification is the highest bin amplification in the phase.
	PeakAmplification model.Value `json:"peak_amplification"`
	// GoodputPerS is successful originals (results{success}, which are
	// within the deadline by definition) per second over the phase;
	// OriginalsPerS the offered load; EffectiveSuccess their ratio.
	GoodputPerS      model.Value `json:"goodput_per_s"`
	OriginalsPerS    model.Value `json:"originals_per_s"`
	EffectiveSuccess model.Value `json:"effective_success"`
	// Trigger is true when the trigger (the dependency's service time
	// above its baseline) was on in any bin of the phase.
	Trigger bool `json:"trigger"`
	// RecoveryS is set on the first healthy phase after the trigger ended
	// (on the first phase with data after it when none is healthy: goodput
	// may be back while latency or amplification still read high):
	// the seconds from the trigger's end until goodput came back for good
	// to RecoveryFraction of its ratio to the offered load before the
	// trigger (Recovery: 0 when it was back at once). A report dates both
	// from the scrapes (scrapeRecovery); Phases alone, from the bins.
	RecoveryS model.Value `json:"recovery_s"`
}

// triggerState is per bin: the trigger is on, off (measured, normal) or
// unknown (no service time).
type triggerState int8

const (
	triggerUnknown triggerState = iota
	triggerOff
	triggerOn
)

// triggers classifies every bin's trigger (triggerOf) and returns the
// index of the last bin where it was on (-1 when never).
func triggers(tl []model.Signals, th Thresholds) ([]triggerState, int) {
	base := serviceBase(tl)
	out := make([]triggerState, len(tl))
	last := -1
	for i := range tl {
		out[i] = triggerOf(tl[i].DependencyServiceTimeP50, tl[i].DependencyReceivedPerS, base, th)
		if out[i] == triggerOn {
			last = i
		}
	}
	return out, last
}

// triggerOf is the trigger over a span (a bin, or the time between two
// scrapes) in which the dependency's service time had median p50 and it
// received requests at received per second, against its baseline base
// (its lowest): on when p50 rose to th.TriggerRise times base; unknown
// without a baseline.
func triggerOf(p50, received, base model.Value, th Thresholds) triggerState {
	switch {
	case !base.OK():
		return triggerUnknown
	case !p50.OK():
		// Busy but finishing nothing: requests are stuck or abandoned,
		// so its service time is anything but known to be normal.
		if received.Or(0) >= th.MinOriginalsPerS {
			return triggerOn
		}
		return triggerUnknown
	case rising(p50, base, th.TriggerRise, th.LatencyRiseMin.Seconds()):
		return triggerOn
	}
	return triggerOff
}

// binKind classifies one bin before the recovering rule.
func binKind(s *model.Signals, b baseline, on bool, th Thresholds) PhaseKind {
	if !busy(s, th) {
		return PhaseNoData
	}
	eff, effOK := s.EffectiveSuccess.Get()
	amp, ampOK := s.Amplification.Get()
	if (effOK && eff < th.GoodputOverloaded) || (ampOK && amp >= th.AmplificationCritical) {
		return PhaseOverloaded
	}
	if (effOK && eff < th.GoodputLow) || (ampOK && amp > th.Amplification) || on ||
		rising(successP50(s), b.successP50, th.LatencyRise, th.LatencyRiseMin.Seconds()) {
		return PhaseDegraded
	}
	return PhaseHealthy
}

// Phases splits one row's timeline into phases. Each bin is classified:
//
//   - no_data: originals absent or below th.MinOriginalsPerS;
//   - overloaded: effective success below th.GoodputOverloaded, or
//     amplification at least th.AmplificationCritical;
//   - degraded: effective success below th.GoodputLow, amplification above
//     th.Amplification, the trigger on, or success p50 rising (th.LatencyRise
//     over the timeline's lowest);
//   - healthy: none of these;
//   - recovering: a degraded bin after the trigger ended (its last "on"
//     bin); without a trigger signal, a degraded bin that follows an
//     overloaded one with no healthy bin in between. An overloaded bin
//     stays overloaded whatever the trigger does (that is METASTABLE).
//
// The trigger is the dependency's own service time
// (Signals.DependencyServiceTimeP50), on in a bin when it is at least
// th.TriggerRise times its lowest in the timeline, or when the dependency
// received at least th.MinOriginalsPerS requests but finished none (no
// service time: stuck or abandoned work, not a normal service time); rows
// whose dependency exports no service time have no trigger, and no
// RecoveryS. RecoveryS is Recovery of the row's goodput over its offered
// load per bin from the end of the trigger's last bin, with
// RecoveryFraction of that ratio before the trigger as the threshold
// (rowRecovery); a report replaces it with the one its scrapes date
// (fineRecovery).
// Consecutive bins of one kind make a phase.
func Phases(timeline []model.Signals, th Thresholds) []Phase {
	if len(timeline) == 0 {
		return nil
	}
	b := baselineOf(timeline)
	trig, lastOn := triggers(timeline, th)
	kinds := make([]PhaseKind, len(timeline))
	afterOverload := false
	for i := range timeline {
		k := binKind(&timeline[i], b, trig[i] == triggerOn, th)
		switch k {
		case PhaseOverloaded:
			afterOverload = true
		case PhaseHealthy:
			afterOverload = false
		case PhaseDegraded:
			if (lastOn >= 0 && i > lastOn) || (lastOn < 0 && afterOverload) {
				k = PhaseRecovering
			}
		}
		kinds[i] = k
	}

	var out []Phase
	after := -1 // the first phase with data after the trigger
	recovered := false
	for i := 0; i < len(timeline); {
		j := i
		for j < len(timeline) && kinds[j] == kinds[i] {
			j++
		}
		p := phaseOf(kinds[i], timeline[i:j], trig[i:j])
		if lastOn >= 0 && i > lastOn && p.Kind != PhaseNoData && after < 0 {
			after = len(out)
		}
		if lastOn >= 0 && i > lastOn && !recovered && p.Kind == PhaseHealthy {
			p.RecoveryS = rowRecovery(timeline, slices.Index(trig, triggerOn), lastOn, th)
			recovered = true
		}
		out = append(out, p)
		i = j
	}
	if !recovered && after >= 0 {
		// Goodput may be back while latency or amplification keep every
		// later bin degraded: the recovery is goodput's, so it goes on
		// the first phase after the trigger.
		out[after].RecoveryS = rowRecovery(timeline, slices.Index(trig, triggerOn), lastOn, th)
	}
	return out
}

func phaseOf(k PhaseKind, bins []model.Signals, trig []triggerState) Phase {
	p := Phase{Kind: k, Start: msTime(bins[0].StartMs), End: msTime(bins[len(bins)-1].EndMs), Bins: len(bins)}
	var succ, orig, succSec, origSec float64
	for i := range bins {
		s := &bins[i]
		w := rateSeconds(s)
		if v, ok := s.SuccessesPerS.Get(); ok {
			succ += v * w
			succSec += w
		}
		if v, ok := s.OriginalsPerS.Get(); ok {
			orig += v * w
			origSec += w
		}
		if a, ok := s.Amplification.Get(); ok && (!p.PeakAmplification.OK() || a > p.PeakAmplification.V()) {
			p.PeakAmplification = model.Some(a)
		}
		if trig[i] == triggerOn {
			p.Trigger = true
		}
	}
	if succSec > 0 {
		p.GoodputPerS = model.Some(succ / succSec)
	}
	if origSec > 0 {
		p.OriginalsPerS = model.Some(orig / origSec)
	}
	p.EffectiveSuccess = ratio(p.GoodputPerS, p.OriginalsPerS)
	return p
}

// metastable looks for the trigger gone but the system still failing: after
// the last bin where the row's dependency was slow (see Phases), the bins
// that follow with effective success below th.GoodputLow and
// amplification above th.Amplification. When they last at least
// th.MetastableAfter it is METASTABLE: critical when the timeline ends
// that way (stuck), a warning when the system got out by itself later.
func metastable(k model.Key, tl []model.Signals, th Thresholds) (Finding, bool) {
	trig, lastOn := triggers(tl, th)
	if lastOn < 0 || lastOn == len(tl)-1 {
		return Finding{}, false // no trigger seen, or it is still on
	}
	end := lastOn
	var succ, orig, att, width, peak float64
	for i := lastOn + 1; i < len(tl); i++ {
		s := &tl[i]
		eff, ok1 := s.EffectiveSuccess.Get()
		amp, ok2 := s.Amplification.Get()
		if trig[i] == triggerOn || !busy(s, th) || !ok1 || !ok2 || eff >= th.GoodputLow || amp <= th.Amplification {
			break
		}
		w := rateSeconds(s)
		succ += s.SuccessesPerS.Or(0) * w
		orig += s.OriginalsPerS.V() * w
		att += s.AttemptsPerS.Or(0) * w
		width += w
		peak = max(peak, amp)
		end = i
	}
	stuck := float64(tl[end].EndMs-tl[lastOn].EndMs) / 1000
	if end == lastOn || stuck < th.MetastableAfter.Seconds() {
		return Finding{}, false
	}
	f := Finding{Code: CodeMetastable, Severity: SeverityWarning, Target: k.Target, Dependency: k.Dependency,
		Start: msTime(tl[lastOn].EndMs), End: msTime(tl[end].EndMs)}
	eff, amp := succ/orig, att/orig
	if end == len(tl)-1 {
		f.Severity = SeverityCritical
		f.Message = fmt.Sprintf("%s -> %s: %s's service time is back to normal but for %s since, goodput stays at %s of originals with %s attempts each: stuck in a retry storm (metastable)",
			k.Target, k.Dependency, k.Dependency, secs(stuck), pct(eff), x2(amp))
	} else {
		f.Message = fmt.Sprintf("%s -> %s: after %s's service time went back to normal, goodput stayed at %s of originals with %s attempts each for %s before recovering (metastable)",
			k.Target, k.Dependency, k.Dependency, pct(eff), x2(amp), secs(stuck))
	}
	base, after := serviceBase(tl), tl[end].DependencyServiceTimeP50
	f.Evidence.add("stuck_s", stuck)
	f.Evidence.add("effective_success", eff)
	f.Evidence.add("goodput_per_s", succ/width)
	f.Evidence.add("originals_per_s", orig/width)
	f.Evidence.add("amplification", amp)
	f.Evidence.add("peak_amplification", peak)
	f.Evidence.addValue("service_time_p50_s", after)
	f.Evidence.addValue("baseline_service_time_p50_s", base)
	return f, true
}
