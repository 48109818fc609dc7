package sim

import (
	"sync"
	"time"
)

// latencyHist records durations in 1 ms buckets up to latencyMax, so that
// quantiles are exact to the millisecond with fixed memory however long a
// run lasts.
type latencyHist struct {
	mu     sync.Mutex
	counts []int64 // counts[i]: durations in [i ms, i+1 ms); the last one is overflow
	n      int64
	sum    time.Duration
	max    time.Duration
}

const latencyMax = 10 * time.Second

func newLatencyHist() *latencyHist {
	return &latencyHist{counts: make([]int64, int(latencyMax/time.Millisecond)+1)}
}

func (h *latencyHist) observe(d time.Duration) {
	d = max(d, 0)
	i := min(int(d/time.Millisecond), len(h.counts)-1)
	h.mu.Lock()
	h.counts[i]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
	h.mu.Unlock()
}

// Latency summarises one class of durations. Quantiles are the upper edge
// of their 1 ms bucket (so never optimistic); all zero when Count is 0.
type Latency struct {
	Count         int64
	Mean          time.Duration
	P50, P90, P99 time.Duration
	Max           time.Duration
}

func (h *latencyHist) summary() Latency {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := Latency{Count: h.n, Max: h.max}
	if h.n == 0 {
		return l
	}
	l.Mean = h.sum / time.Duration(h.n)
	l.P50, l.P90, l.P99 = h.quantile(0.5), h.quantile(0.9), h.quantile(0.99)
	return l
}

// quantile is the smallest bucket upper edge below which at least q of the
// observations fall. Caller holds mu.
func (h *latencyHist) quantile(q float64) time.Duration {
	rank := int64(q*float64(h.n) + 0.999999999)
	rank = max(rank, 1)
	var cum int64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			if i == len(h.counts)-1 {
				return h.max
			}
			return min(time.Duration(i+1)*time.Millisecond, h.max)
		}
	}
	return h.max
}
