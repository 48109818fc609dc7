package analysis

import "github.com/retrytop/retrytop/model"

// deriveRatios fills the ratios of s from its rates. It is the one
// definition of amplification and effective success, used for a row's
// window, an aggregate of rows and a span of bins alike, so the three can
// never disagree.
//
// Each ratio takes both sides from quantities counted at the same moment
// (docs/metrics.md, "Counting moments"): attempts are counted when they
// end, so amplification divides them by originals that ended, and among
// those only the originals that reached the provider at least once. Every
// such original's last attempt ends right before it does, so over any
// window the attempts can only outnumber them: amplification is never
// below 1 by construction, whatever the latency does. Effective success
// divides successful results by all results, both counted at the end.
// When an emitter lacks the exact quantity the next best is used, and
// AmplificationBasis says which.
func deriveRatios(s *model.Signals) {
	s.AttemptsPerOriginal = ratio(s.AttemptsPerS, s.OriginalsPerS)
	base, basis := admittedBase(s)
	s.Amplification, s.AmplificationBasis = ratio(s.AttemptsPerS, base), basis
	if s.OperationAttemptsPerS.OK() && s.AdmittedPerS.OK() {
		// Both sides added when each operation ended: exact in any
		// window, a short bin included.
		s.Amplification, s.AmplificationBasis = ratio(s.OperationAttemptsPerS, s.AdmittedPerS), model.AmplificationOperations
	}
	if !s.Amplification.OK() {
		s.AmplificationBasis = ""
	}
	if s.CompletedPerS.OK() {
		s.EffectiveSuccess = ratio(s.SuccessesPerS, s.CompletedPerS)
	} else {
		s.EffectiveSuccess = ratio(s.SuccessesPerS, s.OriginalsPerS)
	}
}

// admittedBase is the originals amplification divides by, the best the
// emitter allows, and its basis: admitted originals that ended; else
// every ended original less those refused by admission; else originals
// started less admission rejections.
func admittedBase(s *model.Signals) (model.Value, string) {
	switch {
	case s.AdmittedPerS.OK():
		return s.AdmittedPerS, model.AmplificationAdmitted
	case s.CompletedPerS.OK():
		return less(s.CompletedPerS, s.ResultsPerS[model.ResultCapacityRejected]), model.AmplificationCompleted
	case s.OriginalsPerS.OK():
		return less(s.OriginalsPerS, s.AdmissionRejectedPerS), model.AmplificationStarted
	}
	return model.Absent, ""
}

// less is a - b, with an absent b taken as nothing to take off; never below
// zero (two counters read at slightly different moments).
func less(a, b model.Value) model.Value {
	if !a.OK() {
		return model.Absent
	}
	return model.Some(max(a.V()-b.Or(0), 0))
}
