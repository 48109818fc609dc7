package analysis

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/retrytop/retrytop/model"
)

func TestIncreaseAndRate(t *testing.T) {
	sec := every(0, 1000, 31) // scrapes at 0 s .. 30 s
	for _, tc := range []struct {
		name       string
		times      []int64
		vals       string
		start, end int64
		inc, rate  float64 // absent (NaN) when there is not enough data
	}{
		{name: "steady", times: sec, vals: "0+10x30", start: 0, end: 30000, inc: 300, rate: 10},
		{name: "window inside history", times: sec, vals: "0+10x30", start: 10000, end: 20000, inc: 100, rate: 10},
		{name: "edges are inclusive", times: sec, vals: "0+10x30", start: 10000, end: 11000, inc: 10, rate: 10},
		{name: "one scrape in a short window", times: sec, vals: "0+10x30", start: 10000, end: 10999, inc: absent, rate: absent},
		{name: "window between scrapes", times: sec, vals: "0+10x30", start: 10500, end: 13500, inc: 20, rate: 10},
		{name: "flat counter is a present zero", times: sec, vals: "5x30", start: 0, end: 30000, inc: 0, rate: 0},
		// 0 10 20, reset, 5 15: 20 + 5 + 10 = 35 (= last - first + 20).
		{name: "reset counts the value after it", times: sec, vals: "0 10 20 5 15", start: 0, end: 4000, inc: 35, rate: 8.75},
		{name: "reset to zero", times: sec, vals: "5 10 0 3", start: 0, end: 3000, inc: 8, rate: 8.0 / 3},
		{name: "two resets", times: sec, vals: "100 110 3 7 1 2", start: 0, end: 5000, inc: 10 + 3 + 4 + 1 + 1, rate: 19.0 / 5},
		{name: "gap is skipped", times: sec, vals: "0 10 _ _ 40 50", start: 0, end: 5000, inc: 50, rate: 10},
		{name: "restart during a gap", times: sec, vals: "100 110 _ _ 5 15", start: 0, end: 5000, inc: 10 + 5 + 10, rate: 5},
		// Prometheus' behaviour: the first sample of a new series is the
		// baseline, so the 7 it was created with is not counted.
		{name: "series created inside the window", times: sec, vals: "_x3 7 9 12", start: 0, end: 5000, inc: 5, rate: 5.0 / 2},
		{name: "series gone before the window ends", times: sec, vals: "0 4 8 _x3", start: 0, end: 5000, inc: 8, rate: 4},
		{name: "one sample", times: sec, vals: "_ _ 42", start: 0, end: 30000, inc: absent, rate: absent},
		{name: "no samples", times: sec, vals: "", start: 0, end: 30000, inc: absent, rate: absent},
		{name: "window before the data", times: every(60000, 1000, 5), vals: "0+1x4", start: 0, end: 59999, inc: absent, rate: absent},
		{name: "one sample in the window", times: sec, vals: "0+1x30", start: 29500, end: 40000, inc: absent, rate: absent},
		{name: "uneven scrapes", times: []int64{0, 900, 2100, 3000}, vals: "0 9 21 30", start: 0, end: 3000, inc: 30, rate: 10},
		{name: "fractional counter", times: sec, vals: "0.25+0.5x4", start: 0, end: 4000, inc: 2, rate: 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pts := pointsOf(t, tc.times, tc.vals)
			inc, ok := Increase(pts, tc.start, tc.end)
			checkValue(t, "increase", model.ValueOf(inc, ok), tc.inc)
			rate, ok := Rate(pts, tc.start, tc.end)
			checkValue(t, "rate", model.ValueOf(rate, ok), tc.rate)
		})
	}
}

func TestIncreaseDoesNotExtrapolate(t *testing.T) {
	// Samples at 5 s and 25 s of a 0..30 s window: Prometheus would
	// extrapolate towards the edges; we report exactly what was observed.
	pts := []model.Point{{T: 5000, V: 100}, {T: 25000, V: 300}}
	if inc, ok := Increase(pts, 0, 30000); !ok || inc != 200 {
		t.Errorf("Increase = %v, %v; want 200, true", inc, ok)
	}
	if r, ok := Rate(pts, 0, 30000); !ok || r != 10 {
		t.Errorf("Rate = %v, %v; want 10, true", r, ok)
	}
}

// Interpolated increases of consecutive windows share their edges, so
// they add up to the increase of the whole range, whatever the jitter,
// gaps and resets.
func TestSpreadAddsUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		var pts []model.Point
		v := 0.0
		for i := range 200 {
			if rng.IntN(10) == 0 {
				continue // absent at this scrape
			}
			switch rng.IntN(30) {
			case 0:
				v = float64(rng.IntN(5)) // restart
			default:
				v += float64(rng.IntN(20))
			}
			pts = append(pts, model.Point{T: int64(i)*1000 + int64(rng.IntN(300)), V: v})
		}
		start, bin := int64(rng.IntN(20000)), int64(1000+rng.IntN(15000))
		end := start + 10*bin
		var sum float64
		for a := start; a < end; a += bin {
			if inc, ok := spread(pts, a, a+bin); ok {
				sum += inc
			}
		}
		want, _ := spread(pts, start, end)
		if !near(sum, want) {
			t.Fatalf("trial %d: bins add up to %v, whole range %v", trial, sum, want)
		}
	}
}

func TestSpread(t *testing.T) {
	pts := pointsOf(t, every(0, 1000, 7), "0 10 20 _ 40 5 15") // T = 0,1,2,4,5,6 s; a reset at 5 s
	for _, tc := range []struct {
		start, end int64
		want       float64
	}{
		{1000, 2000, 10},  // samples on both edges
		{1500, 2500, 10},  // half of 10 from each pair
		{2500, 3500, 10},  // inside the gap: 20 over its 2 s
		{4000, 5000, 5},   // the reset: the value after it counts in full
		{4500, 5500, 7.5}, // half of the reset's 5 and half of 10
		{-5000, 500, 5},   // nothing before the first sample
		{5500, 9000, 5},   // nothing after the last
		{-5000, -1000, absent},
		{7000, 9000, absent},
	} {
		got, ok := spread(pts, tc.start, tc.end)
		v := model.Absent
		if ok {
			v = model.Some(got)
		}
		checkValue(t, fmt.Sprintf("spread(%d, %d)", tc.start, tc.end), v, tc.want)
	}
}

func BenchmarkRate(b *testing.B) {
	pts := make([]model.Point, 900)
	for i := range pts {
		pts[i] = model.Point{T: int64(i) * 1000, V: float64(i * 7)}
	}
	b.ReportAllocs()
	for b.Loop() {
		Rate(pts, 870000, 899000)
	}
}
