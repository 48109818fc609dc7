package analysis

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/retrytop/retrytop/model"
)

func TestNewPoints(t *testing.T) {
	times := []int64{10, 20, 30, 40, 50}
	for _, tc := range []struct {
		name string
		ts   []int64
		base int
	}{
		{"whole history", []int64{10, 20, 30, 40, 50}, 0},
		{"appeared later", []int64{30, 40, 50}, 2},
		{"gone early", []int64{10, 20}, 0},
		{"one sample", []int64{40}, 3},
		{"gap", []int64{10, 30, 40}, -1},
		{"time the target never had", []int64{10, 25}, -1},
		{"newer than the times", []int64{40, 50, 60}, -1},
		{"older than the times", []int64{0, 10, 20}, -1},
		{"empty", nil, -1},
	} {
		var pts []model.Point
		for _, x := range tc.ts {
			pts = append(pts, model.Point{T: x})
		}
		if got := newPoints(times, pts).base; got != tc.base {
			t.Errorf("%s: base %d, want %d", tc.name, got, tc.base)
		}
	}
}

// The indexed path of window.span and window.gauge must agree with the
// searching one for every window, series shape and mode.
func TestWindowIndexedMatchesSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		n := 1 + rng.IntN(40)
		times := make([]int64, n)
		for i := range times {
			times[i] = int64(i)*1000 + int64(rng.IntN(500))
		}
		// A contiguous run of the times, sometimes with a hole punched in.
		from := rng.IntN(n)
		to := from + rng.IntN(n-from+1)
		var pts []model.Point
		for i := from; i < to; i++ {
			pts = append(pts, model.Point{T: times[i], V: float64(i)})
		}
		if len(pts) > 2 && rng.IntN(3) == 0 {
			k := 1 + rng.IntN(len(pts)-2)
			pts = slices.Delete(pts, k, k+1)
		}
		indexed, searched := newPoints(times, pts), points{pts: pts, base: -1}
		for range 20 {
			start := int64(rng.IntN(n*1000+2000)) - 1000
			end := start + int64(rng.IntN(10000))
			for _, w := range []window{rangeWindow(times, start, end), binWindow(times, start, end)} {
				a, b := w.span(indexed), w.span(searched)
				if !slices.Equal(a, b) {
					t.Fatalf("trial %d [%d, %d] back=%v: indexed %v, searched %v (base %d)", trial, start, end, w.back, a, b, indexed.base)
				}
				va, oka := w.gauge(indexed)
				vb, okb := w.gauge(searched)
				if va != vb || oka != okb {
					t.Fatalf("trial %d: gauge indexed %v %v, searched %v %v", trial, va, oka, vb, okb)
				}
			}
		}
	}
}

// A sample newer than the scrape times the window was resolved against
// (appended between reading the times and the series) is never used.
func TestWindowIgnoresSamplesNewerThanItsTimes(t *testing.T) {
	times := every(0, 1000, 5) // 0..4 s
	pts := pointsOf(t, every(0, 1000, 6), "0+1x5")
	p := newPoints(times, pts)
	if p.base != -1 {
		t.Fatalf("base %d, want -1", p.base)
	}
	for _, w := range []window{rangeWindow(times, 0, 10000), binWindow(times, 0, 10000)} {
		if got := w.span(p); len(got) != 5 || got[4].T != 4000 {
			t.Errorf("back=%v: span %v", w.back, got)
		}
		if v, ok := w.gauge(p); !ok || v != 4 {
			t.Errorf("back=%v: gauge %v %v, want 4", w.back, v, ok)
		}
	}
	// A series absent at the newest scrape (4 s) whose next sample came
	// after it: a bin's interpolated increase stops at its sample at 3 s,
	// 3; the pair to the sample at 5 s would add a share of 1.
	late := newPoints(times, []model.Point{{T: 0, V: 0}, {T: 1000, V: 1}, {T: 2000, V: 2}, {T: 3000, V: 3}, {T: 5000, V: 5}})
	bin := binWindow(times, 0, 10000)
	if v, ok := bin.increase(late); !ok || v != 3 {
		t.Errorf("a bin's increase %v %v, want 3", v, ok)
	}
}
