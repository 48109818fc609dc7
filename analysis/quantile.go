package analysis

import (
	"math"
	"slices"

	"github.com/retrytop/retrytop/model"
)

// precisionTolerance is the relative difference between neighbouring bucket
// counts that is treated as floating-point noise, as in PromQL.
const precisionTolerance = 1e-12

// HistogramQuantile returns the q-quantile of a classic histogram with
// PromQL's histogram_quantile semantics. buckets are cumulative and need not
// be sorted; buckets with the same upper bound are added together.
//
//   - The value is interpolated linearly inside the bucket the rank falls
//     in. The first bucket's lower bound is 0 when its upper bound is
//     positive; when its upper bound is <= 0 that bound is returned.
//   - A rank in the +Inf bucket returns the upper bound of the second-highest
//     bucket.
//   - Counts that decrease with a growing bound (torn or rate-computed
//     data) are raised to the running maximum, and relative differences up
//     to 1e-12 are treated as equal.
//   - q < 0 gives -Inf and q > 1 gives +Inf (PromQL checks q first, so this
//     holds whenever any bucket is given).
//
// ok is false wherever PromQL yields NaN: no buckets, q is NaN, no +Inf
// bucket, fewer than two distinct bounds, or zero observations. A histogram
// without observations has no quantile; it is absent, never zero.
func HistogramQuantile(q float64, buckets []model.Bucket) (float64, bool) {
	if len(buckets) == 0 || math.IsNaN(q) {
		return 0, false
	}
	if q < 0 {
		return math.Inf(-1), true
	}
	if q > 1 {
		return math.Inf(+1), true
	}
	var buf [32]model.Bucket
	bs, ok := cumulative(buf[:0], buckets)
	if !ok {
		return 0, false
	}
	return quantileOf(q, bs)
}

// cumulative is buckets as HistogramQuantile reads them, appended to dst:
// sorted by bound, equal bounds added together, counts made monotonic.
// ok is false when no quantile exists: no buckets, no +Inf bucket, fewer
// than two distinct bounds, or zero observations.
func cumulative(dst, buckets []model.Bucket) ([]model.Bucket, bool) {
	if len(buckets) == 0 {
		return nil, false
	}
	bs := append(dst, buckets...)
	if !slices.IsSortedFunc(bs, byBound) {
		slices.SortFunc(bs, byBound)
	}
	if !math.IsInf(bs[len(bs)-1].UpperBound, +1) {
		return nil, false
	}
	bs = coalesce(bs)
	monotonic(bs)
	if len(bs) < 2 || !(bs[len(bs)-1].Count > 0) {
		return nil, false
	}
	return bs, true
}

// quantileOf is the q-quantile (0 <= q <= 1) of buckets cumulative made.
func quantileOf(q float64, bs []model.Bucket) (float64, bool) {
	rank := q * bs[len(bs)-1].Count
	b := len(bs) - 1
	for i := range bs[:len(bs)-1] {
		if bs[i].Count >= rank {
			b = i
			break
		}
	}
	if b == len(bs)-1 {
		return bs[len(bs)-2].UpperBound, true
	}
	if b == 0 && bs[0].UpperBound <= 0 {
		return bs[0].UpperBound, true
	}
	var (
		start float64
		end   = bs[b].UpperBound
		count = bs[b].Count
	)
	if b > 0 {
		start = bs[b-1].UpperBound
		count -= bs[b-1].Count
		rank -= bs[b-1].Count
	}
	v := start + (end-start)*(rank/count)
	if math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// Quantiles returns p50, p90 and p99 of a classic histogram; each is absent
// when the histogram has no observations.
func Quantiles(buckets []model.Bucket) model.Quantiles {
	var buf [32]model.Bucket
	bs, ok := cumulative(buf[:0], buckets)
	if !ok {
		return model.Quantiles{}
	}
	return model.Quantiles{
		P50: quantileValue(0.5, bs),
		P90: quantileValue(0.9, bs),
		P99: quantileValue(0.99, bs),
	}
}

// quantileValue is quantileOf as a Value.
func quantileValue(q float64, bs []model.Bucket) model.Value {
	v, ok := quantileOf(q, bs)
	if !ok {
		return model.Absent
	}
	return model.Some(v)
}

// quantile is HistogramQuantile as a Value.
func quantile(q float64, buckets []model.Bucket) model.Value {
	v, ok := HistogramQuantile(q, buckets)
	if !ok {
		return model.Absent
	}
	return model.Some(v)
}

func byBound(a, b model.Bucket) int {
	switch {
	case a.UpperBound < b.UpperBound:
		return -1
	case a.UpperBound > b.UpperBound:
		return +1
	}
	return 0
}

// coalesce adds up sorted buckets that share an upper bound, in place.
func coalesce(bs []model.Bucket) []model.Bucket {
	i := 0
	for _, b := range bs[1:] {
		if b.UpperBound == bs[i].UpperBound {
			bs[i].Count += b.Count
			continue
		}
		i++
		bs[i] = b
	}
	return bs[:i+1]
}

// monotonic removes float noise and decreases between neighbouring buckets,
// in place: a count within precisionTolerance of the running maximum, or
// below it, is set to it.
func monotonic(bs []model.Bucket) {
	prev := bs[0].Count
	for i := 1; i < len(bs); i++ {
		cur := bs[i].Count
		switch {
		case cur == prev:
		case math.Abs(cur-prev) <= precisionTolerance*math.Max(math.Abs(cur), math.Abs(prev)):
			bs[i].Count = prev
		case cur < prev:
			bs[i].Count = prev
		default:
			prev = cur
		}
	}
}
