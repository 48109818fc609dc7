package model

import "testing"

// TestUnsealedStore: a store with Unsealed shows what a sealing one does,
// scrape after scrape, for float32 columns (counters with gaps, noisy
// quarters) and float64 rings (sums with halves past float32), and never
// seals a chunk of either.
func TestUnsealedStore(t *testing.T) {
	const hist = 300 // three chunks, the last short
	sealing, unsealed := NewStore(StoreConfig{History: hist}), NewStore(StoreConfig{History: hist, Unsealed: true})
	w := newChunkWorld(13, 14, true)
	for i := range 700 {
		snap := w.scrape(i)
		sealing.Append(snap)
		unsealed.Append(snap)
		if i%7 == 0 || i > hist {
			if got, want := storeText(unsealed), storeText(sealing); got != want {
				t.Fatalf("scrape %d:\nunsealed\n%s\nsealing\n%s", i, got, want)
			}
		}
	}
	packed := func(st *Store) (tiles, wide int) {
		st.mu.RLock()
		defer st.mu.RUnlock()
		th := st.targets["t"]
		for _, x := range th.tiles {
			for _, p := range x.packed {
				if p != nil {
					tiles++
				}
			}
		}
		for _, ss := range th.series {
			if w := ss.ring.wide; w != nil {
				for _, p := range w.packed {
					if p != nil {
						wide++
					}
				}
			}
		}
		return tiles, wide
	}
	if tiles, wide := packed(sealing); tiles == 0 || wide == 0 {
		t.Fatalf("the sealing store sealed %d float32 and %d float64 chunks: the world does not test both", tiles, wide)
	}
	if tiles, wide := packed(unsealed); tiles != 0 || wide != 0 {
		t.Errorf("the unsealed store sealed %d float32 and %d float64 chunks", tiles, wide)
	}
}
