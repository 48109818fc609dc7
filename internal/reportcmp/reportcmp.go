// Package reportcmp compares the findings of two analysis reports of one
// incident read by two readers (scraping directly and through
// Prometheus), for the peer tests of promapi and cmd/retrytop: it
// says why a finding may fire on one reader only, and nothing else. A
// finding of one reader only is explained by a hole (the other reader has
// no data for its row in a bin where it held) or by a threshold crossing
// within the readers' sampling phase (AtCrossing).
package reportcmp

import (
	"fmt"
	"math"
	"time"

	"github.com/retrytop/retrytop/analysis"
)

// HoleUnder names the first timeline bin of other in which f's row has no
// data while f held ("" when there is none, and for a chain's finding,
// which is about its design, not a bin's rates). A scrape of that target
// failed or came late on other's path only, so its timeline has one bin
// less there and the next holds both bins' counts: the two readers were
// given different data.
func HoleUnder(f analysis.Finding, other analysis.Report) string {
	if f.Chain != "" {
		return ""
	}
	for _, d := range other.Dependencies {
		if d.Target != f.Target || d.Dependency != f.Dependency {
			continue
		}
		for _, b := range d.Timeline {
			start, end := unix(b.StartUnix), unix(b.EndUnix)
			if !b.OriginalsPerS.OK && start.Before(f.End) && end.After(f.Start) {
				return fmt.Sprintf("%s -> %s has no data in the bin %s..%s, inside %s..%s where it held", f.Target, f.Dependency,
					clock(start), clock(end), clock(f.Start), clock(f.End))
			}
		}
	}
	return ""
}

// AtCrossing explains a finding f that fired on has's reader only by a
// threshold crossing within the two readers' sampling phase, or returns
// "" when it cannot.
//
// The bound. The readers scrape every interval, each at its own phase.
// Both reports' bins sit on one grid (multiples of the bin width), and a
// bin's rates are counted from each reader's last scrape at or before
// the bin's start to its last scrape at or before its end (the bin's
// sampled_seconds). So each reader's span of a bin is the bin shifted back
// by less than one interval, and the two spans of a bin differ by a shift
// of less than one interval. fine is a report of either reader over the
// same time with bins one interval wide: its bins are that reader's spans
// between consecutive scrapes, so summing them gives its counts over the
// bin shifted by -1, 0 and +1 intervals, and each end of the other
// reader's span lies between two consecutive scrapes of fine's reader. A
// ratio over it is taken to lie between those over the neighbouring
// shifts (traffic moving one way across a scrape interval: the gap rules'
// sampleSkew makes the same assumption). Where the rule's conditions hold at some of the
// three shifts and not at others, the crossing lies within the phase
// bound and either reader may see the bin on either side of it; where
// they hold at all three (or at none), both readers must agree.
//
// A one-reader finding is explained when every bin of has inside the
// finding's span in which has's own bin meets the rule's conditions
// either meets them in other's bin too or lies at a crossing, and at
// least one lies at a crossing (when every bin meets them in other's too,
// the readers differ in what this check does not rebuild: the latency
// rise, persistence, the merging of bins' findings; unexplained).
// RETRY_AMPLIFICATION's conditions are restated here (amplification over
// its threshold with originals and retries over their minimums, and a
// failure share over its own when the finding says the attempts failed;
// analysis.retryAmplification, findings.go, whose latency rise is a
// quantile this check does not recompute, so analysis.Evaluate cannot
// stand for it).
//
// The rules whose conditions read only counters' rates (the gap rules,
// WORK_AFTER_CANCEL, ADMISSION_SHEDDING, DEADLINE_NOT_PROPAGATED) are
// re-evaluated by analysis itself on the shifted counts (rateRuleAtCrossing).
// The others read gauges or quantiles, which a shift cannot rebuild from
// rates, and are not explained.
func AtCrossing(f analysis.Finding, has, other, fine analysis.Report, th analysis.Thresholds, interval time.Duration) string {
	if f.Chain != "" || interval <= 0 {
		return ""
	}
	switch f.Code {
	case analysis.CodeRetryAmplification:
		return amplificationAtCrossing(f, has, other, fine, th, interval)
	case analysis.CodeHiddenRetries, analysis.CodeHopLoss, analysis.CodeWorkAfterCancel, analysis.CodeAdmissionShedding, analysis.CodeDeadlineDropped:
		return rateRuleAtCrossing(f, has, other, fine, th, interval)
	}
	return ""
}

// amplificationAtCrossing is AtCrossing for RETRY_AMPLIFICATION.
func amplificationAtCrossing(f analysis.Finding, has, other, fine analysis.Report, th analysis.Thresholds, interval time.Duration) string {
	failing := false
	if share, ok := f.Evidence.Get("failure_share"); ok && share >= th.FailureShare {
		failing = true
	}
	holds := func(c counts) bool {
		return c.ok && c.den > 0 && c.att/c.den > th.Amplification && c.orig/c.secs >= th.MinOriginalsPerS &&
			c.retries/c.secs >= th.MinEventsPerS && (!failing || c.att > 0 && c.fail/c.att >= th.FailureShare)
	}
	hb, ob, fb := timeline(has, f), timeline(other, f), timeline(fine, f)
	step := interval.Seconds()
	fineAt := map[int64]analysis.BinReport{}
	for _, b := range fb {
		if math.Abs(b.EndUnix-b.StartUnix-step) < 1e-3 {
			fineAt[ms(b.StartUnix)] = b
		}
	}
	otherAt := map[[2]int64]analysis.BinReport{}
	for _, b := range ob {
		otherAt[[2]int64{ms(b.StartUnix), ms(b.EndUnix)}] = b
	}
	var why string
	n, crossings := 0, 0
	for _, b := range hb {
		if b.StartUnix < sec(f.Start) || b.EndUnix > sec(f.End) || !holds(countsOf(b)) {
			continue
		}
		n++
		o, ok := otherAt[[2]int64{ms(b.StartUnix), ms(b.EndUnix)}]
		if ok && holds(countsOf(o)) {
			why += fmt.Sprintf("; %s: the other's bin meets the conditions too", clock(unix(b.StartUnix)))
			continue
		}
		// The bin shifted by -1, 0 and +1 intervals, from fine's bins.
		var at []string
		held, notHeld := false, false
		for s := -1; s <= 1; s++ {
			var bins []analysis.BinReport
			for t := b.StartUnix + float64(s)*step; t < b.EndUnix+float64(s)*step-1e-3; t += step {
				if x, ok := fineAt[ms(t)]; ok {
					bins = append(bins, x)
				} else {
					bins = nil
					break
				}
			}
			c := countsOf(bins...)
			if !c.ok || len(bins) == 0 {
				at = append(at, fmt.Sprintf("%+d: -", s))
				continue
			}
			h := holds(c)
			held, notHeld = held || h, notHeld || !h
			at = append(at, fmt.Sprintf("%+d: amplification %.3g, %.3g originals/s, %.3g retries/s", s, c.att/c.den, c.orig/c.secs, c.retries/c.secs))
		}
		if !held || !notHeld {
			return ""
		}
		crossings++
		why += fmt.Sprintf("; %s: a crossing within one scrape interval (shifts %v)", clock(unix(b.StartUnix)), at)
	}
	// Bins where the other reader meets the conditions too only do not
	// contradict: with no crossing at all, the readers differ in something
	// this check does not rebuild (persistence, the latency rise, how the
	// bins' findings were merged), which is what the peer tests look for.
	if n == 0 || crossings == 0 {
		return ""
	}
	return fmt.Sprintf("held at a threshold crossing in its %d bin(s)%s", n, why)
}

// counts are a row's counts over some bins: the seconds they were sampled
// over, originals, attempts, amplification's denominator, retries and
// failed attempts (provider errors and timeouts).
type counts struct {
	secs, orig, att, den, retries, fail float64
	ok                                  bool
}

// countsOf adds the bins' counts up: each rate times the bin's sampled
// seconds (a bin's rates are means over them). Not ok when a bin lacks
// one of them.
func countsOf(bins ...analysis.BinReport) counts {
	c := counts{ok: len(bins) > 0}
	for _, b := range bins {
		s, ok := b.SampledSeconds.Get()
		o, a, amp, r := b.OriginalsPerS, b.AttemptsPerS, b.Amplification, b.RetriesPerS
		if !ok || s <= 0 || !o.OK || !a.OK || !amp.OK || amp.V <= 0 || !r.OK {
			return counts{}
		}
		c.secs += s
		c.orig += o.V * s
		c.att += a.V * s
		c.den += a.V / amp.V * s
		c.retries += r.V * s
		c.fail += (b.ProviderErrorsPerS.Or(0) + b.TimeoutsPerS.Or(0)) * s
	}
	return c
}

// timeline is rep's timeline of f's row.
func timeline(rep analysis.Report, f analysis.Finding) []analysis.BinReport {
	for _, d := range rep.Dependencies {
		if d.Target == f.Target && d.Dependency == f.Dependency {
			return d.Timeline
		}
	}
	return nil
}

func unix(s float64) time.Time { return time.UnixMilli(ms(s)) }
func ms(s float64) int64       { return int64(math.Round(s * 1000)) }
func sec(t time.Time) float64  { return float64(t.UnixMilli()) / 1000 }
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }
