package analysis

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

func TestBuildFrame(t *testing.T) {
	st := fixture(t)
	// A second target, scraped half a second later than svc and once more.
	load(t, st, "edge", every(t0+500, 1000, 31),
		ts{model.MetricOriginals, []string{"dependency", "svc"}, "0+3x30"},
		ts{model.MetricAttempts, []string{"dependency", "svc", "outcome", "success"}, "0+3x30"},
	)
	status := []model.TargetStatus{{Name: "svc", Up: true}, {Name: "edge", Up: true}}
	f := BuildFrame(st, status, FrameOptions{Window: 10 * time.Second, Bin: 5 * time.Second, Bins: 4})

	end := t0 + 30500 // edge's newest scrape
	if !f.Time.Equal(time.UnixMilli(end)) || f.Window != 10*time.Second || f.Bin != 5*time.Second {
		t.Errorf("frame time %v window %v bin %v", f.Time, f.Window, f.Bin)
	}
	if !reflect.DeepEqual(f.Targets, status) {
		t.Errorf("targets = %v", f.Targets)
	}
	var keys []model.Key
	for _, r := range f.Rows {
		keys = append(keys, r.Key())
	}
	wantKeys := []model.Key{
		{Target: "edge", Dependency: "svc"},
		{Target: "svc", Dependency: "auth"},
		{Target: "svc", Dependency: "cache"},
		{Target: "svc", Dependency: "db"},
		{Target: "svc", Dependency: "idle"},
	}
	if !reflect.DeepEqual(keys, wantKeys) {
		t.Fatalf("rows = %v, want %v", keys, wantKeys)
	}
	for _, r := range f.Rows {
		// Each row is what SignalsFor computes for the same window.
		want := SignalsFor(st, r.Target, r.Dependency, end-10000, end)
		if !reflect.DeepEqual(r, want) {
			t.Errorf("row %v = %+v\nwant %+v", r.Key(), r, want)
		}
		tl := f.Timelines[r.Key()].Bins()
		if len(tl) != 4 || tl[0].StartMs != end-20000 || tl[3].EndMs != end {
			t.Fatalf("timeline %v: %d bins", r.Key(), len(tl))
		}
		if want := Timeline(st, r.Key(), 5*time.Second, end-20000, end); !reflect.DeepEqual(tl, want) {
			t.Errorf("timeline %v differs from Timeline", r.Key())
		}
	}
	checkValue(t, "edge originals", f.Rows[0].OriginalsPerS, 3)
	checkValue(t, "db originals", f.Rows[3].OriginalsPerS, 10)

	// An explicit end and the defaults.
	f = BuildFrame(st, nil, FrameOptions{EndMs: t0 + 20000})
	if f.Window != DefaultWindow || f.Bin != DefaultBin || f.Timelines[model.Key{Target: "svc", Dependency: "db"}].Len() != DefaultBins {
		t.Errorf("defaults: window %v bin %v", f.Window, f.Bin)
	}
	checkValue(t, "db originals at 20 s", f.Rows[3].OriginalsPerS, 10)

	// An empty store: no rows, no time.
	f = BuildFrame(model.NewStore(model.StoreConfig{}), nil, FrameOptions{})
	if len(f.Rows) != 0 || !f.Time.IsZero() || f.Timelines == nil {
		t.Errorf("empty frame = %+v", f)
	}
}

// benchStore is 10 targets x 5 dependencies x 900 scrapes at 1 s, each
// dependency exposing every contract family (155 flat series and one per
// gauge the rows read, real histogram families): about 8,000 series and
// 7.3 M samples.
var benchStore = sync.OnceValue(func() *model.Store {
	st := model.NewStore(model.StoreConfig{History: 900})
	bounds := []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, inf}
	hist := func(scrape, salt int, ls model.Labels) model.Sample {
		var bs []model.Bucket
		n := float64(scrape * (salt%7 + 3))
		for j, b := range bounds {
			bs = append(bs, model.Bucket{UpperBound: b, Count: math.Floor(n * float64(j+1) / float64(len(bounds)))})
		}
		return model.Sample{Labels: ls, Buckets: bs, Count: n, Sum: n * 0.05}
	}
	dep := func(d string, rest ...string) model.Labels {
		return model.LabelsFromPairs(append([]string{model.LabelDependency, d}, rest...)...)
	}
	for tg := range 10 {
		target := fmt.Sprintf("svc-%d", tg)
		for i := range 900 {
			fam := map[string]*model.Family{}
			add := func(name string, typ model.MetricType, s model.Sample) {
				f := fam[name]
				if f == nil {
					f = &model.Family{Name: name, Type: typ}
					fam[name] = f
				}
				f.Samples = append(f.Samples, s)
			}
			for d := range 5 {
				dn := fmt.Sprintf("dep-%d", d)
				c := func(k int) float64 { return float64(i * (k + d + 1)) }
				for k, p := range []string{"critical", "batch"} {
					add(model.MetricOriginals, model.Counter, model.Sample{Labels: dep(dn, "priority", p), Value: c(k)})
					for r, reason := range []string{"concurrency", "queue", "rate"} {
						add(model.MetricAdmissionRejected, model.Counter, model.Sample{Labels: dep(dn, "priority", p, "reason", reason), Value: c(r)})
					}
					for r, res := range contractResults {
						add(model.MetricResults, model.Counter, model.Sample{Labels: dep(dn, "priority", p, "result", res), Value: c(r)})
					}
				}
				for k, o := range []string{"success", "temporary_error", "permanent_error", "timeout"} {
					add(model.MetricAttempts, model.Counter, model.Sample{Labels: dep(dn, "outcome", o), Value: c(k)})
					add(model.MetricAttemptDuration, model.Histogram, hist(i, k, dep(dn, "outcome", o)))
				}
				for k, n := range []string{model.MetricRetries, model.MetricRescued, model.MetricBudgetDenied} {
					add(n, model.Counter, model.Sample{Labels: dep(dn), Value: c(k)})
				}
				for k, n := range gaugeNames {
					add(n, model.Gauge, model.Sample{Labels: dep(dn), Value: float64((i + k) % 17)})
				}
				for k, class := range model.LatencyClasses {
					add(model.MetricRequestDuration, model.Histogram, hist(i, k, dep(dn, "result_class", class)))
				}
				add(model.MetricPoolWait, model.Histogram, hist(i, d, dep(dn)))
				add(model.MetricBackoff, model.Histogram, hist(i, d+1, dep(dn)))
			}
			snap := model.Snapshot{Target: target, Time: time.UnixMilli(t0 + int64(i)*1000 + int64(tg*37))}
			for _, f := range fam {
				snap.Families = append(snap.Families, *f)
			}
			st.Append(&snap)
		}
	}
	return st
})

func BenchmarkBuildFrame(b *testing.B) {
	st := benchStore()
	// 5 dependencies x (155 flat series of the fixed families + one per gauge).
	if got, want := st.Stats("svc-0").Series, 5*(155+numGauges); got != want {
		b.Fatalf("%d series per target, want %d", got, want)
	}
	opts := FrameOptions{Window: 30 * time.Second, Bin: 10 * time.Second, Bins: 30}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f := BuildFrame(st, nil, opts)
		if len(f.Rows) != 50 {
			b.Fatalf("%d rows", len(f.Rows))
		}
	}
}

func BenchmarkSignalsFor(b *testing.B) {
	st := benchStore()
	end := st.Stats("svc-0").NewestMs
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		SignalsFor(st, "svc-0", "dep-0", end-30000, end)
	}
}

// BenchmarkEvalRows is BuildFrame without the store copies: the windows and
// bins of all 50 rows evaluated on series already selected.
func BenchmarkEvalRows(b *testing.B) {
	st := benchStore()
	var rows []*row
	end := int64(0)
	for _, t := range st.Targets() {
		times := st.Times(t)
		end = max(end, times[len(times)-1])
		for _, r := range selectTarget(st, t, times, nil, math.MinInt64).rows() {
			rows = append(rows, r)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range rows {
			r.eval(rangeWindow(r.times, end-30000, end))
			r.timeline(10000, end-300000, end)
		}
	}
}

// TestBuildFrameOnEveryCoreSameAsOne: a frame built with a worker per
// core, a target each, equals the one built on one goroutine: without a
// cache, through a fresh cache (the first worker uses its buffer, the
// others their own) and reusing a previous frame's bins.
func TestBuildFrameOnEveryCoreSameAsOne(t *testing.T) {
	st := benchStore()
	if n := len(st.Targets()); n < 4 {
		t.Fatalf("%d targets: too few to spread", n)
	}
	opts := FrameOptions{Window: 30 * time.Second, Bin: 10 * time.Second, Bins: 30, Align: true}
	end := st.Times(st.Targets()[0])
	older := opts
	older.EndMs = end[len(end)-40]
	build := func(procs int) []model.Frame {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		plain := BuildFrame(st, nil, opts)
		cached := opts
		cached.Cache = NewFrameCache()
		viaCache := BuildFrame(st, nil, cached)
		prev := BuildFrame(st, nil, older)
		reusing := opts
		reusing.Prev = &prev
		return []model.Frame{plain, viaCache, BuildFrame(st, nil, reusing)}
	}
	one, many := build(1), build(4)
	for k, name := range []string{"store", "fresh cache", "previous frame"} {
		if len(one[k].Rows) != 50 {
			t.Fatalf("%s: %d rows, want 50", name, len(one[k].Rows))
		}
		if !reflect.DeepEqual(one[k], many[k]) {
			t.Errorf("%s: the frame built on 4 workers differs from the one built on 1", name)
		}
	}
}
