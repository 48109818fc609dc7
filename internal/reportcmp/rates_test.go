package reportcmp

import (
	"math"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// rates are a row's per-second rates by signal: att (attempts), orig
// (originals), done (completed operations), recv and wac (the
// dependency's received requests and work after cancel).
type rates map[string]float64

func signals(target, dep string, r rates) model.Signals {
	s := model.Signals{Target: target, Dependency: dep}
	for k, v := range r {
		switch k {
		case "att":
			s.AttemptsPerS = model.Some(v)
		case "orig":
			s.OriginalsPerS = model.Some(v)
		case "done":
			s.CompletedPerS = model.Some(v)
		case "recv":
			s.DependencyReceivedPerS = model.Some(v)
		case "wac":
			s.DependencyWorkAfterCancelPerS = model.Some(v)
		}
	}
	return s
}

// row is a report's row target -> dep with its window's rates and, over
// [from, to) s after t0 in bins of width s, the rates at (bin start - t0).
func row(target, dep string, window rates, from, to, width float64, at func(t float64) rates) analysis.DependencyReport {
	d := analysis.DependencyReport{Signals: signals(target, dep, window)}
	for t := from; t < to-1e-9; t += width {
		if r := at(t); r != nil {
			d.Timeline = append(d.Timeline, analysis.BinReport{StartUnix: t0 + t, EndUnix: t0 + t + width,
				SampledSeconds: model.Some(width), Signals: signals(target, dep, r)})
		}
	}
	return d
}

func steady(r rates) func(float64) rates { return func(float64) rates { return r } }

// step is before until at, after from then on.
func step(at float64, before, after rates) func(float64) rates {
	return func(t float64) rates {
		if t < at {
			return before
		}
		return after
	}
}

// hole is r with no bin in [from, to).
func hole(r func(float64) rates, from, to float64) func(float64) rates {
	return func(t float64) rates {
		if t >= from && t < to {
			return nil
		}
		return r(t)
	}
}

func finding(code, target, dep string, from, to float64, bins bool) analysis.Finding {
	f := analysis.Finding{Code: code, Target: target, Dependency: dep,
		Start: time.UnixMilli(int64((t0 + from) * 1000)), End: time.UnixMilli(int64((t0 + to) * 1000))}
	if bins {
		f.Evidence = analysis.Evidence{{Name: "bins", Value: 2}}
	}
	return f
}

// chain is a report of app -> client -> provider over [0, 20] s: app
// sends att/s to client, client completes done/s and sends its own
// attempts on; 2 s bins (or 1 s for fine) with those rates.
func chain(width float64, att, done func(float64) rates, windowLoss float64) analysis.Report {
	return analysis.Report{BinSeconds: width, Dependencies: []analysis.DependencyReport{
		row("app", "client", rates{"att": 100, "orig": 100}, 0, 22, width, att),
		row("client", "provider", rates{"orig": 100 - windowLoss, "done": 100 - windowLoss, "att": 100 - windowLoss}, 0, 22, width, done),
	}}
}

// TestAtCrossingGap: HOP_LOSS app -> client of one reader over the
// report's 20 s window (Evaluate's: no "bins" evidence). The tolerance is
// 15 % + 0.5/s of the 100/s sent (15.5/s) plus each reader's sample skew,
// which lies in [0, 2 x 1 s x 100/s / 20 s) = [0, 10/s): a loss of 15.5-25.5/s
// fires or not with the readers' phases alone; above, at every phase.
func TestAtCrossingGap(t *testing.T) {
	th := analysis.DefaultThresholds()
	sent := steady(rates{"att": 100, "orig": 100})
	done := func(v float64) func(float64) rates { return steady(rates{"orig": v, "done": v, "att": v}) }
	ramp := func(t float64) rates { return rates{"orig": 100 - 2*t, "done": 100 - 2*t, "att": 100 - 2*t} }
	// has: the finding's reader, 18/s lost; other: 14/s, under 15.5.
	has, other := chain(2, sent, done(82), 18), chain(2, sent, done(86), 14)
	f := finding(analysis.CodeHopLoss, "app", "client", 0, 20, false)
	for _, tc := range []struct {
		name       string
		f          analysis.Finding
		has, other analysis.Report
		fine       analysis.Report
		want       bool
	}{
		// 18/s lost at every shift: fires with no skew, not with 10/s, but
		// the other reader's 14/s (86/s arrived) is no shift's: it did not
		// see what fine's reader saw at any phase (until F3b: explained).
		{"within the skew band", f, has, other, chain(1, sent, done(82), 18), false},
		// fine and has lose 20/s at every shift, the other reader none: a
		// wrong number on one path, not a phase.
		{"the other loses nothing", f, chain(2, sent, done(80), 20), chain(2, sent, done(100), 0), chain(1, sent, done(80), 20), false},
		// client stops completing at 18 s: its windows over [0, 19],
		// [1, 20] and [2, 21] (the report's [1, 20] shifted) lose 5.3, 10.5
		// and 15.8/s, so the rule fires at the 3 shifts of 9 where client's
		// window is [2, 21] alone.
		{"a stop at the window's end", f, has, other, chain(1, sent, step(18, rates{"orig": 100, "done": 100, "att": 100}, rates{"orig": 0, "done": 0, "att": 0}), 18), true},
		// The loss grows 2/s each second: 18, 20 and 22/s over the three
		// shifts; the other reader's 19/s lies among them.
		{"a ramp across the band", f, chain(2, sent, done(70), 30), chain(2, sent, done(81), 19), chain(1, sent, ramp, 20), true},
		// 40/s lost at every shift: over 25.5, both readers must fire.
		{"beyond the band at every shift", f, has, other, chain(1, sent, done(60), 40), false},
		// 5/s: no shift fires, the finding is the reader's alone.
		{"under the tolerance at every shift", f, has, other, chain(1, sent, done(95), 5), false},
		// The other reader's own window loses 40/s: it meets the conditions
		// beyond any skew, yet did not fire: not a crossing.
		{"the other meets them", f, has, chain(2, sent, done(60), 40), chain(1, sent, done(82), 18), false},
		// fine lacks client's seconds 8-10: every shift of client is
		// unknown, nothing is explained.
		{"fine has a hole", f, has, other, chain(1, sent, hole(done(82), 8, 10), 18), false},
		// The receiving side's signals are absent in fine: unknown.
		{"fine lacks the arrivals", f, has, other, chain(1, sent, steady(rates{"att": 80}), 18), false},
	} {
		got := AtCrossing(tc.f, tc.has, tc.other, tc.fine, th, time.Second)
		if (got != "") != tc.want {
			t.Errorf("%s: %q, want explained %v", tc.name, got, tc.want)
		}
		t.Logf("%s: %s", tc.name, got)
	}
}

// TestAtCrossingGapHistory: a history HOP_LOSS judged over gap windows of
// two 2 s bins (th.GapWindow 4 s), each window's counts summed over its
// bins: the same band as TestAtCrossingGap, with the skew over 4 s
// (2 x 1 s x 100/s / 4 s = 50/s: every loss under 65.5/s is phase-borne).
func TestAtCrossingGapHistory(t *testing.T) {
	th := analysis.DefaultThresholds()
	th.GapWindow = 4 * time.Second
	sent := steady(rates{"att": 100, "orig": 100})
	done := func(v float64) func(float64) rates { return steady(rates{"orig": v, "done": v, "att": v}) }
	has, other := chain(2, sent, done(82), 18), chain(2, sent, done(90), 10)
	f := finding(analysis.CodeHopLoss, "app", "client", 4, 12, true)
	// 18/s lost at every shift, the other reader 10/s: no shift gives
	// its 90/s arrived (until F3b: explained, as "phase-borne").
	if got := AtCrossing(f, has, other, chain(1, sent, done(82), 18), th, time.Second); got != "" {
		t.Errorf("18/s lost at every shift, the other 10/s: %q", got)
	}
	// client completes 100, 100 and 46/s in turn (46 at t mod 3 = 2): of
	// the three shifts of a 4 s window one holds two 46s (27/s lost,
	// fires) and two hold one (13.5/s, under 15.5 + 50); the other
	// reader's 85/s arrived lies in [73, 86.5].
	period := func(t float64) rates {
		v := 100.0
		if int(t)%3 == 2 {
			v = 46
		}
		return rates{"orig": v, "done": v, "att": v}
	}
	if got := AtCrossing(f, has, chain(2, sent, done(85), 15), chain(1, sent, period, 18), th, time.Second); got == "" {
		t.Errorf("13.5-27/s lost over the shifts, the other 15/s: not explained")
	} else {
		t.Log(got)
	}
	if got := AtCrossing(f, has, other, chain(1, sent, done(20), 80), th, time.Second); got != "" {
		t.Errorf("80/s lost at every shift: %q", got)
	}
}

// provider is a report of client -> provider over [0, 10] s whose
// provider's work after cancel is wac(t) % of the 100/s it received, in
// bins of width.
func provider(width float64, wac func(float64) rates) analysis.Report {
	return analysis.Report{BinSeconds: width, Dependencies: []analysis.DependencyReport{
		row("client", "provider", rates{"orig": 50, "att": 100}, 0, 10, width, func(t float64) rates {
			r := wac(t)
			if r == nil {
				return nil
			}
			return rates{"orig": 50, "att": 100, "recv": 100, "wac": r["wac"]}
		}),
	}}
}

// TestAtCrossingWorkAfterCancel: WORK_AFTER_CANCEL client -> provider of
// one reader in the 2 s bins [4, 6] and [6, 8] (threshold: 5 % of what
// the provider received, analysis' own rule). The other reader's [4, 6]
// read 4 %: explained where the provider's share crosses 5 % when the bin
// moves by one scrape interval, not where it stays on one side.
func TestAtCrossingWorkAfterCancel(t *testing.T) {
	th := analysis.DefaultThresholds()
	// has: 6 % in [4, 6] and [6, 8]; other: 4 % in [4, 6], 6 % after.
	has := provider(2, step(4, rates{"wac": 1}, rates{"wac": 6}))
	other := provider(2, step(6, rates{"wac": 4}, rates{"wac": 6}))
	f := finding(analysis.CodeWorkAfterCancel, "client", "provider", 4, 8, true)
	for _, tc := range []struct {
		name        string
		other, fine analysis.Report
		want        bool
	}{
		// 4 % until 5 s, 8 % after: [3, 5] reads 4 %, [5, 7] 8 %.
		{"rising across the threshold", other, provider(1, step(5, rates{"wac": 4}, rates{"wac": 8})), true},
		// 6 % at every shift: both readers must fire.
		{"steady above", other, provider(1, steady(rates{"wac": 6})), false},
		// 3 % at every shift: no shift fires.
		{"steady below", other, provider(1, steady(rates{"wac": 3})), false},
		// The other reader at 6 % in both bins: no crossing explains it.
		{"the other meets them", provider(2, steady(rates{"wac": 6})), provider(1, step(5, rates{"wac": 4}, rates{"wac": 8})), false},
		{"fine has a hole", other, provider(1, hole(step(5, rates{"wac": 4}, rates{"wac": 8}), 5, 6)), false},
	} {
		got := AtCrossing(f, has, tc.other, tc.fine, th, time.Second)
		if (got != "") != tc.want {
			t.Errorf("%s: %q, want explained %v", tc.name, got, tc.want)
		}
		t.Logf("%s: %s", tc.name, got)
	}
}

// sampled is rep with the sample times a report built in process carries
// (absent from its JSON): every row over [0, 20] s, target's rows
// sampled from `from` to `to` s.
func sampled(rep analysis.Report, times map[string][2]float64) analysis.Report {
	deps := make([]analysis.DependencyReport, len(rep.Dependencies))
	for i, d := range rep.Dependencies {
		d.StartMs, d.EndMs = int64(t0*1000), int64((t0+20)*1000)
		if at, ok := times[d.Target]; ok {
			d.SampledFromMs, d.SampledToMs = int64((t0+at[0])*1000), int64((t0+at[1])*1000)
		}
		deps[i] = d
	}
	rep.Dependencies = deps
	return rep
}

// TestAtCrossingMeasuredSkew: where the reports carry their sample times,
// each reader's own skew (analysis' sampleSkew: the 100/s sent times how
// far apart app's and client's samples were, over 20 s) stands in for the
// bound. fine loses 18, 20 and 22/s over the three shifts, has 30/s and
// other 19/s. Unknown, has's skew is taken as 0 (18 > 15.5 fires) and
// other's as the 10/s bound (18 < 25.5 does not): explained. Measured,
// has's 8/s (samples 1.6 s apart) leaves no shift over 23.5: unexplained;
// has's 1/s (0.2 s) and other's 5/s (1 s) leave 18 over 16.5 and under
// 20.5: explained.
func TestAtCrossingMeasuredSkew(t *testing.T) {
	th := analysis.DefaultThresholds()
	sent := steady(rates{"att": 100, "orig": 100})
	done := func(v float64) func(float64) rates { return steady(rates{"orig": v, "done": v, "att": v}) }
	ramp := func(t float64) rates { return rates{"orig": 100 - 2*t, "done": 100 - 2*t, "att": 100 - 2*t} }
	has, other, fine := chain(2, sent, done(70), 30), chain(2, sent, done(81), 19), chain(1, sent, ramp, 20)
	// apart is app's and client's samples a s apart (half at each edge).
	apart := func(rep analysis.Report, a float64) analysis.Report {
		return sampled(rep, map[string][2]float64{"app": {1, 20}, "client": {1 + a/2, 20 - a/2}})
	}
	f := finding(analysis.CodeHopLoss, "app", "client", 0, 20, false)
	for _, tc := range []struct {
		name       string
		has, other analysis.Report
		want       bool
	}{
		{"unknown", has, other, true},
		{"has's 8/s", apart(has, 1.6), apart(other, 1), false},
		{"has's 1/s, other's 5/s", apart(has, 0.2), apart(other, 1), true},
		// other's 3/s: its own 19/s fires over 18.5, it met the conditions.
		{"other's 3/s", apart(has, 0.2), apart(other, 0.6), false},
	} {
		got := AtCrossing(f, tc.has, tc.other, fine, th, time.Second)
		if (got != "") != tc.want {
			t.Errorf("%s: %q, want explained %v", tc.name, got, tc.want)
		}
		t.Logf("%s: %s", tc.name, got)
	}
}

// TestAtCrossingCombinationCap: "a stop at the window's end" of
// TestAtCrossingGap has 3 shifts of 2 targets, 9 combinations: explained
// under a cap of 9, unexplained (not evaluated) under a cap of 8.
func TestAtCrossingCombinationCap(t *testing.T) {
	th := analysis.DefaultThresholds()
	sent := steady(rates{"att": 100, "orig": 100})
	done := func(v float64) func(float64) rates { return steady(rates{"orig": v, "done": v, "att": v}) }
	has, other := chain(2, sent, done(82), 18), chain(2, sent, done(86), 14)
	fine := chain(1, sent, step(18, rates{"orig": 100, "done": 100, "att": 100}, rates{"orig": 0, "done": 0, "att": 0}), 18)
	f := finding(analysis.CodeHopLoss, "app", "client", 0, 20, false)
	defer func(v int) { maxCombinations = v }(maxCombinations)
	for _, tc := range []struct {
		limit int
		want  bool
	}{{9, true}, {8, false}} {
		maxCombinations = tc.limit
		if got := AtCrossing(f, has, other, fine, th, time.Second); (got != "") != tc.want {
			t.Errorf("cap %d: %q, want explained %v", tc.limit, got, tc.want)
		}
	}
}

// TestSkewBoundEdges: the bound's peak is read in the bins within one
// bin of the window's edges, where the traffic a skew moves across an
// edge lies: app's 300/s burst in [8, 12] s of the 20 s window leaves it
// at 2 x 1 s x 100/s / 20 s = 10/s; the same burst in [18, 20] s raises
// it to 30/s.
func TestSkewBoundEdges(t *testing.T) {
	f := finding(analysis.CodeHopLoss, "app", "client", 0, 20, false)
	done := steady(rates{"orig": 100, "done": 100, "att": 100})
	burst := func(from, to float64) func(float64) rates {
		return func(t float64) rates {
			if t >= from && t < to {
				return rates{"att": 300, "orig": 100}
			}
			return rates{"att": 100, "orig": 100}
		}
	}
	w := window{start: t0, from: t0 + 1, to: t0 + 20}
	for _, tc := range []struct {
		name     string
		from, to float64
		want     float64
	}{{"inside", 8, 12, 10}, {"at the end", 18, 20, 30}} {
		rep := chain(2, burst(tc.from, tc.to), done, 0)
		if got := skewBound(f, w, rep, rep, time.Second); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
