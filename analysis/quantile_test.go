package analysis

import (
	"math"
	"slices"
	"testing"

	"github.com/retrytop/retrytop/model"
)

var inf = math.Inf(+1)

// bk builds buckets from bound, count pairs.
func bk(pairs ...float64) []model.Bucket {
	out := make([]model.Bucket, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, model.Bucket{UpperBound: pairs[i], Count: pairs[i+1]})
	}
	return out
}

func TestHistogramQuantile(t *testing.T) {
	// 50 observations: 10 in (0, 0.1], 20 in (0.1, 0.5], 10 in (0.5, 1],
	// 10 above 1.
	std := bk(0.1, 10, 0.5, 30, 1, 40, inf, 50)
	for _, tc := range []struct {
		name    string
		q       float64
		buckets []model.Bucket
		want    float64 // NaN: absent
	}{
		// rank 5 of the first bucket's 10, interpolated from 0: 0.1 * 5/10.
		{"first bucket from zero", 0.1, std, 0.05},
		{"rank on a bucket's upper edge", 0.2, std, 0.1},
		// rank 25: 15 into (0.1, 0.5] holding 20: 0.1 + 0.4 * 15/20.
		{"median", 0.5, std, 0.4},
		// rank 35: 5 into (0.5, 1] holding 10.
		{"p70", 0.7, std, 0.75},
		{"p80 on an edge", 0.8, std, 1},
		// rank 45 is in the +Inf bucket: the second-highest bound.
		{"in the +Inf bucket", 0.9, std, 1},
		{"q=1", 1, std, 1},
		{"q=0", 0, std, 0},
		{"q<0", -0.5, std, math.Inf(-1)},
		{"q>1", 1.5, std, math.Inf(+1)},
		{"q NaN", math.NaN(), std, absent},
		{"unsorted input", 0.5, bk(inf, 50, 0.5, 30, 0.1, 10, 1, 40), 0.4},
		// Equal bounds add up (PromQL coalesces them): 0.5 -> 30.
		{"duplicate bounds", 0.5, bk(0.1, 10, 0.5, 12, 0.5, 18, 1, 40, inf, 50), 0.4},
		// A torn scrape: 0.5 holds fewer than 0.1; raised to 10, so rank 25
		// is 15 into (0.5, 1] holding 30.
		{"non-monotonic buckets", 0.5, bk(0.1, 10, 0.5, 8, 1, 40, inf, 50), 0.75},
		// 1e-13 relative noise between equal counts is ignored: without
		// the fix q=1 would interpolate to 2.
		{"float noise", 1, bk(1, 10, 2, 10*(1+1e-13), inf, 10*(1+1e-13)), 1},
		{"everything above the finite buckets", 0.5, bk(0.1, 0, 1, 0, inf, 10), 1},
		// Lowest bound <= 0 is returned as is; above it interpolation runs
		// from the previous bound.
		{"negative first bound", 0.1, bk(-1, 5, 0, 10, 1, 20, inf, 20), -1},
		{"interpolate across zero", 0.4, bk(-1, 5, 0, 10, 1, 20, inf, 20), -0.4},
		{"zero first bound", 0.2, bk(0, 5, 1, 20, inf, 20), 0},
		{"no observations", 0.5, bk(0.1, 0, 1, 0, inf, 0), absent},
		{"no +Inf bucket", 0.5, bk(0.1, 10, 0.5, 30, 1, 40), absent},
		{"only +Inf", 0.5, bk(inf, 10), absent},
		{"two +Inf coalesce to one", 0.5, bk(inf, 10, inf, 10), absent},
		{"no buckets", 0.5, nil, absent},
		{"no buckets, q>1", 2, nil, absent},
		// PromQL: rank 0 in an empty first bucket divides 0 by 0: NaN.
		{"q=0 with an empty first bucket", 0, bk(0.1, 0, 1, 10, inf, 10), absent},
		{"negative total", 0.5, bk(0.1, -1, inf, -1), absent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.buckets)
			v, ok := HistogramQuantile(tc.q, tc.buckets)
			checkValue(t, "quantile", model.ValueOf(v, ok), tc.want)
			if !slices.Equal(in, tc.buckets) {
				t.Errorf("input modified: %v, was %v", tc.buckets, in)
			}
		})
	}
}

func TestHistogramQuantileManyBuckets(t *testing.T) {
	// More buckets than the stack buffer holds: 1..100, one observation
	// each, none above.
	var bs []model.Bucket
	for i := 1; i <= 100; i++ {
		bs = append(bs, model.Bucket{UpperBound: float64(i), Count: float64(i)})
	}
	bs = append(bs, model.Bucket{UpperBound: inf, Count: 100})
	for q, want := range map[float64]float64{0.5: 50, 0.995: 99.5, 0.001: 0.1} {
		if v, ok := HistogramQuantile(q, bs); !ok || !near(v, want) {
			t.Errorf("q=%v: %v, %v; want %v", q, v, ok, want)
		}
	}
}

func TestQuantiles(t *testing.T) {
	// 100 observations: 50 in (0, 0.01], 40 in (0.01, 0.1], 10 in (0.1, 1].
	got := Quantiles(bk(0.01, 50, 0.1, 90, 1, 100, inf, 100))
	checkValue(t, "p50", got.P50, 0.01)
	checkValue(t, "p90", got.P90, 0.1)
	checkValue(t, "p99", got.P99, 0.1+0.9*0.9)
	got = Quantiles(bk(0.01, 0, inf, 0))
	checkValue(t, "empty p50", got.P50, absent)
	checkValue(t, "empty p99", got.P99, absent)
}

func BenchmarkHistogramQuantile(b *testing.B) {
	bs := bk(0.001, 1, 0.0025, 3, 0.005, 9, 0.01, 20, 0.025, 50, 0.05, 80, 0.1, 120,
		0.25, 160, 0.5, 190, 1, 198, 2.5, 199, 5, 200, 10, 200, inf, 200)
	b.ReportAllocs()
	for b.Loop() {
		HistogramQuantile(0.99, bs)
	}
}

// TestQuantilesAgreeWithHistogramQuantile: Quantiles prepares the
// buckets once for its three quantiles; each is what HistogramQuantile
// gives, on the shapes it takes apart (unsorted, equal bounds, torn,
// float noise, bounds at or below zero, nothing to read).
func TestQuantilesAgreeWithHistogramQuantile(t *testing.T) {
	many := []float64{}
	for i := 1; i <= 40; i++ {
		many = append(many, float64(i), float64(i*i))
	}
	many = append(many, inf, 1600)
	for _, in := range [][]model.Bucket{
		bk(0.1, 10, 0.5, 30, 1, 40, inf, 50),
		bk(inf, 50, 0.5, 30, 0.1, 10, 1, 40),
		bk(0.1, 10, 0.5, 12, 0.5, 18, 1, 40, inf, 50),
		bk(0.1, 10, 0.5, 8, 1, 40, inf, 50),
		bk(1, 10, 2, 10*(1+1e-13), inf, 10*(1+1e-13)),
		bk(0.1, 0, 1, 0, inf, 10),
		bk(-1, 5, 0, 10, 1, 20, inf, 20),
		bk(0, 5, 1, 20, inf, 20),
		bk(0.01, 99, 0.1, 99, inf, 100),
		bk(0.1, 0, 1, 0, inf, 0),
		bk(0.1, 10, 0.5, 30, 1, 40),
		bk(inf, 10, inf, 10),
		bk(0.1, -1, inf, -1),
		bk(many...),
		nil,
	} {
		before := slices.Clone(in)
		got := Quantiles(in)
		for _, c := range []struct {
			q   float64
			got model.Value
		}{{0.5, got.P50}, {0.9, got.P90}, {0.99, got.P99}} {
			v, ok := HistogramQuantile(c.q, in)
			if want := model.ValueOf(v, ok); c.got != want {
				t.Errorf("%v: q=%v is %v, HistogramQuantile %v", in, c.q, c.got, want)
			}
		}
		if !slices.Equal(before, in) {
			t.Errorf("input modified: %v, was %v", in, before)
		}
	}
}
