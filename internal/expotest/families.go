package expotest

import (
	"unsafe"

	"github.com/retrytop/retrytop/model"
)

// CloneFamilies copies fams sharing no slice with them.
func CloneFamilies(fams []model.Family) []model.Family {
	out := make([]model.Family, len(fams))
	for i, f := range fams {
		out[i] = f
		out[i].Samples = make([]model.Sample, len(f.Samples))
		for j, s := range f.Samples {
			s.Labels = append(model.Labels(nil), s.Labels...)
			s.Buckets = append([]model.Bucket(nil), s.Buckets...)
			s.Quantiles = append([]model.QuantileValue(nil), s.Quantiles...)
			out[i].Samples[j] = s
		}
	}
	return out
}

// SamplesAt is where fams' first non-empty samples array starts (nil for
// none): two parses or translations cut from one array start at the same
// place.
func SamplesAt(fams []model.Family) unsafe.Pointer {
	for i := range fams {
		if cap(fams[i].Samples) > 0 {
			return unsafe.Pointer(unsafe.SliceData(fams[i].Samples))
		}
	}
	return nil
}
