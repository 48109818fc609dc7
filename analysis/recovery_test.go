package analysis

import (
	"math"
	"testing"

	"github.com/retrytop/retrytop/model"
)

// A second of a synthetic run: the dependency's service time over the
// requests that finished in it (0: none finished), the requests it
// received, and the caller's successes and originals.
type second struct {
	p50                  float64
	finished, received   float64
	successes, originals float64
}

const (
	fast = 0.015 // s: the dependency's service time when healthy
	slow = 0.4
)

// run is a synthetic run, one second per element: before is healthy,
// then a trigger from trigStart to trigEnd (s) during which the
// dependency finishes slowly (stuck: finishes nothing) and the caller
// succeeds at storm, then after.
func run(n, trigStart, trigEnd int, stuck bool, storm float64, after func(i int) second) []second {
	out := make([]second, n)
	for i := range out {
		switch {
		case i < trigStart:
			out[i] = second{fast, 50, 50, 50, 50}
		case i < trigEnd && stuck:
			out[i] = second{0, 0, 150, storm * 50, 50}
		case i < trigEnd:
			out[i] = second{slow, 10, 50, storm * 50, 50}
		default:
			out[i] = after(i)
		}
	}
	return out
}

// steps turns a run scraped every second from 0 into a row's goodput
// steps and its dependency's service steps (step i: second i-1).
func steps(run []second) (goodputSteps, serviceSteps) {
	n := len(run) + 1
	g := goodputSteps{times: make([]int64, n), succ: make([]float32, n), orig: make([]float32, n)}
	s := serviceSteps{times: g.times, finished: make([]float32, n), p50: make([]float32, n), received: make([]float32, n)}
	g.succ[0], g.orig[0], s.finished[0], s.p50[0], s.received[0] = nan32, nan32, nan32, nan32, nan32
	for i := 1; i < n; i++ {
		sec := run[i-1]
		g.times[i] = int64(i) * 1000
		g.succ[i], g.orig[i] = float32(sec.successes), float32(sec.originals)
		s.finished[i], s.received[i], s.p50[i] = float32(sec.finished), float32(sec.received), nan32
		if sec.finished > 0 {
			s.p50[i] = float32(sec.p50)
		}
	}
	return g, s
}

// timeline bins a run as a report would, binS seconds a bin: the
// dependency's median service time is the slow one when most of the
// requests that finished in the bin were slow, absent when none
// finished.
func timeline(run []second, binS int) []model.Signals {
	var tl []model.Signals
	for a := 0; a < len(run); a += binS {
		b := min(a+binS, len(run))
		s := model.Signals{StartMs: int64(a) * 1000, EndMs: int64(b) * 1000}
		var slowN, fastN, recv, succ, orig float64
		for _, sec := range run[a:b] {
			if sec.p50 == slow {
				slowN += sec.finished
			} else {
				fastN += sec.finished
			}
			recv += sec.received
			succ += sec.successes
			orig += sec.originals
		}
		w := float64(b - a)
		switch {
		case slowN > fastN:
			s.DependencyServiceTimeP50 = model.Some(slow)
		case fastN > 0:
			s.DependencyServiceTimeP50 = model.Some(fast)
		}
		s.DependencyReceivedPerS = model.Some(recv / w)
		s.SuccessesPerS, s.OriginalsPerS = model.Some(succ/w), model.Some(orig/w)
		tl = append(tl, s)
	}
	return tl
}

func healthy(int) second { return second{fast, 50, 50, 50, 50} }

// The trigger's start and end are the steps', wherever the bins' edges
// fall: a slow phase from 10 s to 23 s is dated 10..23 at 5 s and 7 s
// bins, stuck or slow; a second the steps cannot judge neither ends it
// nor extends it.
func TestTriggerRunFromSteps(t *testing.T) {
	th := DefaultThresholds()
	for _, tc := range []struct {
		name       string
		run        []second
		start, end int64 // ms
	}{
		{"slow", run(40, 10, 23, false, 0, healthy), 10000, 23000},
		{"stuck", run(40, 10, 23, true, 0, healthy), 10000, 23000},
		{"unknown second inside", run(40, 10, 23, true, 0, func(i int) second {
			switch i {
			case 23:
				return second{} // nothing received or finished: cannot tell
			case 24:
				return second{slow, 10, 50, 0, 50}
			}
			return healthy(i)
		}), 10000, 25000},
		{"unknown second after", run(40, 10, 23, true, 0, func(i int) second {
			if i == 23 {
				return second{}
			}
			return healthy(i)
		}), 10000, 23000},
		{"slow second after a stuck run", run(40, 10, 23, true, 0, func(i int) second {
			if i == 23 {
				return second{slow, 10, 50, 0, 50}
			}
			return healthy(i)
		}), 10000, 24000},
	} {
		for _, binS := range []int{5, 7} {
			tl := timeline(tc.run, binS)
			_, s := steps(tc.run)
			trig, lastOn := triggers(tl, th)
			firstOn := -1
			for i := range trig {
				if trig[i] == triggerOn && firstOn < 0 {
					firstOn = i
				}
			}
			base := serviceBase(tl)
			first, ok1 := s.triggerRun(tl, firstOn, -1, base, th)
			last, ok2 := s.triggerRun(tl, lastOn, +1, base, th)
			if !ok1 || !ok2 || s.times[first-1] != tc.start || s.times[last] != tc.end {
				t.Errorf("%s, %d s bins: trigger %v..%v (%v %v), want %v..%v", tc.name, binS, s.times[max(first-1, 0)], s.times[last], ok1, ok2, tc.start, tc.end)
			}
		}
	}
	// Steps that never saw the trigger the bins saw date nothing.
	tl := timeline(run(40, 10, 23, false, 0, healthy), 5)
	_, s := steps(run(40, 40, 40, false, 0, healthy))
	if _, ok := s.triggerRun(tl, 3, +1, serviceBase(tl), th); ok {
		t.Error("a trigger dated from steps where it was never on")
	}
}

// Thin steps are joined until they hold recoveryMinOriginals originals,
// from the step holding the end on, with one such span before it; a
// last span with fewer is unknown.
func TestGoodputBins(t *testing.T) {
	r := run(11, 0, 0, false, 0, func(i int) second { return second{fast, 10, 10, float64(i), 10} })
	g, _ := steps(r) // 10 originals a second: two steps a span
	got := goodputBins(g, 4500)
	want := []RecoveryBin{
		{StartMs: 2000, EndMs: 4000, Ratio: model.Some((2 + 3) / 20.0)},
		{StartMs: 4000, EndMs: 6000, Ratio: model.Some((4 + 5) / 20.0)},
		{StartMs: 6000, EndMs: 8000, Ratio: model.Some((6 + 7) / 20.0)},
		{StartMs: 8000, EndMs: 10000, Ratio: model.Some((8 + 9) / 20.0)},
		{StartMs: 10000, EndMs: 11000},
	}
	if len(got) != len(want) {
		t.Fatalf("bins %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].StartMs != want[i].StartMs || got[i].EndMs != want[i].EndMs || got[i].Ratio.OK() != want[i].Ratio.OK() ||
			math.Abs(got[i].Ratio.V()-want[i].Ratio.V()) > 1e-9 {
			t.Errorf("bin %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// Recovery dated from the steps: from the trigger's end at 23 s, goodput
// in the next second between the storm's 20 % before it and all of it
// after, read as a step inside that second (Recovery): (1-r)/(1-0.2) of
// it still failing, whatever the bins. The threshold is the goodput
// before the trigger's start (10 s): at 7 s bins the bin holding the
// start reads normal (its slow work had not finished), but its storm is
// not the baseline, so a second at 75 % is still below.
func TestScrapeRecovery(t *testing.T) {
	th := DefaultThresholds()
	const storm = 0.2
	for _, tc := range []struct {
		name string
		r    float64 // goodput in the second after the trigger
		want float64 // s
	}{
		{"half", 0.5, 0.5 / (1 - storm)},
		{"75 %", 0.75, 0.25 / (1 - storm)},
		{"back at once", 0.96, 0},
	} {
		r := run(45, 10, 23, false, storm, func(i int) second {
			if i == 23 {
				return second{fast, 50, 50, tc.r * 50, 50}
			}
			return healthy(i)
		})
		g, s := steps(r)
		for _, binS := range []int{4, 5, 7, 10} {
			rec, ok := scrapeRecovery(timeline(r, binS), g, s, th)
			if !ok || math.Abs(rec.V()-tc.want) > 1e-9 {
				t.Errorf("%s, %d s bins: recovery %v (%v), want %v s", tc.name, binS, rec, ok, tc.want)
			}
		}
	}
	// Never back: no recovery.
	r := run(45, 10, 23, false, storm, func(i int) second { return second{fast, 50, 50, 30, 50} })
	g, s := steps(r)
	if rec, ok := scrapeRecovery(timeline(r, 5), g, s, th); ok || rec.OK() {
		t.Errorf("recovery %v (%v) of a run whose goodput never came back", rec, ok)
	}
}
