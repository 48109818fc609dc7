package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// wide is one gauge family of n series named by their i label.
func wide(n int, from int) Family {
	f := Family{Name: "g", Type: Gauge}
	for i := range n {
		f.Samples = append(f.Samples, Sample{Labels: LabelsFromPairs("i", fmt.Sprint(from+i)), Value: 1})
	}
	return f
}

// MaxSeries bounds the series across targets, beside the per-target cap,
// so that many targets each under their own cap cannot hold any number of
// series in total: what does not fit is refused and counted with the cap
// that refused it, and room made (a series forgotten, a target removed) is
// taken again.
func TestSeriesCapIsAlsoTotalAcrossTargets(t *testing.T) {
	for _, cache := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache=%v", cache), func(t *testing.T) {
			st := NewStore(StoreConfig{History: 2, MaxSeriesPerTarget: 6, MaxSeries: 10})
			st.noSeriesCache = !cache
			// a: 8 series, 6 kept by its own cap.
			ra := st.Append(snap("a", 1, wide(8, 0)))
			want := SeriesCap{ByTarget: 2, PerTarget: 6, Total: 10, Kept: 6, StoreKept: 6}
			if ra.Series != 6 || ra.Dropped != 2 || ra.Cap != want {
				t.Fatalf("a: %+v, want 6 stored, 2 refused by its cap: %+v", ra, want)
			}
			// b: 5 series, only 4 fit under the total of 10.
			rb := st.Append(snap("b", 1, wide(5, 0)))
			want = SeriesCap{ByTotal: 1, PerTarget: 6, Total: 10, Kept: 4, StoreKept: 10}
			if rb.Series != 4 || rb.Dropped != 1 || rb.Cap != want {
				t.Fatalf("b: %+v, want 4 stored, 1 refused by the total: %+v", rb, want)
			}
			// Every scrape while full refuses the same (the series cache's
			// remembered refusals included).
			for sec := int64(2); sec <= 3; sec++ {
				if r := st.Append(snap("b", sec, wide(5, 0))); r.Dropped != 1 || r.Cap.ByTotal != 1 {
					t.Fatalf("b at %d s: %+v, want the same refusal", sec, r)
				}
			}
			// A brand-new target gets nothing while the store is full,
			// and says so.
			rc := st.Append(snap("c", 1, wide(2, 0)))
			if rc.Series != 0 || rc.Cap.ByTotal != 2 || rc.Cap.Kept != 0 {
				t.Fatalf("c: %+v, want both refused by the total", rc)
			}
			if got := st.Totals(); got != (StoreTotals{Series: 10, MaxSeries: 10, Dropped: 2 + 1 + 2, ByTotal: 3}) {
				t.Errorf("totals = %+v", got)
			}
			if s := st.Stats("c"); s.DroppedSeries != 2 || s.Cap.ByTotal != 2 {
				t.Errorf("c stats = %+v", s)
			}
			// Removing a makes room: c's series are stored at its next
			// scrape, b's fifth too.
			st.Forget("a")
			if r := st.Append(snap("c", 2, wide(2, 0))); r.Series != 2 || r.Dropped != 0 || r.Cap != (SeriesCap{}) {
				t.Errorf("c after a left: %+v, want both stored", r)
			}
			if r := st.Append(snap("b", 4, wide(5, 0))); r.Series != 5 || r.Dropped != 0 {
				t.Errorf("b after a left: %+v, want all 5 stored", r)
			}
			if got := st.Totals(); got.Series != 7 || got.Dropped != 0 {
				t.Errorf("totals after a left = %+v, want 7 held, none refused", got)
			}
			// Series forgotten after a whole history's absence free their
			// place too: b drops to 1 series; after 2 scrapes (History) the
			// other 4 are forgotten.
			for sec := int64(5); sec <= 6; sec++ {
				st.Append(snap("b", sec, wide(1, 0)))
			}
			if got := st.Totals().Series; got != 3 {
				t.Errorf("held after b's churn = %d, want 3 (c's 2, b's 1)", got)
			}
		})
	}
}

// Before anything is measured, the total cap follows the process' memory
// limit: five eighths of it, less a thirty-second kept back, over an
// incompressible series' cost at the store's history, never below one
// target's cap. FixedConfig fixes it there.
func TestFixedConfigCap(t *testing.T) {
	for _, c := range []struct {
		limit              int64
		history, perTarget int
		want               int
	}{
		// 320 MiB × 31/32 / (3,600 + 450 + 400 B)
		{512 << 20, 900, 20000, 73046},
		{0, 900, 20000, 73046},
		{math.MaxInt64, 900, 20000, 73046},
		{2 << 30, 900, 20000, 292187},
		// a store of 2 scrapes: 320 MiB × 31/32 / (8 + 1 + 400 B)
		{512 << 20, 2, 20000, 794764},
		// a small limit still holds one target at its cap
		{64 << 20, 900, 20000, 20000},
	} {
		cfg := StoreConfig{History: c.history, MaxSeriesPerTarget: c.perTarget, MaxBytes: DefaultMaxBytes(c.limit)}
		if got := FixedConfig(cfg).MaxSeries; got != c.want {
			t.Errorf("limit %d, history %d, %d per target: cap %d, want %d", c.limit, c.history, c.perTarget, got, c.want)
		}
		if got := NewStore(cfg).Totals().MaxSeries; got != c.want {
			t.Errorf("limit %d, history %d: an empty store caps at %d, want %d", c.limit, c.history, got, c.want)
		}
	}
	if got := FixedConfig(StoreConfig{MaxSeries: 7}).MaxSeries; got != 7 {
		t.Errorf("explicit MaxSeries became %d", got)
	}
}

// The total the cap compares against is the sum of what each target holds
// through churn: series appearing, going stale and being forgotten, targets
// removed, the cap refusing.
func TestStoreTotalFollowsChurn(t *testing.T) {
	for _, hist := range []int{3, 130} { // 130: chunks sealed and measured
		t.Run(fmt.Sprint("history=", hist), func(t *testing.T) { totalFollowsChurn(t, hist) })
	}
}

func totalFollowsChurn(t *testing.T, hist int) {
	rng := rand.New(rand.NewPCG(3, 4))
	st := NewStore(StoreConfig{History: hist, MaxSeriesPerTarget: 12, MaxSeries: 30})
	names := []string{"a", "b", "c", "d"}
	for sec := int64(1); sec <= 1200; sec++ {
		tg := names[rng.IntN(len(names))]
		if rng.IntN(20) == 0 {
			st.Forget(tg)
			continue
		}
		st.Append(snap(tg, sec, wide(rng.IntN(16), rng.IntN(8))))
		sum := 0
		for _, n := range st.Targets() {
			sum += st.Stats(n).Series
		}
		if got := st.Totals().Series; got != sum || got > 30 {
			t.Fatalf("second %d: total %d, targets hold %d (cap 30)", sec, got, sum)
		}
		checkSums(t, st, fmt.Sprint("second ", sec))
	}
}

// checkSums fails t unless the sums the store keeps for its budget's cap
// (identities, refused series, chunk measures) are those of its targets,
// and each name's series are in key order (SelectSince's).
func checkSums(t *testing.T, st *Store, when string) {
	t.Helper()
	var ident int64
	var dropped int
	var mem memMeasure
	for _, th := range st.targets {
		for _, ss := range th.series {
			ident += ss.identBytes()
		}
		dropped += th.dropped
		mem.add(th.mem, memMeasure{})
		for name, list := range th.byName {
			if !slices.IsSortedFunc(list, byStoreKey) {
				t.Fatalf("%s: %s's series are not in key order", when, name)
			}
		}
	}
	if ident != st.ident || dropped != st.dropped || mem != st.mem {
		t.Fatalf("%s: the store sums identities %d, refused %d, measures %+v; its targets hold %d, %d, %+v",
			when, st.ident, st.dropped, st.mem, ident, dropped, mem)
	}
}
