package sim

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestArrivalsDue(t *testing.T) {
	a := Arrivals{Start: t0, Rate: 50}
	for _, c := range []struct {
		at   time.Duration
		want int64
	}{
		{-time.Millisecond, 0},
		{0, 1},
		{19 * time.Millisecond, 1},
		{20 * time.Millisecond, 2},
		{999 * time.Millisecond, 50},
		{time.Second, 51},
		{10 * time.Second, 501},
	} {
		if got := a.Due(t0.Add(c.at)); got != c.want {
			t.Errorf("Due(+%v) = %d, want %d", c.at, got, c.want)
		}
	}
	if got := a.Before(t0.Add(time.Second)); got != 50 {
		t.Errorf("Before(+1s) = %d, want 50 (50/s for one second)", got)
	}
	if got := a.Before(t0); got != 0 {
		t.Errorf("Before(start) = %d, want 0", got)
	}
	if got := a.Lag(10, t0.Add(230*time.Millisecond)); got != 30*time.Millisecond {
		t.Errorf("Lag(10, +230ms) = %v, want 30ms", got)
	}
	if got := a.Lag(10, t0.Add(100*time.Millisecond)); got != 0 {
		t.Errorf("Lag when early = %v, want 0", got)
	}
}

// Due and At must agree for awkward rates too: At(Due(now)-1) <= now <
// At(Due(now)) at every instant.
func TestArrivalsDueAtConsistent(t *testing.T) {
	for _, rate := range []float64{3, 7, 49.9, 50, 333.3} {
		a := Arrivals{Start: t0, Rate: rate}
		for ns := int64(0); ns < int64(3*time.Second); ns += 7_777_777 {
			now := t0.Add(time.Duration(ns))
			n := a.Due(now)
			if n < 1 || a.At(n-1).After(now) || !a.At(n).After(now) {
				t.Fatalf("rate %v at +%v: Due=%d, At(n-1)=%v At(n)=%v", rate, time.Duration(ns), n,
					a.At(n-1).Sub(t0), a.At(n).Sub(t0))
			}
		}
	}
}
