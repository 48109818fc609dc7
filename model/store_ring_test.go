package model

import (
	"math"
	"testing"
)

// TestRingNeverRounds: values are kept as float32 only while exact; the
// first inexact one widens the ring, and every value reads back bit for
// bit, absent scrapes staying gaps.
func TestRingNeverRounds(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, c := range []struct {
		name   string
		values []float64 // NaN: the series absent from that scrape
		wide   bool      // the ring ends as float64
	}{
		{"small counts stay narrow", []float64{0, 1, 2, math.NaN(), 7, 1 << 24}, false},
		{"halves and infinities are exact", []float64{0.5, 2.25, math.Inf(+1), math.Inf(-1), negZero}, false},
		{"2^24+1 widens", []float64{1, 2, 1<<24 + 1, 3}, true},
		{"0.1 widens", []float64{1, math.NaN(), 0.1, 0.2}, true},
		{"beyond float32's range widens", []float64{1, 1e300, -1e-300}, true},
	} {
		st := NewStore(StoreConfig{History: 8})
		var want []Point
		for i, v := range c.values {
			fams := []Family{gaugeFamily("g", 1)}
			if math.IsNaN(v) {
				fams = []Family{gaugeFamily("other", 1)}
			} else {
				fams[0].Samples[0].Value = v
				want = append(want, Point{T: int64(i+1) * 1000, V: v})
			}
			st.Append(snap("t", int64(i+1), fams...))
		}
		got := st.Select("t", "g", nil)
		if len(got) != 1 || len(got[0].Points) != len(want) {
			t.Fatalf("%s: got %v, want %v", c.name, got, want)
		}
		for i, p := range got[0].Points {
			if p.T != want[i].T || math.Float64bits(p.V) != math.Float64bits(want[i].V) {
				t.Errorf("%s: point %d = %v (%x), want %v (%x)", c.name, i, p, math.Float64bits(p.V), want[i], math.Float64bits(want[i].V))
			}
		}
		st.mu.RLock()
		wide := st.targets["t"].byName["g"][0].ring.wide != nil
		st.mu.RUnlock()
		if wide != c.wide {
			t.Errorf("%s: ring float64 %v, want %v", c.name, wide, c.wide)
		}
	}
}

func gaugeFamily(name string, v float64) Family {
	return Family{Name: name, Type: Gauge, Samples: []Sample{{Value: v}}}
}
