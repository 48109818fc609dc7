package model

import "unsafe"

// FamilyArrays are the arrays a parse or a translation cut its families,
// samples, buckets and quantiles from (any may be nil), kept to be cut
// from again once nothing reads what was cut.
type FamilyArrays struct {
	Families  []Family
	Samples   []Sample
	Buckets   []Bucket
	Quantiles []QuantileValue
}

// UsedBy reports whether any of fams' memory lies in a's arrays: fams
// itself, or one of its families' samples, or one of their buckets or
// quantiles. Memory a reports unused can be written without changing
// fams.
func (a FamilyArrays) UsedBy(fams []Family) bool {
	if len(fams) > 0 && within(&fams[0], a.Families) {
		return true
	}
	for i := range fams {
		ss := fams[i].Samples
		if cap(ss) == 0 {
			continue
		}
		if within(unsafe.SliceData(ss), a.Samples) {
			return true
		}
		for j := range ss {
			if b := ss[j].Buckets; cap(b) > 0 && within(unsafe.SliceData(b), a.Buckets) {
				return true
			}
			if q := ss[j].Quantiles; cap(q) > 0 && within(unsafe.SliceData(q), a.Quantiles) {
				return true
			}
		}
	}
	return false
}

// within reports whether p points into arr's array (its capacity).
func within[T any](p *T, arr []T) bool {
	if cap(arr) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(arr)))
	at := uintptr(unsafe.Pointer(p))
	return at >= start && at < start+uintptr(cap(arr))*unsafe.Sizeof(*p)
}
