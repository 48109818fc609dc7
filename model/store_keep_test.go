package model

import (
	"fmt"
	"testing"
)

// TestStoreKeepSeries: a series absent for the whole retained history is
// forgotten (returning, it is new: seeded with a 0 at the scrape before),
// unless KeepSeries, where it stays known (not seeded, counted against the
// total cap) and only its values older than the history are gone.
func TestStoreKeepSeries(t *testing.T) {
	for _, keep := range []bool{false, true} {
		st := NewStore(StoreConfig{History: 3, KeepSeries: keep})
		st.Append(snap("a", 1, counter("c", 5), counter("d", 1)))
		for i := int64(2); i <= 5; i++ { // c absent for 4 scrapes, more than the history
			st.Append(snap("a", i, counter("d", float64(i))))
		}
		if got, want := st.Totals().Series, map[bool]int{false: 1, true: 2}[keep]; got != want {
			t.Errorf("keep=%v: %d series held after c's absence, want %d", keep, got, want)
		}
		res := st.Append(snap("a", 6, counter("c", 9), counter("d", 6)))
		c := st.Select("a", "c", nil)
		if len(c) != 1 {
			t.Fatalf("keep=%v: c series = %d", keep, len(c))
		}
		want, seeded := "[{5000 0} {6000 9}]", 1 // new again: 0 at the scrape before
		if keep {
			want, seeded = "[{6000 9}]", 0
		}
		if fmt.Sprint(c[0].Points) != want || res.Seeded != seeded {
			t.Errorf("keep=%v: c = %v seeded %d, want %s seeded %d", keep, c[0].Points, res.Seeded, want, seeded)
		}
	}
}
