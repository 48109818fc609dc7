package analysis

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/retrytop/retrytop/model"
)

// distributeBySearch is distribute finding each pair's first bin by a
// binary search, as it did before it walked from the last pair's: the
// reference TestDistributeAsSearch holds it to.
func (acc *wholeSeries) distributeBySearch(pts []model.Point, edges []binEdge, upTo int64) {
	if !acc.started {
		acc.cur, acc.started = -1<<63, true
	}
	for k := 1; k < len(pts); k++ {
		prev, cur := pts[k-1], pts[k]
		if cur.T <= acc.cur || cur.T <= prev.T {
			continue
		}
		lo, hi := max(prev.T, acc.cur), min(cur.T, upTo)
		if hi <= lo {
			continue
		}
		i := sort.Search(len(edges), func(m int) bool { return edges[m].end > lo })
		for ; i < len(edges) && edges[i].start < hi; i++ {
			if v, in := segmentShare(prev, cur, max(edges[i].start, lo), min(edges[i].end, hi)); in {
				acc.set(i, acc.vals[i]+v, true)
			}
		}
	}
	if n := len(pts); n > 0 {
		acc.cur = max(acc.cur, min(pts[n-1].T, upTo))
	}
}

// TestDistributeAsSearch: distribute gives every bin what the binary
// search gave it, in two calls (a pair running past upTo taken up again),
// over points in order, with repeated times and with times going back.
func TestDistributeAsSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	edges := make([]binEdge, 40)
	for k := range edges {
		edges[k] = binEdge{int64(k) * 10_000, int64(k+1) * 10_000}
	}
	for round := range 500 {
		var pts []model.Point
		tm, v := int64(rng.IntN(20_000)), 0.0
		for range 60 {
			switch r := rng.IntN(10); {
			case r == 0 && round%2 == 1:
				tm -= int64(rng.IntN(15_000)) // back in time
			case r == 1:
				// the same time again
			default:
				tm += int64(rng.IntN(9_000))
			}
			v += float64(rng.IntN(50))
			pts = append(pts, model.Point{T: tm, V: v})
		}
		upTo := int64(150_000 + rng.IntN(100_000))
		var got, want wholeSeries
		got.grow(len(edges), 0)
		want.grow(len(edges), 0)
		got.distribute(pts[:30], edges, upTo)
		want.distributeBySearch(pts[:30], edges, upTo)
		got.distribute(pts[29:], edges, edges[len(edges)-1].end)
		want.distributeBySearch(pts[29:], edges, edges[len(edges)-1].end)
		for k := range edges {
			if got.has(k) != want.has(k) || got.vals[k] != want.vals[k] {
				t.Fatalf("round %d, bin %d: %v %v, want %v %v", round, k, got.vals[k], got.has(k), want.vals[k], want.has(k))
			}
		}
	}
}
