package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// cacheWorld is a target whose exposition changes scrape by scrape: series
// come and go (churn), leave and return after a gap, families and samples
// change order, labels arrive in another order, counters reset.
type cacheWorld struct {
	rng    *rand.Rand
	values map[string]float64
}

func (w *cacheWorld) next(name string, reset bool) float64 {
	v := w.values[name] + float64(w.rng.IntN(5))
	if reset {
		v = float64(w.rng.IntN(3))
	}
	w.values[name] = v
	return v
}

// snapshot builds scrape i. Strings are built afresh each time (no
// interning), so the cache's checks cannot lean on pointers.
func (w *cacheWorld) snapshot(i int) *Snapshot {
	r := w.rng
	reset := r.IntN(10) == 0 // every counter of the target goes down together
	var fams []Family
	// Counters: deps 0..7, each present with probability 0.8 (churn, gaps).
	c := Family{Name: "retry_attempts_total", Type: Counter}
	for d := range 8 {
		if r.IntN(5) == 0 {
			continue
		}
		ls := Labels{{Name: "dependency", Value: "dep-" + strconv.Itoa(d)}, {Name: "outcome", Value: "ok"}}
		if r.IntN(8) == 0 {
			ls[0], ls[1] = ls[1], ls[0] // label order changed: another series to the store
		}
		c.Samples = append(c.Samples, Sample{Labels: ls, Value: w.next(fmt.Sprint("c", d, ls), reset)})
	}
	// A histogram whose bucket layout sometimes changes.
	h := Family{Name: "retry_request_duration_seconds", Type: Histogram}
	for d := range 3 {
		bounds := []float64{0.1, 0.5, 1, math.Inf(+1)}
		if r.IntN(6) == 0 {
			bounds = []float64{0.1, 0.25, 0.5, 1, math.Inf(+1)}
		}
		var bs []Bucket
		base := w.next(fmt.Sprint("h", d), reset)
		for k, ub := range bounds {
			bs = append(bs, Bucket{UpperBound: ub, Count: base * float64(k+1)})
		}
		h.Samples = append(h.Samples, Sample{Labels: Labels{{Name: "dependency", Value: "dep-" + strconv.Itoa(d)}},
			Buckets: bs, Count: bs[len(bs)-1].Count, Sum: base * 0.3})
	}
	// A summary and a gauge; the gauge sometimes carries a label named le.
	q := Family{Name: "rpc_seconds", Type: Summary, Samples: []Sample{{
		Quantiles: []QuantileValue{{0.5, r.Float64()}, {0.99, r.Float64()}}, Count: w.next("q", reset), Sum: 1}}}
	g := Family{Name: "pool_size", Type: Gauge, Samples: []Sample{{Value: float64(r.IntN(9))}}}
	if r.IntN(4) == 0 {
		g.Samples[0].Labels = Labels{{Name: "le", Value: "1"}}
	}
	if r.IntN(5) == 0 {
		g.Name = "pool_idle" // another family of the same length at the same position
	}
	fams = append(fams, c, h, q, g)
	if i%7 == 3 {
		r.Shuffle(len(fams), func(a, b int) { fams[a], fams[b] = fams[b], fams[a] })
		r.Shuffle(len(c.Samples), func(a, b int) { c.Samples[a], c.Samples[b] = c.Samples[b], c.Samples[a] })
	}
	if i%11 == 5 {
		fams = fams[:2] // half the target missing for a scrape
	}
	if i%13 == 0 && i > 0 {
		fams = append(fams, fams[0]) // a family given twice
	}
	return &Snapshot{Target: "t", Time: time.Unix(int64(1000+i), 0), Families: fams}
}

// TestSeriesCacheMatchesKeyLookups appends the same changing scrapes to a
// store with the series cache and to one that looks every key up, and
// requires identical results, histories and stats after every scrape.
func TestSeriesCacheMatchesKeyLookups(t *testing.T) {
	for _, cfg := range []StoreConfig{
		{History: 5},
		{History: 40},
		{History: 40, MaxSeriesPerTarget: 12}, // the cap drops series at varying positions
		{History: 1},
	} {
		t.Run(fmt.Sprintf("history=%d/cap=%d", cfg.History, cfg.MaxSeriesPerTarget), func(t *testing.T) {
			cached, plain := NewStore(cfg), NewStore(cfg)
			plain.noSeriesCache = true
			w1 := &cacheWorld{rng: rand.New(rand.NewPCG(1, 2)), values: map[string]float64{}}
			w2 := &cacheWorld{rng: rand.New(rand.NewPCG(1, 2)), values: map[string]float64{}}
			for i := range 150 {
				a, b := cached.Append(w1.snapshot(i)), plain.Append(w2.snapshot(i))
				if a != b {
					t.Fatalf("scrape %d: cached %+v, key lookups %+v", i, a, b)
				}
				if ca, pa := cached.Stats("t"), plain.Stats("t"); ca != pa {
					t.Fatalf("scrape %d: stats %+v vs %+v", i, ca, pa)
				}
				names := plain.Names("t")
				if got := cached.Names("t"); !reflect.DeepEqual(got, names) {
					t.Fatalf("scrape %d: names %v vs %v", i, got, names)
				}
				for _, n := range names {
					if got, want := cached.Select("t", n, nil), plain.Select("t", n, nil); !reflect.DeepEqual(fmt.Sprint(got), fmt.Sprint(want)) {
						t.Fatalf("scrape %d, %s:\ncached %v\nlookup %v", i, n, got, want)
					}
				}
			}
		})
	}
}

// TestSeriesCacheCases walks the named cases one scrape at a time.
func TestSeriesCacheCases(t *testing.T) {
	cnt := func(v float64, dep string) Family { return counter("c_total", v, "dependency", dep) }
	two := func(v1, v2 float64) []Family {
		return []Family{{Name: "c_total", Type: Counter, Samples: []Sample{
			{Labels: LabelsFromPairs("dependency", "a"), Value: v1},
			{Labels: LabelsFromPairs("dependency", "b"), Value: v2}}}}
	}
	st := NewStore(StoreConfig{History: 10})
	steps := []struct {
		name string
		fams []Family
	}{
		{"first", two(1, 10)},
		{"steady", two(2, 11)},
		{"swapped order", []Family{{Name: "c_total", Type: Counter, Samples: []Sample{
			{Labels: LabelsFromPairs("dependency", "b"), Value: 12},
			{Labels: LabelsFromPairs("dependency", "a"), Value: 3}}}}},
		{"b gone", []Family{cnt(4, "a")}},
		{"b back after a gap", two(5, 13)},
		{"reset", two(0, 1)},
	}
	for i, s := range steps {
		st.Append(snap("t", int64(i+1), s.fams...))
	}
	got := st.Select("t", "c_total", nil)
	want := "[[{1000 1} {2000 2} {3000 3} {4000 4} {5000 5} {6000 0}] [{1000 10} {2000 11} {3000 12} {5000 13} {6000 1}]]"
	if g := fmt.Sprint(points(got)); g != want {
		t.Errorf("points = %s\nwant     %s", g, want)
	}
	if got[1].Stale || st.Stats("t").Series != 2 {
		t.Errorf("b stale %v, series %d; want fresh, 2", got[1].Stale, st.Stats("t").Series)
	}
}

// TestSeriesCacheRefusals: series the cap refused are remembered by
// position, but admitted as soon as there is room, and a series the same
// scrape stored is never refused as a duplicate.
func TestSeriesCacheRefusals(t *testing.T) {
	g := func(name string) Family { return Family{Name: name, Type: Gauge, Samples: []Sample{{Value: 1}}} }
	for _, c := range []struct {
		name    string
		cfg     StoreConfig
		scrapes [][]string
		dropped []int
	}{
		// b leaves and is forgotten after two scrapes: c gets its place.
		{"room made", StoreConfig{History: 2, MaxSeriesPerTarget: 2},
			[][]string{{"a", "b", "c"}, {"a", "c"}, {"a", "c"}, {"a", "c"}}, []int{1, 1, 1, 0}},
		// y, refused at position 1, is stored at position 0 of the last
		// scrape and given twice: the second is the same series.
		{"stored earlier in the scrape", StoreConfig{History: 1, MaxSeriesPerTarget: 1},
			[][]string{{"a", "y"}, {"b", "y"}, {"y", "y"}}, []int{1, 2, 0}},
	} {
		cached, plain := NewStore(c.cfg), NewStore(c.cfg)
		plain.noSeriesCache = true
		for i, names := range c.scrapes {
			var fams []Family
			for _, n := range names {
				fams = append(fams, g(n))
			}
			a, b := cached.Append(snap("t", int64(i+1), fams...)), plain.Append(snap("t", int64(i+1), fams...))
			if a != b || a.Dropped != c.dropped[i] {
				t.Errorf("%s, scrape %d: cached %+v, key lookups %+v; want %d dropped", c.name, i+1, a, b, c.dropped[i])
			}
		}
	}
}
