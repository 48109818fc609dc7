package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// budgetFleet appends scrapes of targets × per counter series into st,
// one second apart from second from, each value stepped by next.
func budgetFleet(st *Store, fams []Family, from, scrapes int, next func(i int) float64) {
	at := time.Unix(1_700_000_000, 0)
	for k := from; k < from+scrapes; k++ {
		for ti := range fams {
			f := &fams[ti]
			for i := range f.Samples {
				f.Samples[i].Value = next(i)
			}
			st.Append(&Snapshot{Target: fmt.Sprint("t", ti), Time: at.Add(time.Duration(k) * time.Second), Families: []Family{*f}})
		}
	}
}

func budgetFamilies(targets, per int) []Family {
	fams := make([]Family, targets)
	for ti := range fams {
		fams[ti] = Family{Name: "c_total", Type: Counter, Samples: make([]Sample, per)}
		for i := range fams[ti].Samples {
			fams[ti].Samples[i].Labels = LabelsFromPairs("i", fmt.Sprint(i))
		}
	}
	return fams
}

// A store with a byte budget caps its series at what the budget holds:
// at first at an incompressible series' cost (SeriesBytes), then, once
// its chunks are sealed, at what they measure. Counters that compress
// (increases within 16 of each other: a byte a value) are then taken
// again until the budget is spent, and the store's live heap stays
// within it over the whole history.
func TestStoreBudgetFollowsMeasuredCost(t *testing.T) {
	const budget = 1 << 20
	const targets, per = 10, 100 // 1,000 series offered, more than the budget holds
	hist := DefaultStoreConfig.History
	// The cap before anything is sealed: the budget, less what the
	// targets known so far and the series refused cost, less its margin,
	// over SeriesBytes. The first target's scrape sees one target and
	// none refused; the last all ten and at most all the others refused.
	capOf := func(left int64) int { left -= left / budgetMargin; return int(left / SeriesBytes(hist)) }
	prior := capOf(budget - targets*targetBytes(hist) - targets*per*refusedBytes) // 198
	priorFirst := capOf(budget - 1*targetBytes(hist))                             // 226
	// The encoding's bound (TestStoreHeapPerSeries) is 1,738 B a series:
	// the chunk written open as float32, a byte a value, a sealed chunk's
	// first value raw and its column offset, an eighth more for Go's size
	// classes; 2.56 times less than SeriesBytes. The measure gives the
	// bytes of absent values (the columns a tile set keeps for series not
	// taken) to the values present, so only a factor of 2 is claimed.
	const factor = 2
	rng := rand.New(rand.NewPCG(1, 2))
	fams := budgetFamilies(targets, per)
	vals := make([]float64, per)
	counter := func(i int) float64 { vals[i] += float64(i%7 + rng.IntN(16)); return vals[i] }

	before := liveHeap()
	st := NewStore(StoreConfig{History: hist, MaxSeriesPerTarget: per, MaxBytes: budget})
	budgetFleet(st, fams, 0, 1, counter)
	if got := st.Totals(); got.MaxSeries < prior || got.MaxSeries > got.Series || got.Series > priorFirst {
		t.Fatalf("after the first scrape: %+v, want a cap of %d or more and at most %d held (the budget over SeriesBytes)", got, prior, priorFirst)
	}
	budgetFleet(st, fams, 1, chunkSlots, counter) // the first chunk sealed at the last of these
	first := st.Totals()
	if first.MaxSeries <= prior {
		t.Fatalf("after the first chunk was sealed the cap is %d, want more than the unmeasured %d", first.MaxSeries, prior)
	}
	budgetFleet(st, fams, 1+chunkSlots, 2*hist, counter) // the history twice over
	got := st.Totals()
	if got.Series < factor*prior {
		t.Errorf("after two histories: %+v, want at least %d held (%d times the unmeasured cap)", got, factor*prior, factor)
	}
	heap := liveHeap() - before
	t.Logf("%d series in a budget of %d B: %d B of live heap, %.0f B a series (cap %d at first, %d after the first seal)",
		got.Series, budget, heap, float64(heap)/float64(got.Series), prior, first.MaxSeries)
	if heap > budget {
		t.Errorf("the store's live heap is %d B, over its budget of %d", heap, budget)
	}
	runtime.KeepAlive(st)
}

// Values that compress less than those measured when the series were
// taken lower the cap below the series held: none is dropped, no new
// one is taken.
func TestStoreBudgetRefusesWhenValuesStopCompressing(t *testing.T) {
	const budget = 1 << 20
	const targets, per = 10, 200 // 2,000 series offered
	hist := DefaultStoreConfig.History
	fams := budgetFamilies(targets, per)
	vals := make([]float64, per)
	rng := rand.New(rand.NewPCG(5, 6))
	counter := func(i int) float64 { vals[i]++; return vals[i] }
	st := NewStore(StoreConfig{History: hist, MaxSeriesPerTarget: per, MaxBytes: budget})
	budgetFleet(st, fams, 0, hist, counter)
	held, capBefore := st.Totals().Series, st.Totals().MaxSeries
	noise := func(i int) float64 { return float64(math.Float32frombits(rng.Uint32() & 0x3f7fffff)) }
	budgetFleet(st, fams, hist, hist, noise)
	got := st.Totals()
	t.Logf("%d held at a cap of %d; after a history of noise: %+v", held, capBefore, got)
	// Noise costs what SeriesBytes assumes (4 B a value) or a little less
	// (the open chunk and a header instead of an eighth for size classes).
	if floor := int((budget - targets*targetBytes(hist)) / SeriesBytes(hist)); got.MaxSeries < floor-floor/8 || got.MaxSeries >= held {
		t.Errorf("after a history of noise: cap %d, want below the %d held and near %d", got.MaxSeries, held, floor)
	}
	if got.Series != held || got.Dropped != targets*per-held {
		t.Errorf("after a history of noise: %+v, want the %d held kept and the rest refused", got, held)
	}
}
