package model

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestStoreHeapPerSeries holds the store's live heap (after a full
// collection) per series at the default history once its chunks are
// sealed, for counters whose increase changes by less than 32 a scrape
// (one byte a value sealed). Its bound is the encoding's cost: the chunk
// written open as float32, every other slot a byte, each sealed chunk's
// first value raw and its column offset, and the identity SeriesBytes
// takes.
func TestStoreHeapPerSeries(t *testing.T) {
	const series, scrapes = 2000, 1000
	hist := DefaultStoreConfig.History
	bound := chunkSlots*4 + 900*1 + chunks(hist)*(5+4) + seriesIdentityBytes
	rng := rand.New(rand.NewPCG(3, 4))
	fam := Family{Name: "c_total", Type: Counter, Samples: make([]Sample, series)}
	for i := range fam.Samples {
		fam.Samples[i].Labels = LabelsFromPairs("i", strconv.Itoa(i))
	}
	before := liveHeap()
	st := NewStore(StoreConfig{History: hist, MaxSeries: series})
	at := time.Unix(1_700_000_000, 0)
	for k := range scrapes {
		for i := range fam.Samples {
			fam.Samples[i].Value += float64(i%7 + rng.IntN(16)) // increases within 16 of each other
		}
		st.Append(&Snapshot{Target: "t", Time: at.Add(time.Duration(k) * time.Second), Families: []Family{fam}})
	}
	fam.Samples = nil // the generator's own memory out of the measure
	per := float64(liveHeap()-before) / series
	t.Logf("%.0f B per series, %.2f B per sample at %d scrapes", per, per/float64(hist), hist)
	if per > float64(bound) {
		t.Errorf("%.0f B of live heap per series, want at most %d", per, bound)
	}
	runtime.KeepAlive(st)
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
