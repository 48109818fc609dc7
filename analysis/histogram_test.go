package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// bucketSeries builds a flat _bucket series.
func bucketSeries(tb testing.TB, name, le string, times []int64, vals string, labels ...string) model.Series {
	return model.Series{
		Name:   name + "_bucket",
		Labels: model.LabelsFromPairs(append(labels, "le", le)...),
		Points: pointsOf(tb, times, vals),
	}
}

func TestHistogramIncrease(t *testing.T) {
	sec := every(0, 1000, 11)
	const h = "x_seconds"
	for _, tc := range []struct {
		name   string
		series []model.Series
		start  int64
		end    int64
		want   model.HistogramWindow
	}{
		{
			name: "one label set",
			series: []model.Series{
				bucketSeries(t, h, "+Inf", sec, "0+4x10"),
				bucketSeries(t, h, "0.1", sec, "0+1x10"),
				bucketSeries(t, h, "0.5", sec, "0+3x10"),
				{Name: h + "_sum", Points: pointsOf(t, sec, "0+0.5x10")},
			},
			start: 0, end: 10000,
			want: model.HistogramWindow{Buckets: bk(0.1, 10, 0.5, 30, inf, 40), Count: 40, Sum: 5},
		},
		{
			name: "window inside history, _count wins over +Inf",
			series: []model.Series{
				bucketSeries(t, h, "0.1", sec, "0+1x10"),
				bucketSeries(t, h, "+Inf", sec, "0+2x10"),
				{Name: h + "_count", Points: pointsOf(t, sec, "0+3x10")},
			},
			start: 2000, end: 6000,
			want: model.HistogramWindow{Buckets: bk(0.1, 4, inf, 8), Count: 12},
		},
		{
			name: "label sets add up by le",
			series: []model.Series{
				bucketSeries(t, h, "0.1", sec, "0+1x10", "class", "a"),
				bucketSeries(t, h, "+Inf", sec, "0+1x10", "class", "a"),
				bucketSeries(t, h, "0.1", sec, "0+2x10", "class", "b"),
				bucketSeries(t, h, "1", sec, "0+2x10", "class", "b"),
				bucketSeries(t, h, "+Inf", sec, "0+3x10", "class", "b"),
			},
			start: 0, end: 10000,
			want: model.HistogramWindow{Buckets: bk(0.1, 30, 1, 20, inf, 40), Count: 40},
		},
		{
			name: "restart resets every bucket",
			series: []model.Series{
				bucketSeries(t, h, "0.1", sec, "10 12 1 3"),
				bucketSeries(t, h, "+Inf", sec, "20 25 2 6"),
			},
			start: 0, end: 3000,
			want: model.HistogramWindow{Buckets: bk(0.1, 2+1+2, inf, 5+2+4), Count: 11},
		},
		{
			name: "bucket without enough data is left out",
			series: []model.Series{
				bucketSeries(t, h, "0.1", sec, "_x9 5"),
				bucketSeries(t, h, "+Inf", sec, "0+1x10"),
			},
			start: 0, end: 10000,
			want: model.HistogramWindow{Buckets: bk(inf, 10), Count: 10},
		},
		{
			name: "too few samples",
			series: []model.Series{
				bucketSeries(t, h, "0.1", sec, "0+1x10"),
				bucketSeries(t, h, "+Inf", sec, "0+1x10"),
			},
			start: 9500, end: 10000,
			want: model.HistogramWindow{},
		},
		{
			name: "unparsable le is ignored",
			series: []model.Series{
				bucketSeries(t, h, "fast", sec, "0+1x10"),
				bucketSeries(t, h, "+Inf", sec, "0+1x10"),
			},
			start: 0, end: 10000,
			want: model.HistogramWindow{Buckets: bk(inf, 10), Count: 10},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := HistogramIncrease(tc.series, tc.start, tc.end)
			checkHistogram(t, got, tc.want)
		})
	}
}

func checkHistogram(t *testing.T, got, want model.HistogramWindow) {
	t.Helper()
	ok := len(got.Buckets) == len(want.Buckets) && near(got.Count, want.Count) && near(got.Sum, want.Sum)
	for i := 0; ok && i < len(got.Buckets); i++ {
		ok = got.Buckets[i].UpperBound == want.Buckets[i].UpperBound && near(got.Buckets[i].Count, want.Buckets[i].Count)
	}
	if !ok {
		t.Errorf("histogram = %+v, want %+v", got, want)
	}
}

// A real histogram family goes through the store's flattening (le rendered
// with model.FormatFloat) and comes back with the same bounds.
func TestHistogramIncreaseThroughStore(t *testing.T) {
	st := model.NewStore(model.StoreConfig{})
	bounds := []float64{0.001, 0.0025, 0.1, 1, 2.5, inf}
	for i := range 11 {
		var bs []model.Bucket
		for j, b := range bounds {
			bs = append(bs, model.Bucket{UpperBound: b, Count: float64(i * (j + 1))})
		}
		st.Append(&model.Snapshot{Target: "t", Time: time.UnixMilli(int64(i) * 1000), Families: []model.Family{{
			Name: model.MetricRequestDuration, Type: model.Histogram,
			Samples: []model.Sample{{
				Labels:  model.LabelsFromPairs(model.LabelDependency, "db"),
				Buckets: bs, Count: float64(i * 6), Sum: float64(i) * 0.75,
			}},
		}}})
	}
	var series []model.Series
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		series = append(series, st.Select("t", model.MetricRequestDuration+suffix, nil)...)
	}
	got := HistogramIncrease(series, 0, 10000)
	checkHistogram(t, got, model.HistogramWindow{
		Buckets: bk(0.001, 10, 0.0025, 20, 0.1, 30, 1, 40, 2.5, 50, inf, 60),
		Count:   60, Sum: 7.5,
	})
	// rank 30 of 60 ends exactly at the 0.1 bucket.
	if v, ok := HistogramQuantile(0.5, got.Buckets); !ok || !near(v, 0.1) {
		t.Errorf("p50 = %v, %v; want 0.1", v, ok)
	}
}

func TestMergeHistograms(t *testing.T) {
	a := model.HistogramWindow{Buckets: bk(0.1, 5, 1, 8, inf, 10), Count: 10, Sum: 2}
	b := model.HistogramWindow{Buckets: bk(0.1, 1, 0.5, 2, inf, 4), Count: 4, Sum: 1}
	got := MergeHistograms(a, b, model.HistogramWindow{})
	checkHistogram(t, got, model.HistogramWindow{Buckets: bk(0.1, 6, 0.5, 2, 1, 8, inf, 14), Count: 14, Sum: 3})
	if len(a.Buckets) != 3 || a.Buckets[0].Count != 5 {
		t.Errorf("input modified: %+v", a)
	}
	// The merged 0.5 bucket holds only b's share (PromQL's sum by (le) does
	// the same) and the quantile's monotonic fix raises it to 6: rank 7 is
	// then 1 into (0.5, 1] holding 2.
	if v, ok := HistogramQuantile(0.5, got.Buckets); !ok || !near(v, 0.75) {
		t.Errorf("merged p50 = %v, %v; want 0.75", v, ok)
	}
	if h := MergeHistograms(); h.Buckets != nil || h.Count != 0 || math.Signbit(h.Sum) {
		t.Errorf("empty merge = %+v", h)
	}
}
