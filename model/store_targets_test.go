package model

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// hourShape is one scrape of a target of the 1-hour dump as analyze
// stores it (analyze, whole recording): 72 dependencies, each with a
// request-time histogram of 20 buckets, a counter and a gauge, one label a
// sample: 1,728 flat series, most of them buckets. Scrape i moves every
// count; the label values are interned as a parser's are.
func hourShape(target string, deps []string, bounds []float64, i int) *Snapshot {
	h := Family{Name: "envoy_cluster_upstream_rq_time", Type: Histogram, Samples: make([]Sample, len(deps))}
	c := Family{Name: "envoy_cluster_upstream_rq_total", Type: Counter, Samples: make([]Sample, len(deps))}
	g := Family{Name: "envoy_cluster_upstream_rq_active", Type: Gauge, Samples: make([]Sample, len(deps))}
	buckets := make([]Bucket, len(deps)*len(bounds))
	for d, dep := range deps {
		ls := Labels{{Name: "envoy_cluster_name", Value: dep}}
		bs := buckets[d*len(bounds) : (d+1)*len(bounds)]
		for k, ub := range bounds {
			bs[k] = Bucket{UpperBound: ub, Count: float64(i*(k+1) + d)}
		}
		n := bs[len(bs)-1].Count
		h.Samples[d] = Sample{Labels: ls, Buckets: bs, Count: n, Sum: n * 0.0123}
		c.Samples[d] = Sample{Labels: ls, Value: float64(i*7 + d)}
		g.Samples[d] = Sample{Labels: ls, Value: float64(i % 5)}
	}
	return &Snapshot{Target: target, Time: time.Unix(int64(1000+i), 0), Families: []Family{g, h, c}}
}

// BenchmarkStoreAppendTargets appends scrapes of 10 targets shaped as the
// 1-hour dump's (hourShape) round robin into a store of 336 scrapes (what
// WholeHistory gives the hour), each scrape built fresh as a parser's:
// the steady state of analyze FILE's loading goroutine, whose series do
// not stay in the core's cache from one scrape of a target to its next.
func BenchmarkStoreAppendTargets(b *testing.B) {
	deps := make([]string, 72)
	for d := range deps {
		deps[d] = fmt.Sprintf("svc_%d", d)
	}
	bounds := make([]float64, 20)
	for k := range bounds[:19] {
		bounds[k] = 0.5 * math.Pow(2, float64(k))
	}
	bounds[19] = math.Inf(1)
	const targets = 10
	st := NewStore(StoreConfig{History: 336, KeepSeries: true})
	names := make([]string, targets)
	for t := range names {
		names[t] = fmt.Sprintf("envoy-%c", 'a'+t)
	}
	// Snapshots built ahead (a ring of them per target), so that the
	// benchmark times the store, not the building.
	const ahead = 4
	snaps := make([][]*Snapshot, targets)
	for t := range snaps {
		for k := range ahead {
			snaps[t] = append(snaps[t], hourShape(names[t], deps, bounds, k))
		}
	}
	flat := snaps[0][0].SeriesCount()
	for i := range 400 { // past the history: the rings wrap
		for t := range targets {
			s := snaps[t][i%ahead]
			s.Time = time.Unix(int64(1000+i), 0)
			st.Append(s)
		}
	}
	i := 400
	b.ReportAllocs()
	for b.Loop() {
		for t := range targets {
			s := snaps[t][i%ahead]
			s.Time = time.Unix(int64(1000+i), 0)
			st.Append(s)
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(targets*flat), "ns/series")
}
