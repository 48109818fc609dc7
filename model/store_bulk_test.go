package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// bulkWorld is cacheWorld's changing exposition on two targets, with
// present NaN values, process restarts and a target that skips scrapes.
type bulkWorld struct {
	w   [2]*cacheWorld
	rng *rand.Rand
}

func newBulkWorld() *bulkWorld {
	return &bulkWorld{
		w:   [2]*cacheWorld{{rng: rand.New(rand.NewPCG(1, 2)), values: map[string]float64{}}, {rng: rand.New(rand.NewPCG(3, 4)), values: map[string]float64{}}},
		rng: rand.New(rand.NewPCG(5, 6)),
	}
}

// scrapes returns round i: one snapshot per target that is up.
func (b *bulkWorld) scrapes(i int) []*Snapshot {
	var out []*Snapshot
	for k, w := range b.w {
		s := w.snapshot(i)
		s.Target = fmt.Sprint("t", k)
		if k == 1 && i%9 == 4 {
			continue // down this round
		}
		if k == 0 && b.rng.IntN(6) == 0 {
			// A present NaN: the series is there, its value absent.
			s.Families = append(s.Families, Family{Name: "nan_gauge", Type: Gauge, Samples: []Sample{{Value: math.NaN()}}})
		}
		s.ProcessStart = float64(100 + i/40) // a restart every 40 rounds
		out = append(out, s)
	}
	return out
}

// storeText prints everything a reader of the store can see.
func storeText(st *Store) string {
	var b strings.Builder
	tot := st.Totals()
	if st.cfg.MaxSeries == 0 {
		// A cap that follows the budget follows what sealed chunks
		// measure: stores laid out otherwise (rings of their own, loaded)
		// hold the same with another cap.
		tot.MaxSeries, tot.SeriesBytes = 0, 0
	}
	fmt.Fprintf(&b, "totals %+v\n", tot)
	for _, t := range st.Targets() {
		stats := st.Stats(t)
		if st.cfg.MaxSeries == 0 {
			stats.Cap.Total = 0
		}
		fmt.Fprintf(&b, "%s %v %+v\n", t, st.Times(t), stats)
		for _, n := range st.Names(t) {
			for _, s := range st.Select(t, n, nil) {
				fmt.Fprintf(&b, "  %s%s %s %v stale=%v\n", n, s.Labels, s.Type, s.Points, s.Stale)
			}
		}
	}
	return b.String()
}

// restored is a store of cfg loaded from everything src holds; with
// as32, the series whose values are exact as float32 go as Values32.
func restored(t *testing.T, src *Store, cfg StoreConfig, as32 bool) *Store {
	t.Helper()
	dst := NewStore(cfg)
	for _, tg := range src.Targets() {
		h := src.Export(tg, 0)
		if as32 {
			to32(&h)
		}
		if err := dst.Load(tg, h); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// to32 moves the values of h's series that are exact as float32 to
// Values32.
func to32(h *TargetHistory) {
	for i := range h.Series {
		sh := &h.Series[i]
		v32 := make([]float32, len(sh.Values))
		for k, v := range sh.Values {
			if v32[k] = float32(v); float64(v32[k]) != v && v == v {
				v32 = nil
				break
			}
		}
		if v32 != nil {
			sh.Values, sh.Values32 = nil, v32
		}
	}
}

var bulkConfigs = []StoreConfig{
	{History: 5},
	{History: 40},
	{History: 40, MaxSeriesPerTarget: 12}, // the cap refuses series
	{History: 40, MaxSeriesPerTarget: 30, MaxSeries: 45},
	{History: 1},
	{History: 40, FirstValueIsBaseline: true},
	{History: 5, KeepSeries: true}, // series absent for the whole history stay
}

// TestExportLoadThenAppend: a store loaded from another's Export holds
// the same, and appending the same scrapes to both from there keeps them
// the same (new series seeded at zero, restarts, gaps, series forgotten
// after History, the caps), scrape after scrape.
func TestExportLoadThenAppend(t *testing.T) {
	for _, cfg := range bulkConfigs {
		for _, at := range []int{0, 41} {
			t.Run(fmt.Sprintf("%+v/at=%d", cfg, at), func(t *testing.T) {
				w := newBulkWorld()
				src := NewStore(cfg)
				var dst *Store
				for i := range 120 {
					for _, s := range w.scrapes(i) {
						a := src.Append(s)
						if dst != nil {
							b := dst.Append(s)
							if cfg.MaxSeries == 0 { // follows the budget: see storeText
								a.Cap.Total, b.Cap.Total = 0, 0
							}
							checkSums(t, dst, fmt.Sprintf("round %d %s, after a load", i, s.Target))
							if a != b {
								t.Fatalf("round %d %s: append %+v, after a load %+v", i, s.Target, a, b)
							}
						}
					}
					if i == at {
						dst = restored(t, src, cfg, at > 0)
						checkSums(t, dst, "restored")
					}
					// Every round after the load, then every fifth (the race
					// detector makes a full comparison slow).
					if dst != nil && (i-at <= 3 || i%5 == 0) {
						if got, want := storeText(dst), storeText(src); got != want {
							t.Fatalf("round %d: loaded store differs\n--- loaded\n%s\n--- appended\n%s", i, got, want)
						}
					}
				}
			})
		}
	}
}

// TestLoadIncrementally: a store kept up by loading each target's newest
// two scrapes (the newest's predecessor carries the zero a new series is
// seeded with) equals the store the scrapes were appended to.
func TestLoadIncrementally(t *testing.T) {
	for _, cfg := range bulkConfigs {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			w := newBulkWorld()
			src := NewStore(cfg)
			var dst *Store
			for i := range 120 {
				for _, s := range w.scrapes(i) {
					src.Append(s)
					if dst == nil {
						continue
					}
					next := src.Export(s.Target, math.MaxInt64).Next
					h := src.Export(s.Target, next-2)
					if i%2 == 0 {
						to32(&h)
					}
					if err := dst.Load(s.Target, h); err != nil {
						t.Fatalf("round %d: %v", i, err)
					}
					checkSums(t, dst, fmt.Sprintf("round %d %s, loaded", i, s.Target))
				}
				if i == 10 {
					dst = restored(t, src, cfg, true)
				}
				if dst != nil && (i <= 13 || i%5 == 0) {
					if got, want := storeText(dst), storeText(src); got != want {
						t.Fatalf("round %d: differs\n--- loaded\n%s\n--- appended\n%s", i, got, want)
					}
				}
			}
		})
	}
}

// TestLoadRefusesMisfits: a history that does not fit the store is an
// error naming the target, and the store is left as it was.
func TestLoadRefusesMisfits(t *testing.T) {
	cfg := StoreConfig{History: 4, MaxSeriesPerTarget: 3}
	base := func() *Store {
		st := NewStore(cfg)
		for i := range 6 {
			st.Append(snap("t", int64(i+1), counter("c_total", float64(i), "dependency", "a")))
		}
		return st
	}
	one := func(times ...int64) TargetHistory {
		v := make([]float64, len(times))
		return TargetHistory{Times: times, Next: 6, Series: []SeriesHistory{{Key: "k", Name: "c_total", Type: Counter, Values: v, LastSeen: 5}}}
	}
	for _, c := range []struct {
		name   string
		target string
		h      TargetHistory
	}{
		{"more scrapes than History", "u", func() TargetHistory { h := one(1, 2, 3, 4, 5); h.Next = 5; return h }()},
		{"fewer than retained, new target", "u", one(5000, 6000)},
		{"times not increasing", "u", one(1000, 3000, 2000, 4000)},
		{"values not aligned", "u", func() TargetHistory { h := one(1, 2, 3, 4); h.Series[0].Values = nil; return h }()},
		{"last seen after the newest", "u", func() TargetHistory { h := one(1, 2, 3, 4); h.Series[0].LastSeen = 6; return h }()},
		{"a series twice", "u", func() TargetHistory { h := one(1, 2, 3, 4); h.Series = append(h.Series, h.Series[0]); return h }()},
		{"over the per-target cap", "u", func() TargetHistory {
			h := one(1, 2, 3, 4)
			for _, k := range []string{"a", "b", "c"} {
				s := h.Series[0]
				s.Key = k
				h.Series = append(h.Series, s)
			}
			return h
		}()},
		{"a gap after the held scrapes", "t", func() TargetHistory { h := one(8000); h.Next = 8; return h }()},
		{"times disagree where they overlap", "t", func() TargetHistory { h := one(5500, 7000); h.Next = 7; return h }()},
		{"not after the held newest", "t", func() TargetHistory { h := one(6000); h.Next = 7; return h }()},
		{"older than retained", "t", func() TargetHistory { h := one(1000, 2000); h.Next = 2; return h }()},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := base()
			before := storeText(st)
			err := st.Load(c.target, c.h)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", c.target)) {
				t.Fatalf("err = %v, want one naming %q", err, c.target)
			}
			if after := storeText(st); after != before {
				t.Fatalf("a refused load changed the store:\n%s\nwas\n%s", after, before)
			}
		})
	}
}
