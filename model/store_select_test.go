package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// selectWorld appends scrape i of a target whose series leave for long
// stretches (stale for many scrapes, then back), some for good, and
// sometimes expose NaN (present, but no value): what SelectSince's walk
// back to a series' newest earlier sample meets.
func selectWorld(rng *rand.Rand, i int) *Snapshot {
	c := Family{Name: "c_total", Type: Counter}
	for d := range 12 {
		// Series d is away for scrapes in [away, away+len) of every
		// period of 40; series 10 and 11 leave at scrape 30 for good.
		period, away, n := 40, (d*7)%40, 5+d*3
		if d >= 10 && i >= 30 {
			continue
		}
		if k := i % period; k >= away && k < away+n && d < 10 {
			continue
		}
		v := float64(i*10 + d)
		if rng.IntN(15) == 0 {
			v = math.NaN()
		}
		c.Samples = append(c.Samples, Sample{Labels: LabelsFromPairs("dep", fmt.Sprint(d)), Value: v})
	}
	h := Family{Name: "h", Type: Histogram}
	if i%17 < 9 { // the whole histogram comes and goes
		h.Samples = []Sample{{Count: float64(i), Sum: float64(i) / 2,
			Buckets: []Bucket{{UpperBound: 1, Count: float64(i / 2)}, {UpperBound: math.Inf(1), Count: float64(i)}}}}
	}
	return &Snapshot{Target: "t", Time: time.Unix(int64(1000+i), 0), Families: []Family{c, h}}
}

// TestSelectSinceWalkBound: SelectSince walks back from a series' last
// scrape instead of from the range's start; its answers must equal the
// walk from the start over stale series, gaps, series gone for good, NaN
// samples and a ring that wrapped, for every range start, with and
// without KeepSeries.
func TestSelectSinceWalkBound(t *testing.T) {
	for _, keep := range []bool{false, true} {
		cfg := StoreConfig{History: 25, KeepSeries: keep}
		bounded, walk := NewStore(cfg), NewStore(cfg)
		walk.noWalkBound = true
		rng := rand.New(rand.NewPCG(1, 2))
		compared, reached := 0, 0
		for i := range 160 {
			s := selectWorld(rng, i)
			bounded.Append(s)
			walk.Append(s)
			times := walk.Times("t")
			sinces := []int64{math.MinInt64, times[0] - 1, times[len(times)-1] + 1}
			for _, ts := range times {
				sinces = append(sinces, ts, ts+1)
			}
			for _, name := range walk.Names("t") {
				for _, since := range sinces {
					got := bounded.SelectSince("t", name, nil, since)
					want := walk.SelectSince("t", name, nil, since)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("keep %v, scrape %d, %s since %d:\n got %+v\nwant %+v", keep, i, name, since, got, want)
					}
					compared++
					for _, sr := range want {
						if len(sr.Points) > 0 && sr.Points[0].T < since && sr.Stale {
							reached++ // a stale series' sample before the range
						}
					}
				}
			}
		}
		// The comparison must have met what the bound changes.
		if reached < 100 {
			t.Errorf("keep %v: only %d stale series reached back before their range (%d compared)", keep, reached, compared)
		}
	}
}

// TestLoadRefusesValueAfterLastSeen: a checkpoint whose series holds a
// value after its last scrape is not what appends build, and SelectSince's
// bounded walk would miss that value: Load refuses it.
func TestLoadRefusesValueAfterLastSeen(t *testing.T) {
	h := TargetHistory{Next: 3, Times: []int64{1000, 2000, 3000}, Series: []SeriesHistory{{
		Key: "c\xff", Name: "c", Type: Counter, Values: []float64{1, math.NaN(), 3}, LastSeen: 0,
	}}}
	err := NewStore(StoreConfig{History: 10}).Load("t", h)
	if err == nil || !strings.Contains(err.Error(), "after its last") {
		t.Errorf("Load of a value after the last scrape: %v, want an error", err)
	}
	h.Series[0].LastSeen = 2
	if err := NewStore(StoreConfig{History: 10}).Load("t", h); err != nil {
		t.Errorf("Load of a consistent history: %v", err)
	}
	// Onto held scrapes: a held value newer than the checkpoint's last
	// scrape, before the checkpoint's first, is refused too.
	st := NewStore(StoreConfig{History: 10})
	st.Append(snap("t", 1, counter("c", 1)))
	st.Append(snap("t", 2, counter("c", 2)))
	held := TargetHistory{Next: 3, Times: []int64{3000}, Series: []SeriesHistory{{
		Key: "c\xff", Name: "c", Type: Counter, Values: []float64{math.NaN()}, LastSeen: 0,
	}}}
	if err := st.Load("t", held); err == nil || !strings.Contains(err.Error(), "held value") {
		t.Errorf("Load over a newer held value: %v, want an error", err)
	}
	held.Series[0].LastSeen = 1
	if err := st.Load("t", held); err != nil {
		t.Errorf("Load onto held scrapes: %v", err)
	}
}

// BenchmarkSelectSinceStale selects the last minute of a store at its
// default history (900 scrapes) whose 2,000 series half left after the
// 10th scrape, and reports the bounded walk against the walk from the
// range's start (ratio-bounded/walk), measured in the same run.
func BenchmarkSelectSinceStale(b *testing.B) {
	fill := func(st *Store) {
		for i := range 900 {
			f := Family{Name: "c_total", Type: Counter}
			for d := range 2000 {
				if d%2 == 1 && i >= 10 {
					continue
				}
				f.Samples = append(f.Samples, Sample{Labels: LabelsFromPairs("dep", fmt.Sprint(d)), Value: float64(i)})
			}
			st.Append(&Snapshot{Target: "t", Time: time.Unix(int64(1000+i), 0), Families: []Family{f}})
		}
	}
	bounded, walk := NewStore(StoreConfig{History: 900}), NewStore(StoreConfig{History: 900})
	walk.noWalkBound = true
	fill(bounded)
	fill(walk)
	since := int64(1000+900-60) * 1000
	var tb, tw time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		bounded.SelectSince("t", "c_total", nil, since)
		t1 := time.Now()
		walk.SelectSince("t", "c_total", nil, since)
		tb, tw = tb+t1.Sub(t0), tw+time.Since(t1)
	}
	b.ReportMetric(float64(tb.Nanoseconds())/float64(b.N), "ns/bounded")
	b.ReportMetric(float64(tw.Nanoseconds())/float64(b.N), "ns/walk")
	b.ReportMetric(float64(tb)/float64(tw), "ratio-bounded/walk")
}

// BenchmarkFirstAppendOutOfOrder: a target's first scrape of 20,000
// series of one name in reverse key order. Each name's list is sorted
// once at the end of the Append, however many series came out of order.
func BenchmarkFirstAppendOutOfOrder(b *testing.B) {
	f := Family{Name: "c_total", Type: Counter}
	for d := 20000; d > 0; d-- {
		f.Samples = append(f.Samples, Sample{Labels: LabelsFromPairs("dep", fmt.Sprintf("%05d", d)), Value: 1})
	}
	snap := &Snapshot{Target: "t", Time: time.Unix(1000, 0), Families: []Family{f}}
	b.ReportAllocs()
	for b.Loop() {
		st := NewStore(StoreConfig{History: 60})
		st.Append(snap)
	}
}
