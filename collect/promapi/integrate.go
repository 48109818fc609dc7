package promapi

import (
	"strings"
	"time"

	"github.com/retrytop/retrytop/collect/dialect"
)

// How increases become counters.
//
// The store and analysis read counters: a rate over a window is the
// increase between the window's first and last sample over the time
// between them. Each increase query is therefore evaluated as
// increase(F[t - a]) at t, where a is an earlier evaluation of the same
// query (an anchor), so that its result is the increase over exactly
// (a, t]; a synthetic counter per result series adds them up:
//
//	C(t) = C(a) + increase(F[t - a]) at t
//
// Anchors are committed at most every Range apart (Range: two scrape
// intervals, so that every span holds two samples of every raw series) and
// every evaluation spans from the newest anchor at least Range before it:
// one chain of non-overlapping spans, so neither a range/2 lag nor the
// time before a series existed enters the rates. A series that was not in
// the result at its anchor starts there from 0 (new since) or from its
// last value (back after a gap: what happened in the gap is unknown, as
// it is to Prometheus). See docs/prometheus.md.

// rangeSentinel is the range query templates are built with; each
// evaluation substitutes the span it integrates (withRange).
const rangeSentinel = 987654321 * time.Millisecond

var sentinelText = "[" + dialect.PromDuration(rangeSentinel) + "]"

// withRange sets the range of every increase() of a query template.
func withRange(tpl string, d time.Duration) string {
	return strings.ReplaceAll(tpl, sentinelText, "["+dialect.PromDuration(d.Truncate(time.Millisecond))+"]")
}

// plan is how one query is evaluated in one refresh.
type plan struct {
	span time.Duration // the range of increase()
	// Instant queries: anchorMs is the evaluation the span starts at (0:
	// none, the results are baselines); commit makes this evaluation an
	// anchor.
	anchorMs int64
	commit   bool
	// older is set when anchorMs is not the query's newest anchor: a
	// series without a counter there waits for an evaluation from the
	// newest (its counter at the other anchor would be unknown).
	older bool
	// query_range (backfill): tiles of span from startMs, every point
	// an anchor for the next.
	startMs, stepMs int64
	// virtualMs is set for a baseline: the start of its span, made an
	// anchor the baseline's increase before it.
	virtualMs int64
}

// from returns the anchor the value at t counts from (0: a baseline),
// whether t becomes an anchor and whether the anchor is an older one.
func (p plan) from(t int64) (int64, bool, bool) {
	if p.stepMs > 0 {
		if t-p.stepMs >= p.startMs {
			return t - p.stepMs, true, false
		}
		return 0, true, false
	}
	return p.anchorMs, p.commit, p.older
}

// anchors are the recent evaluations of one query that later ones span
// from: at most the two newest, oldest first.
type anchors struct {
	ms []int64
}

// pick plans an instant evaluation at t (ms): from the newest anchor if it
// is at least minMs old (and then t becomes an anchor), else from the one
// before. An anchor older than maxMs, or none, makes t a baseline.
func (a *anchors) pick(t, minMs, maxMs int64) plan {
	n := len(a.ms)
	// A baseline's span (t-minMs, t] sets the counter at t-minMs too (a
	// virtual anchor), so that the next evaluations span from there and
	// every series has a sample at each of them.
	base := plan{span: time.Duration(minMs) * time.Millisecond, commit: true, virtualMs: t - minMs}
	if n == 0 || t-a.ms[n-1] > maxMs {
		a.ms = a.ms[:0]
		return base
	}
	last := a.ms[n-1]
	switch {
	case t <= last:
		// The clock did not move: nothing new to integrate.
		return plan{span: base.span, anchorMs: last}
	case t-last >= minMs:
		return plan{span: time.Duration(t-last) * time.Millisecond, anchorMs: last, commit: true}
	case n >= 2 && t-a.ms[n-2] <= maxMs:
		return plan{span: time.Duration(t-a.ms[n-2]) * time.Millisecond, anchorMs: a.ms[n-2], older: true}
	}
	// One anchor younger than the range (just after the first
	// evaluation): a shorter span; series with one sample in it wait.
	return plan{span: time.Duration(t-last) * time.Millisecond, anchorMs: last}
}

// commit records the anchors of a successful evaluation at at.
func (a *anchors) commit(p plan, at int64) {
	switch {
	case p.stepMs > 0:
		a.ms = append(a.ms[:0], at-p.stepMs, at)
		if at-p.stepMs < p.startMs {
			a.ms = a.ms[1:]
		}
	case p.virtualMs != 0:
		a.ms = append(a.ms[:0], p.virtualMs, at)
	case p.commit:
		a.ms = append(a.ms, at)
		if len(a.ms) > 2 {
			a.ms = append(a.ms[:0], a.ms[len(a.ms)-2:]...)
		}
	}
}

// integral is the synthetic counter of one increase series.
type integral struct {
	t int64   // time of the newest stored sample (ms; 0: none yet)
	v float64 // the newest stored value; never decreases
	// chain holds the counter at the query's recent anchors, unclamped:
	// the stored value is the running maximum of the chain, so that an
	// overshoot of one extrapolated span never reads as a counter reset,
	// while the chain itself never absorbs the clamp.
	chain [3]struct {
		t int64
		c float64
	}
}

func (st *integral) chainAt(t int64) (float64, bool) {
	if st == nil {
		return 0, false
	}
	for _, e := range st.chain {
		if e.t == t && t != 0 {
			return e.c, true
		}
	}
	return 0, false
}

// setChain records the counter at anchor t over the oldest entry.
func (st *integral) setChain(t int64, c float64) {
	i := 0
	for j, e := range st.chain {
		if e.t == t {
			i = j
			break
		}
		if e.t < st.chain[i].t {
			i = j
		}
	}
	st.chain[i].t, st.chain[i].c = t, c
}

// firstSpan says what a series new to the Source does with the increase
// its first span brings, which depends on how the store reads its first
// value (model.Store.Append).
type firstSpan int

const (
	// spanBaseline: the target is new to the store, so the series'
	// first value is a baseline, as a scraped target's first scrape is;
	// its chain starts there too, so nothing from before counts.
	spanBaseline firstSpan = iota
	// spanSeeded: the store reads a new series of a target it holds as
	// starting from 0 at the target's previous snapshot: the first span
	// is stored at once.
	spanSeeded
	// spanOwed: the store takes the first value for a baseline
	// (FirstValueIsBaseline) though the target is known: the series
	// stores 0 and its first span lands with its next sample.
	spanOwed
)

// step integrates inc, the increase over (from, t] (from 0: a baseline),
// and returns the value to store at t; ok is false for a time not after
// the newest sample. first applies to a series seen for the first time.
func (st *integral) step(from, t int64, inc float64, commit, older bool, first firstSpan, virtual int64) (float64, bool) {
	if t <= st.t {
		return 0, false
	}
	fresh := st.t == 0
	c := st.v
	if from != 0 {
		base, known := st.chainAt(from)
		if !known {
			if older {
				return 0, false
			}
			// New since from (it starts there from 0, or at t for a
			// baseline), or back after a gap (from its last value: the
			// gap's increase is unknown).
			base = st.v
			if fresh && first == spanBaseline {
				base = -inc
			}
			st.setChain(from, base)
		}
		c = base + inc
	}
	if commit {
		st.setChain(t, c)
	}
	if from == 0 && virtual != 0 {
		st.setChain(virtual, c-inc)
	}
	st.t = t
	if !fresh || first == spanSeeded {
		st.v = max(st.v, c)
	}
	return st.v, true
}
