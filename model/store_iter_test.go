package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestStoreIterEqualsFlatIter: storeIter gives Append flatIter's flat
// series, field for field, over every family shape: counters, gauges and
// untyped one after the other, histograms and summaries with and without
// buckets or quantiles, families without samples, a family given twice,
// and random mixes of them.
func TestStoreIterEqualsFlatIter(t *testing.T) {
	ls := LabelsFromPairs("a", "1")
	hist := func(name string, nb int) Family {
		f := Family{Name: name, Type: Histogram}
		for s := range 3 {
			sm := Sample{Labels: ls, Count: float64(10 + s), Sum: 0.5 * float64(s)}
			for b := range nb {
				sm.Buckets = append(sm.Buckets, Bucket{UpperBound: float64(b + 1), Count: float64(b + s)})
			}
			if nb > 0 {
				sm.Buckets[nb-1].UpperBound = math.Inf(1)
			}
			f.Samples = append(f.Samples, sm)
		}
		return f
	}
	summ := func(name string, nq int) Family {
		f := Family{Name: name, Type: Summary}
		for s := range 2 {
			sm := Sample{Labels: ls, Count: float64(7 + s), Sum: 2}
			for q := range nq {
				sm.Quantiles = append(sm.Quantiles, QuantileValue{Quantile: float64(q+1) / 10, Value: float64(q * s)})
			}
			f.Samples = append(f.Samples, sm)
		}
		return f
	}
	plain := func(name string, typ MetricType, n int) Family {
		f := Family{Name: name, Type: typ}
		for s := range n {
			f.Samples = append(f.Samples, Sample{Labels: ls, Value: float64(s)})
		}
		return f
	}
	shapes := []Family{
		plain("c", Counter, 3), plain("g", Gauge, 2), plain("u", Untyped, 1), plain("none", Counter, 0),
		hist("h", 4), hist("h0", 0), hist("h1", 1), summ("s", 2), summ("s0", 0), {Name: "hnone", Type: Histogram},
	}
	check := func(name string, fams []Family) {
		t.Helper()
		a, b := flatIter{fams: fams}, storeIter{fams: fams}
		n := 0
		for {
			na, nb := a.next(), b.next()
			if na != nb {
				t.Fatalf("%s: series %d: flatIter %v, storeIter %v", name, n, na, nb)
			}
			if !na {
				break
			}
			ra, rb := a.r, b.r
			if ra.fam != rb.fam || ra.sample != rb.sample || ra.suffix != rb.suffix || ra.sfx != rb.sfx || ra.extra != rb.extra ||
				math.Float64bits(ra.extraVal) != math.Float64bits(rb.extraVal) || math.Float64bits(ra.value) != math.Float64bits(rb.value) {
				t.Fatalf("%s: series %d: flatIter %+v, storeIter %+v", name, n, ra, rb)
			}
			n++
		}
		if want := (&Snapshot{Families: fams}).SeriesCount(); n != want {
			t.Fatalf("%s: %d series, SeriesCount %d", name, n, want)
		}
	}
	for _, f := range shapes {
		check(f.Name, []Family{f})
		check(f.Name+" twice", []Family{f, f})
	}
	check("all", shapes)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		var fams []Family
		for range rng.IntN(8) {
			fams = append(fams, shapes[rng.IntN(len(shapes))])
		}
		check("mix "+string(rune('a'+i%26)), fams)
	}
}
