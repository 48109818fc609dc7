package model

import "testing"

// TestFamilyArraysUsedBy: families cut from the arrays use them, through
// the families array, a samples array, a bucket or a quantile array, at
// the start or past it; copies and other arrays do not.
func TestFamilyArraysUsedBy(t *testing.T) {
	a := FamilyArrays{
		Families:  make([]Family, 4),
		Samples:   make([]Sample, 6),
		Buckets:   make([]Bucket, 5),
		Quantiles: make([]QuantileValue, 3),
	}
	own := func(s []Sample) []Family { return []Family{{Name: "x", Samples: s}} }
	cases := []struct {
		name string
		fams []Family
		want bool
	}{
		{"nothing", nil, false},
		{"the families array", a.Families[:2], true},
		{"the families array, past its start", a.Families[3:4], true},
		{"a copy of the families", append([]Family(nil), a.Families[:2]...), false},
		{"samples past the start", own(a.Samples[4:6]), true},
		{"a copy of the samples", own(append([]Sample(nil), a.Samples[:2]...)), false},
		{"empty samples at the array's end", own(a.Samples[6:]), false},
		{"a bucket array", own([]Sample{{Buckets: a.Buckets[2:4]}}), true},
		{"the last bucket", own([]Sample{{Buckets: a.Buckets[4:5]}}), true},
		{"a quantile array", own([]Sample{{Quantiles: a.Quantiles[1:2]}}), true},
		{"other buckets", own([]Sample{{Buckets: make([]Bucket, 2)}}), false},
	}
	for _, c := range cases {
		if got := a.UsedBy(c.fams); got != c.want {
			t.Errorf("%s: used %v, want %v", c.name, got, c.want)
		}
	}
	// Within the capacity, past the length: an array kept to be cut from
	// again holds all of it.
	spare := make([]Sample, 6)
	if !(FamilyArrays{Samples: spare[:2]}).UsedBy(own(spare[4:6])) {
		t.Error("samples past the arrays' length, within their capacity: not used")
	}
	if (FamilyArrays{}).UsedBy(own(make([]Sample, 2))) {
		t.Error("no arrays, yet used")
	}
}
