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

// refusalWorld is two targets over the store's caps whose expositions
// change scrape by scrape: series come and go (so room opens and closes,
// by the target's own cap and by the total cap the other target fills),
// leave and return after a gap, labels arrive in another order, counters
// reset, a histogram's le is sometimes -0 instead of 0 (another key), and
// a family is given twice. Label slices are kept across scrapes, as the
// parser's line cache keeps them, or built afresh, so the series cache's
// checks meet both shared and new memory.
type refusalWorld struct {
	rng    *rand.Rand
	values map[string]float64
	kept   map[string]Labels
}

func (w *refusalWorld) labels(pairs ...string) Labels {
	k := fmt.Sprint(pairs)
	if ls, ok := w.kept[k]; ok && w.rng.IntN(3) > 0 {
		return ls
	}
	ls := make(Labels, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		// Not sorted on purpose when the caller swapped them: another series.
		ls = append(ls, Label{Name: pairs[i], Value: pairs[i+1]})
	}
	w.kept[k] = ls
	return ls
}

func (w *refusalWorld) next(name string, reset bool) float64 {
	v := w.values[name] + float64(w.rng.IntN(4))
	if reset {
		v = float64(w.rng.IntN(2))
	}
	w.values[name] = v
	return v
}

func (w *refusalWorld) snapshot(target string, i int) *Snapshot {
	r := w.rng
	reset := r.IntN(9) == 0
	deps := 6
	if target == "b" && i%20 >= 10 {
		deps = 1 // b shrinks for a while: its series are forgotten, room for a
	}
	c := Family{Name: "c_total", Type: Counter}
	h := Family{Name: "h_seconds", Type: Histogram}
	for d := range deps {
		dep := "dep-" + strconv.Itoa(d)
		if r.IntN(6) > 0 {
			ls := w.labels("dependency", dep, "outcome", "ok")
			if r.IntN(8) == 0 {
				ls = w.labels("outcome", "ok", "dependency", dep) // label order changed
			}
			c.Samples = append(c.Samples, Sample{Labels: ls, Value: w.next(target+"c"+dep, reset)})
		}
		if r.IntN(6) > 0 {
			zero := 0.0
			if r.IntN(5) == 0 {
				zero = math.Copysign(0, -1)
			}
			base := w.next(target+"h"+dep, reset)
			bs := []Bucket{{zero, base}, {1, 2 * base}, {math.Inf(+1), 3 * base}}
			h.Samples = append(h.Samples, Sample{Labels: w.labels("dependency", dep), Buckets: bs, Count: 3 * base, Sum: base})
		}
	}
	q := Family{Name: "rpc_seconds", Type: Summary, Samples: []Sample{{Labels: w.labels("method", "get"),
		Quantiles: []QuantileValue{{0.5, float64(r.IntN(9))}, {0.99, float64(r.IntN(9))}}, Count: w.next(target+"q", reset), Sum: 1}}}
	fams := []Family{c, h, q}
	if i%7 == 3 {
		fams = []Family{h, q, c}
	}
	if i%9 == 4 {
		fams = append(fams, fams[0]) // a family given twice: its samples are the same memory
	}
	if i%13 == 6 {
		fams = fams[:1] // most of the target missing for a scrape
	}
	return &Snapshot{Target: target, Time: time.Unix(int64(1000+i), 0), Families: fams}
}

// TestRefusalCacheMatchesKeyLookups appends the same scrapes of two
// targets over their caps to a store with the series cache (which
// remembers refusals once a sample) and to one that looks every key up,
// and requires identical results, stats, totals and histories after every
// scrape: a refused series is admitted exactly when the key lookups admit
// it, whichever cap's room changed.
func TestRefusalCacheMatchesKeyLookups(t *testing.T) {
	for _, cfg := range []StoreConfig{
		{History: 3, MaxSeriesPerTarget: 14, MaxSeries: 1000}, // the target's cap
		{History: 3, MaxSeriesPerTarget: 40, MaxSeries: 45},   // the total cap, which b's room moves
		{History: 1, MaxSeriesPerTarget: 9, MaxSeries: 15},
		{History: 6, MaxSeriesPerTarget: 20, MaxSeries: 30},
	} {
		t.Run(fmt.Sprintf("history=%d/cap=%d/total=%d", cfg.History, cfg.MaxSeriesPerTarget, cfg.MaxSeries), func(t *testing.T) {
			cached, plain := NewStore(cfg), NewStore(cfg)
			plain.noSeriesCache = true
			w1 := &refusalWorld{rng: rand.New(rand.NewPCG(3, 4)), values: map[string]float64{}, kept: map[string]Labels{}}
			w2 := &refusalWorld{rng: rand.New(rand.NewPCG(3, 4)), values: map[string]float64{}, kept: map[string]Labels{}}
			dropped := 0
			for i := range 200 {
				for _, target := range []string{"a", "b"} {
					a, b := cached.Append(w1.snapshot(target, i)), plain.Append(w2.snapshot(target, i))
					if a != b {
						t.Fatalf("scrape %d of %s: cached %+v, key lookups %+v", i, target, a, b)
					}
					dropped += a.Dropped
					if ca, pa := cached.Stats(target), plain.Stats(target); ca != pa {
						t.Fatalf("scrape %d of %s: stats %+v vs %+v", i, target, ca, pa)
					}
					names := plain.Names(target)
					if got := cached.Names(target); !reflect.DeepEqual(got, names) {
						t.Fatalf("scrape %d of %s: names %v vs %v", i, target, got, names)
					}
					for _, n := range names {
						if got, want := cached.Select(target, n, nil), plain.Select(target, n, nil); fmt.Sprint(got) != fmt.Sprint(want) {
							t.Fatalf("scrape %d of %s, %s:\ncached %v\nlookup %v", i, target, n, got, want)
						}
					}
				}
				if ct, pt := cached.Totals(), plain.Totals(); ct != pt {
					t.Fatalf("scrape %d: totals %+v vs %+v", i, ct, pt)
				}
			}
			if dropped == 0 {
				t.Fatal("no series was refused: the test does not reach the refusals")
			}
		})
	}
}

// TestRefusalAdmittedWhenRoomOpens walks the named cases of a target at
// its cap of 3 series (History 2: a series absent for two scrapes is
// forgotten): a histogram's flat series refused together stay refused
// while nothing changes, one is admitted as soon as a stored series is
// forgotten, and a refused series whose le turned from 0 to -0 is another
// series.
func TestRefusalAdmittedWhenRoomOpens(t *testing.T) {
	hist := func(zero float64, v float64) Family {
		return Family{Name: "h", Type: Histogram, Samples: []Sample{{Labels: LabelsFromPairs("dependency", "d"),
			Buckets: []Bucket{{zero, v}, {math.Inf(+1), v}}, Count: v, Sum: v}}}
	}
	g := func(name string) Family { return Family{Name: name, Type: Gauge, Samples: []Sample{{Value: 1}}} }
	negZero := math.Copysign(0, -1)
	steps := []struct {
		name    string
		fams    []Family
		dropped int
		series  int
	}{
		{"a b c stored, the histogram's 4 refused", []Family{g("a"), g("b"), g("c"), hist(0, 1)}, 4, 3},
		{"steady: refused again", []Family{g("a"), g("b"), g("c"), hist(0, 2)}, 4, 3},
		{"c leaves (still held)", []Family{g("a"), g("b"), hist(0, 3)}, 4, 3},
		{"c forgotten after the scrape", []Family{g("a"), g("b"), hist(0, 4)}, 4, 2},
		{"room for the first bucket", []Family{g("a"), g("b"), hist(0, 5)}, 3, 3},
		{"le -0 is another bucket, refused", []Family{g("a"), g("b"), hist(negZero, 6)}, 4, 3},
	}
	for _, cache := range []bool{true, false} {
		st := NewStore(StoreConfig{History: 2, MaxSeriesPerTarget: 3})
		st.noSeriesCache = !cache
		for i, s := range steps {
			res := st.Append(snap("t", int64(i+1), s.fams...))
			if res.Dropped != s.dropped || st.Stats("t").Series != s.series {
				t.Errorf("cache %v, %s: dropped %d, series %d; want %d, %d", cache, s.name, res.Dropped, st.Stats("t").Series, s.dropped, s.series)
			}
		}
		if got := st.Select("t", "h_bucket", nil); len(got) != 1 || got[0].Labels.Get("le") != "0" {
			t.Errorf("cache %v: h_bucket %v, want the le=0 bucket only", cache, got)
		}
	}
}
