package model

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestSelectSinceIntoEqualsSelectSince: the buffer's selections are
// SelectSince's, series by series, for every name and range start of a
// store with gaps, stale series and a widened ring, several selections
// to a Reset (each still equal after the ones after it), and appending
// to a selected series' points leaves the series after it as they were.
func TestSelectSinceIntoEqualsSelectSince(t *testing.T) {
	st := NewStore(StoreConfig{History: 25})
	rng := rand.New(rand.NewPCG(3, 4))
	var b SelectBuffer
	compared := 0
	for i := range 80 {
		s := selectWorld(rng, i)
		if i%3 == 0 {
			s.Families = append(s.Families, Family{Name: "g", Type: Gauge, Samples: []Sample{{Value: 0.1 * float64(i)}}})
		}
		st.Append(s)
		times := st.Times("t")
		sinces := []int64{math.MinInt64, times[len(times)/2], times[len(times)-1] + 1}
		b.Reset()
		type sel struct {
			got, want []Series
		}
		var held []sel
		for _, name := range append(st.Names("t"), "absent") {
			for _, since := range sinces {
				held = append(held, sel{st.SelectSinceInto(&b, "t", name, nil, since), st.SelectSince("t", name, nil, since)})
			}
		}
		for k, h := range held {
			if len(h.got) != len(h.want) {
				t.Fatalf("scrape %d, selection %d: %d series, want %d", i, k, len(h.got), len(h.want))
			}
			for j := range h.want {
				g, w := h.got[j], h.want[j]
				if len(g.Points) == 0 && len(w.Points) == 0 {
					g.Points, w.Points = nil, nil
				}
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("scrape %d, selection %d, series %d:\n got %+v\nwant %+v", i, k, j, g, w)
				}
				compared++
			}
		}
		// Appending to a series' points copies: every other series keeps
		// its own.
		var all []Series
		for _, h := range held {
			all = append(all, h.got...)
		}
		snap := make([][]Point, len(all))
		for k := range all {
			snap[k] = append([]Point(nil), all[k].Points...)
		}
		for k := range all {
			_ = append(all[k].Points, Point{T: -1, V: -1})
		}
		for k := range all {
			if !reflect.DeepEqual(all[k].Points, snap[k]) && len(snap[k]) > 0 {
				t.Fatalf("scrape %d: appending to a series wrote over series %d's points", i, k)
			}
		}
	}
	if compared < 1000 {
		t.Errorf("%d series compared", compared)
	}
}

// TestSelectBufferShrinks: a buffer whose selections stay far under its
// array for two periods of selectBufferPeriod Resets (the first may hold
// the large one) is cut to what they took; one they keep using stays.
func TestSelectBufferShrinks(t *testing.T) {
	st := NewStore(StoreConfig{History: 400})
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 300 {
		st.Append(selectWorld(rng, i))
	}
	times := st.Times("t")
	recent := times[len(times)-20]
	var b SelectBuffer
	selectAll := func(since int64) int {
		b.Reset()
		n := 0
		for _, name := range st.Names("t") {
			for _, s := range st.SelectSinceInto(&b, "t", name, nil, since) {
				n += len(s.Points)
			}
		}
		return n
	}
	whole := selectAll(math.MinInt64)
	big := cap(b.points)
	if big < whole {
		t.Fatalf("buffer of %d points after selecting %d", big, whole)
	}
	few := 0
	for range 2 * selectBufferPeriod {
		few = selectAll(recent)
	}
	if few > whole/4 {
		t.Fatalf("%d recent points of %d: the store's world is not what the test needs", few, whole)
	}
	if got, most := cap(b.points), few+few/8; got > 2*few+1 {
		t.Errorf("after %d selections of %d points the buffer holds %d (was %d), want about %d", 2*selectBufferPeriod, few, got, big, most)
	}
	for range 2 * selectBufferPeriod {
		selectAll(recent)
		selectAll(math.MinInt64)
	}
	if cap(b.points) < whole {
		t.Errorf("a buffer still selecting %d points shrank to %d", whole, cap(b.points))
	}
}
