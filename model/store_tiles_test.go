package model

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

// tilesWorld is selectWorld plus what the tile columns must survive: a
// gauge that turns fractional (its ring widens to float64 and gives its
// column back) and series that each live a few scrapes, so that series
// are forgotten and their columns taken by new ones.
func tilesWorld(rng *rand.Rand, i int) *Snapshot {
	s := selectWorld(rng, i)
	g := Family{Name: "g", Type: Gauge}
	for d := range 3 {
		v := float64(i + d)
		if d == 1 && i > 20 {
			v += 0.1 // not exact as float32 from scrape 21 on
		}
		g.Samples = append(g.Samples, Sample{Labels: LabelsFromPairs("d", fmt.Sprint(d)), Value: v})
	}
	short := Family{Name: "short_total", Type: Counter}
	for k := max(0, i-2); k <= i; k++ { // series k is exposed at scrapes k..k+2
		short.Samples = append(short.Samples, Sample{Labels: LabelsFromPairs("k", fmt.Sprint(k)), Value: float64(i - k)})
	}
	s.Families = append(s.Families, g, short)
	return s
}

// TestRingTilesMatchOwnRings: a store keeping its series' float32 values
// in tile columns must show exactly what one giving every series its own
// ring shows (storeText: every series' points, staleness, stats), scrape
// after scrape, at histories shorter, equal and longer than a tile, and
// its exports must be equal too. Columns of forgotten series are reused,
// so churn does not grow the tiles.
func TestRingTilesMatchOwnRings(t *testing.T) {
	for _, hist := range []int{1, 5, 16, 17, 40, 130, 260} {
		cfg := StoreConfig{History: hist}
		tiled, own := NewStore(cfg), NewStore(cfg)
		own.noTiles = true
		rng1, rng2 := rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
		for i := range 300 {
			tiled.Append(tilesWorld(rng1, i))
			own.Append(tilesWorld(rng2, i))
			if got, want := storeText(tiled), storeText(own); got != want {
				t.Fatalf("history %d, scrape %d:\ntiles\n%s\nown rings\n%s", hist, i, got, want)
			}
			if got, want := fmt.Sprint(tiled.Export("t", 0)), fmt.Sprint(own.Export("t", 0)); got != want {
				t.Fatalf("history %d, scrape %d: exports differ:\n%s\n%s", hist, i, got, want)
			}
		}
		tiled.mu.RLock()
		th := tiled.targets["t"]
		cols, wide := 0, 0
		for _, x := range th.tiles {
			cols += x.cols
		}
		for _, ss := range th.series {
			if ss.ring.wide != nil {
				wide++
			}
		}
		held := len(th.series)
		tiled.mu.RUnlock()
		// 300 short-lived series came and went: without reuse the columns
		// would pass 300.
		if cols > held+64 {
			t.Errorf("history %d: %d tile columns for %d series held", hist, cols, held)
		}
		if wide == 0 {
			t.Errorf("history %d: no ring widened to float64: the world does not test it", hist)
		}
	}
}

// BenchmarkStoreAppendTiles appends the same 2,000 counters at the
// default history with tile columns and with a ring per series, in the
// same rounds, and reports the ratio (ratio-tiles/own): the writes of a
// scrape in consecutive cache lines against one line and page per series.
func BenchmarkStoreAppendTiles(b *testing.B) {
	f := Family{Name: "envoy_cluster_upstream_rq_total", Type: Counter}
	for i := 0; i < 2000; i++ {
		f.Samples = append(f.Samples, Sample{Labels: LabelsFromPairs("envoy_cluster_name", fmt.Sprintf("svc_%d", i)), Value: float64(i)})
	}
	tiled, own := NewStore(StoreConfig{History: 900}), NewStore(StoreConfig{History: 900})
	own.noTiles = true
	s := &Snapshot{Target: "a", Families: []Family{f}}
	var tt, to time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Time = time.Unix(int64(i+1), 0)
		t0 := time.Now()
		tiled.Append(s)
		t1 := time.Now()
		own.Append(s)
		tt, to = tt+t1.Sub(t0), to+time.Since(t1)
	}
	b.ReportMetric(float64(tt.Nanoseconds())/float64(b.N), "ns/tiles")
	b.ReportMetric(float64(to.Nanoseconds())/float64(b.N), "ns/own")
	b.ReportMetric(float64(tt)/float64(to), "ratio-tiles/own")
}

// TestStoredSeriesLayout: a steady scrape of a histogram reads a series'
// sample, type, suffix and extra value and writes its ring's column and
// lastSeen, which must lie in the struct's first 64 bytes (the float64
// ring's pointer too: set and get test it, and the family, which is
// compares by pointer); is reads labels besides, which must lie in the
// second. The struct must be two whole lines: its size class then starts
// every object on a line, and a series costs no third.
func TestStoredSeriesLayout(t *testing.T) {
	var ss storedSeries
	if n := unsafe.Sizeof(ss); n != 128 {
		t.Errorf("storedSeries is %d bytes, not two lines of 64", n)
	}
	ring := unsafe.Offsetof(ss.ring)
	for _, f := range []struct {
		name     string
		off, end uintptr
		line     uintptr
	}{
		{"sid", unsafe.Offsetof(ss.sid), unsafe.Sizeof(ss.sid), 0},
		{"extraVal", unsafe.Offsetof(ss.extraVal), unsafe.Sizeof(ss.extraVal), 0},
		{"lastSeen", unsafe.Offsetof(ss.lastSeen), unsafe.Sizeof(ss.lastSeen), 0},
		{"typ", unsafe.Offsetof(ss.typ), unsafe.Sizeof(ss.typ), 0},
		{"sfx", unsafe.Offsetof(ss.sfx), unsafe.Sizeof(ss.sfx), 0},
		{"ring.tile", ring + unsafe.Offsetof(ss.ring.tile), unsafe.Sizeof(ss.ring.tile), 0},
		{"ring.col", ring + unsafe.Offsetof(ss.ring.col), unsafe.Sizeof(ss.ring.col), 0},
		{"ring.wide", ring + unsafe.Offsetof(ss.ring.wide), unsafe.Sizeof(ss.ring.wide), 0},
		{"labels", unsafe.Offsetof(ss.labels), unsafe.Sizeof(ss.labels), 1},
		{"fam", unsafe.Offsetof(ss.fam), unsafe.Sizeof(ss.fam), 0},
	} {
		if f.off/64 != f.line || (f.off+f.end-1)/64 != f.line {
			t.Errorf("storedSeries.%s lies in bytes %d-%d, not in line %d", f.name, f.off, f.off+f.end-1, f.line)
		}
	}
}
