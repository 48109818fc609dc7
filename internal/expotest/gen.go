// Package expotest holds what the exposition parser's tests and the
// scraper's tests share: generated bodies shaped like real emitters' and the
// fixtures in expo/testdata.
package expotest

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// envoyBounds are Envoy's default histogram bucket bounds (milliseconds).
var envoyBounds = []string{"0.5", "1", "5", "10", "25", "50", "100", "250", "500", "1000",
	"2500", "5000", "10000", "30000", "60000", "300000", "600000", "1800000", "3600000", "+Inf"}

// EnvoySeriesPerCluster is the flat series one generated cluster exposes:
// four counters, two gauges and one histogram (20 buckets, _sum, _count).
var EnvoySeriesPerCluster = 4 + 2 + len(envoyBounds) + 2

// GenEnvoy generates an exposition shaped like Envoy's cluster stats with
// at least series flat series, in the Prometheus text format or, with
// openMetrics, in OpenMetrics 1.0. It returns the body and the exact
// number of flat series.
func GenEnvoy(series int, openMetrics bool) ([]byte, int) {
	return envoy(series, -1, openMetrics)
}

// EnvoyAt is GenEnvoy's body at scrape step (0, 1, ...): its counters grow
// by a per-series rate with a deterministic jitter, never going down, so a
// recorder and a compressor see increments that vary as real traffic does.
func EnvoyAt(series, step int) ([]byte, int) { return envoy(series, step, false) }

// envoy writes the Envoy body; step < 0 keeps every value at its base.
func envoy(series, step int, openMetrics bool) ([]byte, int) {
	clusters := (series + EnvoySeriesPerCluster - 1) / EnvoySeriesPerCluster
	value := func(base, seed, rate int) int {
		if step < 0 {
			return base
		}
		return Grow(base, seed, step, rate)
	}
	var b bytes.Buffer
	b.Grow(clusters * 2600)
	counter := func(name string, mult int) {
		if openMetrics {
			b.WriteString("# TYPE " + name + " counter\n")
		} else {
			b.WriteString("# TYPE " + name + "_total counter\n")
		}
		for c := 0; c < clusters; c++ {
			b.WriteString(name + `_total{envoy_cluster_name="svc_` + strconv.Itoa(c) + `"} `)
			b.WriteString(strconv.Itoa(value(c*mult+7, c*31+mult, (c%5)*mult/10+1)))
			b.WriteByte('\n')
		}
	}
	gauge := func(name string) {
		b.WriteString("# TYPE " + name + " gauge\n")
		for c := 0; c < clusters; c++ {
			b.WriteString(name + `{envoy_cluster_name="svc_` + strconv.Itoa(c) + `"} `)
			b.WriteString(strconv.Itoa((c + max(step, 0)/30) % 17))
			b.WriteByte('\n')
		}
	}
	counter("envoy_cluster_upstream_rq", 1000)
	counter("envoy_cluster_upstream_rq_retry", 10)
	counter("envoy_cluster_upstream_rq_retry_success", 7)
	counter("envoy_cluster_upstream_cx", 3)
	gauge("envoy_cluster_upstream_rq_active")
	gauge("envoy_cluster_membership_healthy")
	const h = "envoy_cluster_upstream_rq_time"
	b.WriteString("# TYPE " + h + " histogram\n")
	for c := 0; c < clusters; c++ {
		lbl := `{envoy_cluster_name="svc_` + strconv.Itoa(c) + `"`
		total := value(c*1000+7, c, (c%5)*100+1)
		for i, le := range envoyBounds {
			b.WriteString(h + "_bucket" + lbl + `,le="` + le + `"} `)
			b.WriteString(strconv.Itoa(total * (i + 1) / len(envoyBounds)))
			b.WriteByte('\n')
		}
		b.WriteString(h + "_sum" + lbl + "} " + strconv.Itoa(total*42) + ".5\n")
		b.WriteString(h + "_count" + lbl + "} " + strconv.Itoa(total) + "\n")
	}
	if openMetrics {
		b.WriteString("# EOF\n")
	}
	return b.Bytes(), clusters * EnvoySeriesPerCluster
}

// Grow is a counter at scrape step: base, plus rate per step on average
// with a deterministic jitter below rate, so it never goes down.
func Grow(base, series, step, rate int) int {
	x := uint64(series)*0x9e3779b97f4a7c15 ^ uint64(step)*0xbf58476d1ce4e5b9
	x ^= x >> 31
	x *= 0x94d049bb133111eb
	x ^= x >> 29
	return base + step*rate + int(x%uint64(rate))
}

// CTText is the Prometheus text format's content type.
const CTText = "text/plain; version=0.0.4; charset=utf-8"

// Only returns a family filter that keeps the named families.
func Only(names ...string) func(string) bool {
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return func(n string) bool { return set[n] }
}

// Fixture reads expo/testdata/name, failing t when it cannot.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "expo", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ReportPerSeries adds series/s and B/series (from the heap's total
// allocation since before) to b's results.
func ReportPerSeries(b *testing.B, series int, before *runtime.MemStats) {
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	n := float64(b.N) * float64(series)
	b.ReportMetric(n/b.Elapsed().Seconds(), "series/s")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/series")
}
