package sim

import (
	"time"

	"github.com/retrytop/retrytop/retry"
)

// Counters is the sim's ground truth as cumulative counts at one moment,
// for truth per bin: take Counters at every bin edge and Rates of two
// consecutive ones is the truth of that bin. Each count is taken at the
// moment the metric contract counts it (docs/metrics.md, "Counting
// moments"), by the sim itself, apart from the library's metrics: a
// bin's truth and the bin retrytop computes from scrapes taken at the same
// moments can then be compared exactly. Read in a quiescent moment (in
// virtual time, after synctest.Wait) the counts are mutually consistent.
type Counters struct {
	// At is the offset from the start of the run.
	At time.Duration
	// Sent is the originals the users sent.
	Sent int64
	// Outcomes counts finished originals by what the user saw, indexed by
	// Outcome.
	Outcomes [numOutcomes]int64
	Hops     []HopCounters // in Truth.Hops order
	// ProviderReceived is requests that reached the provider.
	ProviderReceived int64
}

// HopCounters is one calling hop's cumulative counts.
type HopCounters struct {
	Name, Dependency string
	Hidden           bool
	// Originals: operations started (counted when they start).
	Originals int64
	// AttemptsStarted and Retries are counted when an attempt is sent;
	// Retries are the attempts after an operation's first.
	AttemptsStarted, Retries int64
	// AttemptsEnded counts attempts when their outcome is known,
	// AttemptSuccesses and Timeouts those that succeeded or timed out.
	AttemptsEnded, AttemptSuccesses, Timeouts int64
	// Completed is operations that ended, Results the same by retry result
	// label value; Admitted those that ended after at least one attempt
	// and OperationAttempts the attempts they made.
	Completed         int64
	Results           map[string]int64
	Admitted          int64
	OperationAttempts int64
	// InFlight is attempts sent and not ended.
	InFlight int64
}

// Counters returns the cumulative counts now.
func (s *Stack) Counters() Counters {
	c := Counters{At: s.clock.Now().Sub(s.start), Sent: s.gen.sent.Load(), ProviderReceived: s.prov.counts.received.Load()}
	for o := range numOutcomes {
		c.Outcomes[o] = s.gen.outcomes[o].Load()
	}
	for _, h := range s.hops {
		k := &h.counts
		hc := HopCounters{
			Name: h.name, Dependency: h.dep, Hidden: h.hidden,
			Originals: k.originals.Load(), AttemptsStarted: k.attempts.Load(), Retries: k.retries.Load(),
			AttemptsEnded: k.ended.Load(), AttemptSuccesses: k.endedOK.Load(), Timeouts: k.timedOut.Load(),
			Admitted: k.admitted.Load(), OperationAttempts: k.opAttempts.Load(),
			InFlight: k.inFlight.Load(),
			Results:  make(map[string]int64, numResults),
		}
		for r := range numResults {
			n := k.results[r].Load()
			hc.Results[retry.Result(r).String()] = n
			hc.Completed += n
		}
		c.Hops = append(c.Hops, hc)
	}
	return c
}

// BinTruth is the truth of one bin: per-second rates between two
// Counters.
type BinTruth struct {
	Start, End time.Duration
	SentPerS   float64
	Hops       []HopBin
	// ProviderReceivedPerS is requests that reached the provider.
	ProviderReceivedPerS float64
}

// HopBin is one hop's rates over a bin, named like model.Signals' fields.
type HopBin struct {
	Name, Dependency string
	Hidden           bool
	OriginalsPerS    float64
	// AttemptsPerS is attempts that ended (as retry_attempts_total counts
	// them); AttemptsStartedPerS those sent.
	AttemptsPerS, AttemptsStartedPerS   float64
	AttemptSuccessesPerS, TimeoutsPerS  float64
	RetriesPerS                         float64
	CompletedPerS, SuccessesPerS        float64
	AdmissionRejectedPerS               float64
	BudgetDeniedPerS                    float64
	AdmittedPerS, OperationAttemptsPerS float64
	// ResultsPerS is by retry result label value.
	ResultsPerS map[string]float64
}

// Rates returns the truth of the bin from prev to c (c later). It is empty
// when the bin has no width.
func (c Counters) Rates(prev Counters) BinTruth {
	b := BinTruth{Start: prev.At, End: c.At}
	w := (c.At - prev.At).Seconds()
	if w <= 0 {
		return b
	}
	per := func(a, z int64) float64 { return float64(z-a) / w }
	b.SentPerS = per(prev.Sent, c.Sent)
	b.ProviderReceivedPerS = per(prev.ProviderReceived, c.ProviderReceived)
	for i, h := range c.Hops {
		if i >= len(prev.Hops) {
			break
		}
		p := prev.Hops[i]
		hb := HopBin{
			Name: h.Name, Dependency: h.Dependency, Hidden: h.Hidden,
			OriginalsPerS:         per(p.Originals, h.Originals),
			AttemptsPerS:          per(p.AttemptsEnded, h.AttemptsEnded),
			AttemptsStartedPerS:   per(p.AttemptsStarted, h.AttemptsStarted),
			AttemptSuccessesPerS:  per(p.AttemptSuccesses, h.AttemptSuccesses),
			TimeoutsPerS:          per(p.Timeouts, h.Timeouts),
			RetriesPerS:           per(p.Retries, h.Retries),
			CompletedPerS:         per(p.Completed, h.Completed),
			AdmittedPerS:          per(p.Admitted, h.Admitted),
			OperationAttemptsPerS: per(p.OperationAttempts, h.OperationAttempts),
			ResultsPerS:           make(map[string]float64, len(h.Results)),
		}
		for r, n := range h.Results {
			hb.ResultsPerS[r] = per(p.Results[r], n)
		}
		hb.SuccessesPerS = hb.ResultsPerS[retry.ResultSuccess.String()]
		hb.AdmissionRejectedPerS = hb.ResultsPerS[retry.ResultCapacityRejected.String()]
		hb.BudgetDeniedPerS = hb.ResultsPerS[retry.ResultBudgetExhausted.String()]
		b.Hops = append(b.Hops, hb)
	}
	return b
}
