package model

// storeIter is flatIter for Append's loop: the same flat series in the
// same order, but the next bucket or quantile of the sample in hand only
// changes r's bound and value, and the next sample of a counter or gauge
// family r's sample and value, instead of a whole flatRef written (four
// pointers, each behind the write barrier's check) per flat series:
// flatIter.next was a third of Append's time on histograms. A copy of
// flatIter's walk by design (so that next inlines): a change to one is a
// change to the other (TestStoreIterEqualsFlatIter).
type storeIter struct {
	fams []Family
	i, j int // family, sample
	k    int // the sample's next component: bucket or quantile, then _count, _sum
	r    flatRef
	// bk is the buckets of the histogram sample r is a bucket of (nil
	// otherwise): next's case small enough to inline in Append's loop.
	bk []Bucket
}

// next moves to the next flat series, false after the last.
func (it *storeIter) next() bool {
	if k := it.k; k < len(it.bk) {
		b := &it.bk[k]
		it.r.extraVal, it.r.value = b.UpperBound, b.Count
		it.k = k + 1
		return true
	}
	return it.step()
}

// step is next past a histogram sample's buckets.
func (it *storeIter) step() bool {
	it.bk = nil
	if it.k > 0 { // inside a histogram's or summary's sample: r holds its family and sample
		sm := it.r.sample
		if it.r.fam.Type == Histogram {
			if it.k < len(sm.Buckets) {
				b := &sm.Buckets[it.k]
				it.r.extraVal, it.r.value = b.UpperBound, b.Count
				it.k++
				return true
			}
		} else if it.k < len(sm.Quantiles) {
			q := &sm.Quantiles[it.k]
			it.r.extraVal, it.r.value = q.Quantile, q.Value
			it.k++
			return true
		}
	}
	for it.i < len(it.fams) {
		f := &it.fams[it.i]
		if it.j >= len(f.Samples) {
			it.i, it.j, it.k = it.i+1, 0, 0
			continue
		}
		sm := &f.Samples[it.j]
		k := it.k
		var n int        // buckets or quantiles before _count
		var last float64 // the last one's bound: _count and _sum keep it as extraVal, as flatIter does
		switch f.Type {
		case Histogram:
			if n = len(sm.Buckets); k < n {
				b := sm.Buckets[k]
				it.r = flatRef{fam: f, sample: sm, suffix: "_bucket", sfx: 1, extra: "le", extraVal: b.UpperBound, value: b.Count}
				it.k++
				it.bk = sm.Buckets
				return true
			}
			if n > 0 {
				last = sm.Buckets[n-1].UpperBound
			}
		case Summary:
			if n = len(sm.Quantiles); k < n {
				q := sm.Quantiles[k]
				it.r = flatRef{fam: f, sample: sm, extra: "quantile", extraVal: q.Quantile, value: q.Value}
				it.k++
				return true
			}
			if n > 0 {
				last = sm.Quantiles[n-1].Quantile
			}
		default:
			if it.r.fam == f { // the family's sample before: suffix and extra are already none
				it.r.sample, it.r.value = sm, sm.Value
			} else {
				it.r = flatRef{fam: f, sample: sm, value: sm.Value}
			}
			it.j++
			return true
		}
		if k == n {
			it.r = flatRef{fam: f, sample: sm, suffix: "_count", sfx: 2, extraVal: last, value: sm.Count}
			it.k++
			return true
		}
		it.r.suffix, it.r.sfx, it.r.value = "_sum", 3, sm.Sum // _count's family, sample and extraVal
		it.j, it.k = it.j+1, 0
		return true
	}
	return false
}
