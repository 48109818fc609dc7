package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"
)

// TestEachSinceEqualsSelectSince: EachSince gives every series the points
// SelectSince copies (the sample before the range included), the key
// Name 0xff Labels.AppendKey and the labels, over stale series, gaps,
// series gone for good, NaN samples, a histogram that comes and goes, a
// ring that wrapped and a series widened to float64, for every range
// start, with and without KeepSeries and tiles.
func TestEachSinceEqualsSelectSince(t *testing.T) {
	for _, keep := range []bool{false, true} {
		for _, tiles := range []bool{true, false} {
			st := NewStore(StoreConfig{History: 25, KeepSeries: keep})
			st.noTiles = !tiles
			rng := rand.New(rand.NewPCG(1, 2))
			var rd SinceReader
			compared, before, wide := 0, 0, 0
			for i := range 120 {
				s := selectWorld(rng, i)
				if i%3 == 0 { // a gauge not exact as float32: its ring widens
					s.Families = append(s.Families, Family{Name: "g", Type: Gauge, Samples: []Sample{{Value: 0.1 * float64(i)}}})
				}
				st.Append(s)
				times := st.Times("t")
				sinces := []int64{math.MinInt64, times[0] - 1, times[len(times)-1] + 1}
				for _, ts := range times {
					sinces = append(sinces, ts, ts+1)
				}
				for _, name := range append(st.Names("t"), "absent") {
					for _, since := range sinces {
						want := st.SelectSince("t", name, nil, since)
						var got []Series
						st.EachSince(&rd, "t", name, since, func(key string, ls Labels, pts []Point) {
							if k := string(ls.AppendKey(append([]byte(name), 0xff))); key != k {
								t.Fatalf("%s: key %q, want %q", name, key, k)
							}
							got = append(got, Series{Labels: ls, Points: append([]Point(nil), pts...)})
						})
						sort.Slice(got, func(a, b int) bool {
							return string(got[a].Labels.AppendKey(nil)) < string(got[b].Labels.AppendKey(nil))
						})
						if len(got) != len(want) {
							t.Fatalf("keep %v tiles %v, scrape %d, %s since %d: %d series, want %d", keep, tiles, i, name, since, len(got), len(want))
						}
						for k := range want {
							if !reflect.DeepEqual(got[k].Labels, want[k].Labels) || !reflect.DeepEqual(got[k].Points, want[k].Points) &&
								!(len(got[k].Points) == 0 && len(want[k].Points) == 0) {
								t.Fatalf("keep %v tiles %v, scrape %d, %s since %d, series %d:\n got %v %v\nwant %v %v",
									keep, tiles, i, name, since, k, got[k].Labels, got[k].Points, want[k].Labels, want[k].Points)
							}
							if len(want[k].Points) > 0 && want[k].Points[0].T < since {
								before++
							}
							if name == "g" && len(want[k].Points) > 0 {
								wide++
							}
						}
						compared++
					}
				}
			}
			// The comparison must have met the sample before a range and
			// the widened ring.
			if before < 100 || wide < 100 {
				t.Errorf("keep %v tiles %v: %d series with the sample before the range, %d widened (%d compared)", keep, tiles, before, wide, compared)
			}
		}
	}
}

// BenchmarkEachSince reads the last 40 scrapes of 2,000 counters of a
// store at history 60 (a WholeBuilder's batch) with EachSince and with
// SelectSince in the same rounds (ratio-each/select).
func BenchmarkEachSince(b *testing.B) {
	st := NewStore(StoreConfig{History: 60})
	for i := range 100 {
		f := Family{Name: "c_total", Type: Counter}
		for d := range 2000 {
			f.Samples = append(f.Samples, Sample{Labels: LabelsFromPairs("dep", fmt.Sprint(d)), Value: float64(i + d)})
		}
		st.Append(&Snapshot{Target: "t", Time: time.Unix(int64(1000+i), 0), Families: []Family{f}})
	}
	since := int64(1000+100-40) * 1000
	var rd SinceReader
	var te, ts time.Duration
	sum := 0.0
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		st.EachSince(&rd, "t", "c_total", since, func(_ string, _ Labels, pts []Point) { sum += pts[0].V })
		t1 := time.Now()
		for _, s := range st.SelectSince("t", "c_total", nil, since) {
			sum += s.Points[0].V
		}
		te, ts = te+t1.Sub(t0), ts+time.Since(t1)
	}
	b.ReportMetric(float64(te.Nanoseconds())/float64(b.N), "ns/each")
	b.ReportMetric(float64(ts.Nanoseconds())/float64(b.N), "ns/select")
	b.ReportMetric(float64(te)/float64(ts), "ratio-each/select")
}

// BenchmarkSelectSinceSealed: a look-back that starts in a sealed chunk
// (the frame's common case once the scrapes have left a chunk behind): the
// chunk's column decoded once a series, not once for the first value and
// again for the range.
func BenchmarkSelectSinceSealed(b *testing.B) {
	st := NewStore(StoreConfig{History: 900})
	for i := range 100 {
		f := Family{Name: "c_total", Type: Counter}
		for d := range 2000 {
			f.Samples = append(f.Samples, Sample{Labels: LabelsFromPairs("dep", fmt.Sprint(d)), Value: float64(i*(d%7) + d)})
		}
		st.Append(&Snapshot{Target: "t", Time: time.Unix(int64(1000+i), 0), Families: []Family{f}})
	}
	since := int64(1000+100-40) * 1000 // scrapes 60-99: the sealed chunk's last four, then the open one
	var buf SelectBuffer
	sum := 0.0
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		for _, s := range st.SelectSinceInto(&buf, "t", "c_total", nil, since) {
			sum += s.Points[0].V
		}
	}
}
