package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// exportDiff says how two exports differ ("" when they are the same:
// every field, values bit for bit, nil slices as nil).
func exportDiff(got, want TargetHistory) string {
	if fmt.Sprint(got.Times) != fmt.Sprint(want.Times) || (got.Times == nil) != (want.Times == nil) {
		return fmt.Sprintf("times %v, want %v", got.Times, want.Times)
	}
	if got.Next != want.Next || got.Start != want.Start || got.Dropped != want.Dropped || got.Cap != want.Cap {
		return fmt.Sprintf("head %d %v %d %+v, want %d %v %d %+v", got.Next, got.Start, got.Dropped, got.Cap, want.Next, want.Start, want.Dropped, want.Cap)
	}
	if len(got.Series) != len(want.Series) || (got.Series == nil) != (want.Series == nil) {
		return fmt.Sprintf("%d series, want %d", len(got.Series), len(want.Series))
	}
	for i := range got.Series {
		g, w := &got.Series[i], &want.Series[i]
		if g.Key != w.Key || g.Name != w.Name || g.Labels.String() != w.Labels.String() || g.Type != w.Type ||
			math.Float64bits(g.Extra) != math.Float64bits(w.Extra) || g.LastSeen != w.LastSeen || g.Values32 != nil || w.Values32 != nil {
			return fmt.Sprintf("series %d: %+v, want %+v", i, *g, *w)
		}
		if len(g.Values) != len(w.Values) || (g.Values == nil) != (w.Values == nil) || cap(g.Values) != len(g.Values) {
			return fmt.Sprintf("series %d %s: %d values (cap %d), want %d", i, g.Key, len(g.Values), cap(g.Values), len(w.Values))
		}
		for k := range g.Values {
			if math.Float64bits(g.Values[k]) != math.Float64bits(w.Values[k]) {
				return fmt.Sprintf("series %d %s: value %d = %v, want %v", i, g.Key, k, g.Values[k], w.Values[k])
			}
		}
	}
	return ""
}

// TestExportByOrderMatchesByMap: Export walking the series cache's order
// and the stale list must return exactly what the walk by the series map
// (the reference, noExportOrder) returns, and so must ExportReuse with
// one buffer shared by every call, for every range start, after every
// scrape: series coming and going, targets down for a scrape, counter
// resets and restarts, present NaNs, KeepSeries, the caps, histories of
// 1 to 40 scrapes over 120 (the rings wrap), rings widened to float64 and
// tile columns reused (tilesWorld), a family given twice (the cache lists
// a series twice: the map's way) and a Load (order cleared: the map's
// way until the next Append).
func TestExportByOrderMatchesByMap(t *testing.T) {
	type world struct {
		name    string
		cfg     StoreConfig
		scrapes func(i int) []*Snapshot
	}
	var worlds []world
	for _, cfg := range bulkConfigs {
		var w *bulkWorld
		worlds = append(worlds, world{fmt.Sprintf("bulk%+v", cfg), cfg, func(i int) []*Snapshot {
			if i == 0 {
				w = newBulkWorld()
			}
			out := w.scrapes(i)
			if i%13 == 6 {
				// The first family given twice: its series at two positions.
				out[0].Families = append(out[0].Families, out[0].Families[0])
			}
			return out
		}})
	}
	for _, hist := range []int{1, 16, 17, 40} {
		var rng *rand.Rand
		worlds = append(worlds, world{fmt.Sprint("tiles/history=", hist), StoreConfig{History: hist}, func(i int) []*Snapshot {
			if i == 0 {
				rng = rand.New(rand.NewPCG(5, 6))
			}
			return []*Snapshot{tilesWorld(rng, i)}
		}})
	}
	for _, w := range worlds {
		t.Run(w.name, func(t *testing.T) {
			st := NewStore(w.cfg)
			var buf ExportBuffer
			byOrder, byMap, withStale, wrapped := 0, 0, 0, 0
			for i := range 120 {
				for _, s := range w.scrapes(i) {
					st.Append(s)
				}
				if i == 50 {
					// A store loaded from this one: order empty until its
					// next Append.
					st = restored(t, st, w.cfg, false)
				}
				for _, tg := range st.Targets() {
					st.mu.RLock()
					th := st.targets[tg]
					next, exact, stale := th.next, th.orderExact, len(th.stale)
					if next > int64(len(th.times)) {
						wrapped++
					}
					st.mu.RUnlock()
					if exact {
						byOrder++
						if stale > 0 {
							withStale++
						}
					} else {
						byMap++
					}
					for _, from := range []int64{math.MinInt64, 0, next / 2, next - 2, next - 1, next, next + 3} {
						got := st.Export(tg, from)
						reused := st.ExportReuse(tg, from, &buf)
						st.noExportOrder = true
						want := st.Export(tg, from)
						st.noExportOrder = false
						if d := exportDiff(got, want); d != "" {
							t.Fatalf("scrape %d, %s from %d (by order %v): %s", i, tg, from, exact, d)
						}
						if d := exportDiff(reused, want); d != "" && !(len(want.Series) == 0 && d == "0 series, want 0") {
							t.Fatalf("scrape %d, %s from %d, reusing the buffer: %s", i, tg, from, d)
						}
					}
				}
			}
			// The world must have tested what it claims to.
			if byOrder == 0 || byMap == 0 || wrapped == 0 {
				t.Errorf("exports by order %d, by the map %d, of a wrapped ring %d: want each > 0", byOrder, byMap, wrapped)
			}
			if withStale == 0 && w.cfg.History > 1 {
				t.Errorf("no export by order had stale series")
			}
		})
	}
}

// exportBenchStore is one target of 2,000 counters at the default history
// of 900, its ring wrapped, 40 of its series (2 %) stale: the shape of
// the replay's 1-hour dump's targets.
func exportBenchStore() *Store {
	st := NewStore(StoreConfig{History: 900})
	f := Family{Name: "envoy_cluster_upstream_rq_total", Type: Counter}
	for i := range 2000 {
		f.Samples = append(f.Samples, Sample{Labels: LabelsFromPairs("envoy_cluster_name", fmt.Sprintf("svc_%d", i)), Value: float64(i)})
	}
	for i := range 1000 {
		s := &Snapshot{Target: "a", Time: time.Unix(int64(i+1), 0), Families: []Family{f}}
		if i >= 990 {
			s.Families = []Family{{Name: f.Name, Type: Counter, Samples: f.Samples[40:]}}
		}
		for k := range f.Samples {
			f.Samples[k].Value++
		}
		st.Append(s)
	}
	return st
}

// BenchmarkExport exports the newest two scrapes of exportBenchStore's
// target (what the replay's seek index logs after every scrape) and its
// whole history: map is the walk by the series map and a key per series
// (the reference, as Export was), order the walk by the series cache,
// reuse that into one ExportBuffer. Each is its own sub-benchmark for
// -benchmem; ratio runs the three in the same rounds and reports
// ratio-order/map and ratio-reuse/map (a busy machine moves all three).
func BenchmarkExport(b *testing.B) {
	st := exportBenchStore()
	next := st.Export("a", math.MaxInt64).Next
	for _, span := range []struct {
		name string
		from int64
	}{{"two-scrapes", next - 2}, {"whole", 0}} {
		var buf ExportBuffer
		runs := map[string]func(){
			"map":   func() { st.noExportOrder = true; st.Export("a", span.from); st.noExportOrder = false },
			"order": func() { st.Export("a", span.from) },
			"reuse": func() { st.ExportReuse("a", span.from, &buf) },
		}
		for _, name := range []string{"map", "order", "reuse"} {
			b.Run(span.name+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					runs[name]()
				}
			})
		}
		b.Run(span.name+"/ratio", func(b *testing.B) {
			var d [3]time.Duration
			for b.Loop() {
				for k, name := range []string{"map", "order", "reuse"} {
					t0 := time.Now()
					runs[name]()
					d[k] += time.Since(t0)
				}
			}
			b.ReportMetric(float64(d[1])/float64(d[0]), "ratio-order/map")
			b.ReportMetric(float64(d[2])/float64(d[0]), "ratio-reuse/map")
		})
	}
}
