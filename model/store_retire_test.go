package model

import (
	"fmt"
	"testing"
)

// retireWorld is a store of two targets whose whole History was loaded
// (every series a ring of its own, as a replay's restore makes), and
// that history, to load again.
func retireWorld(t *testing.T) (*Store, StoreConfig, map[string]TargetHistory) {
	t.Helper()
	cfg := StoreConfig{History: 40}
	w := newBulkWorld()
	src := NewStore(cfg)
	for i := range 70 {
		for _, s := range w.scrapes(i) {
			src.Append(s)
		}
	}
	hs := map[string]TargetHistory{}
	for _, tg := range src.Targets() {
		h := src.Export(tg, 0)
		to32(&h)
		hs[tg] = h
	}
	return restored(t, src, cfg, true), cfg, hs
}

// arrays are the first elements' addresses of st's own rings' arrays
// and of its float64 rings' open chunks.
func arrays(st *Store) map[any]bool {
	st.mu.RLock()
	defer st.mu.RUnlock()
	out := map[any]bool{}
	for _, th := range st.targets {
		for _, ss := range th.series {
			if v := ss.ring.ownArray(); v != nil {
				out[&v[0]] = true
			}
			if w := ss.ring.wide; w != nil {
				for _, v := range w.v {
					if v != nil {
						out[&v[0]] = true
					}
				}
			}
		}
	}
	return out
}

// wideArrays counts the float64 chunks among arrays.
func wideArrays(a map[any]bool) int {
	n := 0
	for k := range a {
		if _, ok := k.(*float64); ok {
			n++
		}
	}
	return n
}

// TestRetireGivesRingsToTheNextLoad: a retired store is empty, and the
// next store loaded takes its rings' arrays (stale values and all) and
// holds what a store loaded without them holds.
func TestRetireGivesRingsToTheNextLoad(t *testing.T) {
	old, cfg, hs := retireWorld(t)
	want := storeText(old)
	had := arrays(old)
	if len(had) == 0 || wideArrays(had) == 0 {
		t.Fatalf("the loaded store has %d arrays, %d of them float64 chunks: want both kinds", len(had), wideArrays(had))
	}
	old.Retire()
	if got := old.Targets(); len(got) != 0 {
		t.Errorf("a retired store lists targets %v", got)
	}
	if old.Hold() {
		t.Error("a retired store can be held")
	}
	// The arrays must be written over: a second history of other values.
	for round := range 2 {
		st := NewStore(cfg)
		for _, tg := range []string{"t0", "t1"} {
			h := hs[tg]
			if round == 1 {
				h = shifted(h, 1000)
			}
			if err := st.Load(tg, h); err != nil {
				t.Fatal(err)
			}
		}
		reused := map[bool]int{} // by float64 or not
		for a := range arrays(st) {
			if had[a] {
				_, wide := a.(*float64)
				reused[wide]++
			}
		}
		// sync.Pool may drop a value (under the race detector, one in
		// four at random), never all of them.
		if reused[false] == 0 || reused[true] == 0 {
			t.Errorf("round %d: of %d arrays of the retired store, %d float32 and %d float64 reused, want some of each", round, len(had), reused[false], reused[true])
		}
		want := want
		if round == 1 {
			want = storeText(restoredFrom(t, cfg, map[string]TargetHistory{"t0": shifted(hs["t0"], 1000), "t1": shifted(hs["t1"], 1000)}))
		}
		if got := storeText(st); got != want {
			t.Fatalf("round %d: loaded into reused arrays\n%s\nwant\n%s", round, got, want)
		}
		had = arrays(st)
		st.Retire()
	}
}

// shifted is h with every present value plus d.
func shifted(h TargetHistory, d float32) TargetHistory {
	out := h
	out.Series = make([]SeriesHistory, len(h.Series))
	for i, sh := range h.Series {
		if sh.Values32 != nil {
			v := make([]float32, len(sh.Values32))
			for k, x := range sh.Values32 {
				v[k] = x + d
			}
			sh.Values32 = v
		} else {
			v := make([]float64, len(sh.Values))
			for k, x := range sh.Values {
				v[k] = x + float64(d)
			}
			sh.Values = v
		}
		out.Series[i] = sh
	}
	return out
}

// restoredFrom is a store of cfg loaded with hs.
func restoredFrom(t *testing.T, cfg StoreConfig, hs map[string]TargetHistory) *Store {
	t.Helper()
	st := NewStore(cfg)
	for tg, h := range hs {
		if err := st.Load(tg, h); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// TestRetireWaitsForReaders: a store held by readers stays whole when
// asked to retire, and refuses new readers; the last Release retires it.
func TestRetireWaitsForReaders(t *testing.T) {
	st, _, _ := retireWorld(t)
	want := storeText(st)
	for i := range 2 {
		if !st.Hold() {
			t.Fatalf("hold %d refused", i)
		}
	}
	st.Retire()
	if got := storeText(st); got != want {
		t.Fatalf("a held store changed when asked to retire:\n%s\nwant\n%s", got, want)
	}
	if st.Hold() {
		t.Error("a store asked to retire can be held")
	}
	st.Release()
	if got := storeText(st); got != want {
		t.Fatalf("still held by one reader, the store changed:\n%s", got)
	}
	st.Release()
	if got := st.Targets(); len(got) != 0 {
		t.Errorf("after the last release, the store lists %v", got)
	}
	// A store never asked to retire stays whole after its readers leave.
	st2, _, _ := retireWorld(t)
	want2 := storeText(st2)
	st2.Hold()
	st2.Release()
	if got := storeText(st2); got != want2 {
		t.Errorf("a store held and released changed:\n%s", got)
	}
}

func ExampleStore_Retire() {
	st := NewStore(StoreConfig{History: 4})
	st.Append(snap("t", 1, counter("c_total", 1, "dependency", "a")))
	st.Hold() // a frame reads it
	st.Retire()
	fmt.Println(st.Targets())
	st.Release()
	fmt.Println(st.Targets())
	// Output:
	// [t]
	// []
}
