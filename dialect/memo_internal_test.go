package dialect

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// churnSnapshot is scrape k of an Envoy target whose clusters come and go:
// each cluster present in scrape k has the cluster stats (per-try timeouts
// only while perTry), a latency histogram and a downstream series; some
// are named the Istio way (outbound|port||host), some carry a raw label
// named like a contract label, one has no cluster label at all, and a TCP
// cluster has requests but nothing completed. labels hands out the label
// slices: it reuses the previous scrapes' memory in place, as a parser
// with a buffer may, so that a cache keeping the caller's slices would
// read the wrong labels.
func churnSnapshot(k int, present []bool, perTry bool, labels func(pairs ...string) model.Labels) *model.Snapshot {
	counter := func(name string) model.Family { return model.Family{Name: name, Type: model.Counter} }
	fams := []model.Family{counter(enCompleted), counter(enTotal), counter(enRetry), counter(enRetrySuccess), counter(enPendingOverflow),
		{Name: enActive, Type: model.Gauge}, {Name: enTime, Type: model.Histogram}, counter(enDownTotal)}
	if perTry {
		fams = append(fams, counter(enPerTryTimeout))
	}
	add := func(name string, ls model.Labels, v float64) {
		for i := range fams {
			if fams[i].Name == name {
				fams[i].Samples = append(fams[i].Samples, model.Sample{Labels: ls, Value: v})
			}
		}
	}
	for c, on := range present {
		if !on {
			continue
		}
		var ls func() model.Labels
		switch c % 4 {
		case 0:
			ls = func() model.Labels { return labels(enClusterLabel, fmt.Sprintf("svc_%d", c)) }
		case 1:
			ls = func() model.Labels { return labels(istioClusterLabel, fmt.Sprintf("outbound|80||svc-%d.ns.svc", c)) }
		case 2:
			ls = func() model.Labels {
				return labels("dependency", "raw", enClusterLabel, fmt.Sprintf("svc_%d", c), "le", "x")
			}
		default:
			ls = func() model.Labels { return labels("zone", "a") } // no cluster: left out
		}
		n := float64(k * (c + 1))
		completed := n
		if c == 5 {
			completed = 0 // a TCP cluster
		}
		add(enCompleted, ls(), completed)
		add(enTotal, ls(), n*1.5)
		add(enRetry, ls(), n/2)
		add(enRetrySuccess, ls(), n/4)
		add(enPendingOverflow, ls(), float64(k%3))
		add(enActive, ls(), float64(c))
		add(enPerTryTimeout, ls(), n/10)
		add(enDownTotal, labels(enHCMLabel, fmt.Sprintf("ingress_%d", c%3)), n)
		for i := range fams {
			if fams[i].Name == enTime {
				fams[i].Samples = append(fams[i].Samples, model.Sample{Labels: ls(), Count: n, Sum: n * 12.5,
					Buckets: []model.Bucket{{UpperBound: 5, Count: n / 2}, {UpperBound: 50, Count: n * 0.9}, {UpperBound: 1e9, Count: n}}})
			}
		}
	}
	return &model.Snapshot{Target: "envoy", Time: time.Unix(1_700_000_000+int64(k), 0), Families: fams}
}

// TestEnvoyCachesEqualUncached: the Envoy dialect with its positional
// caches of cluster labels and output series translates every scrape as one computing every
// call does, over 400 scrapes with clusters appearing and leaving, one
// cluster changing places, per-try timeouts coming and going, and label
// memory reused between scrapes; and the cache answers most calls.
func TestEnvoyCachesEqualUncached(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 2))
	cached, fresh := &envoy{}, &envoy{}
	fresh.g.clusters.off, fresh.g.slots.off = true, true
	present := make([]bool, 24)
	for i := range present {
		present[i] = i%3 != 2
	}
	var pool []model.Labels
	used := 0
	labels := func(pairs ...string) model.Labels {
		if used < len(pool) && cap(pool[used]) >= len(pairs)/2 {
			ls := pool[used][:0] // the memory of an earlier scrape's series
			for i := 0; i+1 < len(pairs); i += 2 {
				ls = append(ls, model.Label{Name: pairs[i], Value: pairs[i+1]})
			}
			ls.Sort()
			pool[used] = ls
			used++
			return ls
		}
		ls := model.LabelsFromPairs(pairs...)
		ls.Sort()
		pool = append(pool, ls)
		used++
		return ls
	}
	calls, slots := 0, 0
	for k := range 400 {
		churn(k, present, rng)
		if k%5 == 0 {
			used = rng.IntN(len(pool) + 1) // shift which memory which series reuses
		}
		snap := churnSnapshot(k, present, k%100 < 70, labels)
		used = 0
		got, want := cached.Translate(snap), fresh.Translate(snap)
		calls += len(cached.g.clusters.cur)
		slots += len(cached.g.slots.cur)
		if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
			t.Fatalf("scrape %d: cached translation differs\n got %s\nwant %s", k, g, w)
		}
	}
	if h := cached.g.clusters.hits; h < calls*3/4 || h == calls {
		t.Errorf("the labels' cache answered %d of %d calls: want most, not all (clusters changed)", h, calls)
	}
	if h := cached.g.slots.hits; h < slots*3/4 || h == slots {
		t.Errorf("the slots' cache answered %d of %d calls: want most, not all (clusters changed)", h, slots)
	}
}

// churn changes which clusters scrape k has, and where: one leaves or
// comes back every 37 scrapes, two swap places every 53.
func churn(k int, present []bool, rng *rand.Rand) {
	switch {
	case k%37 == 0:
		i := rng.IntN(len(present))
		present[i] = !present[i]
	case k%53 == 0:
		i, j := rng.IntN(len(present)), rng.IntN(len(present))
		present[i], present[j] = present[j], present[i]
	}
}

// sortedLabels is churnSnapshot's labels, made afresh each call.
func sortedLabels(pairs ...string) model.Labels {
	ls := model.LabelsFromPairs(pairs...)
	ls.Sort()
	return ls
}

// BenchmarkEnvoyTranslate translates a steady 72-cluster Envoy scrape with
// its positional caches (cluster labels, output series) and, as the anchor in the same
// run, without it: compare the two ns/op.
//
//	go test ./dialect -run '^$' -bench EnvoyTranslate -benchmem
func BenchmarkEnvoyTranslate(b *testing.B) {
	present := make([]bool, 72)
	for i := range present {
		present[i] = i%4 != 3
	}
	snaps := make([]*model.Snapshot, 16)
	for k := range snaps {
		snaps[k] = churnSnapshot(k, present, true, sortedLabels)
	}
	for _, off := range []bool{true, false} {
		b.Run(map[bool]string{true: "uncached", false: "cached"}[off], func(b *testing.B) {
			e := &envoy{}
			e.g.clusters.off, e.g.slots.off = off, off
			k := 0
			for b.Loop() {
				e.Translate(snaps[k%len(snaps)])
				k++
			}
		})
	}
}
