package collect

import (
	"bytes"
	"strconv"
)

// envoyBounds are Envoy's default histogram bucket bounds (milliseconds).
var envoyBounds = []string{"0.5", "1", "5", "10", "25", "50", "100", "250", "500", "1000",
	"2500", "5000", "10000", "30000", "60000", "300000", "600000", "1800000", "3600000", "+Inf"}

// envoySeriesPerCluster is the flat series one generated cluster exposes:
// four counters, two gauges and one histogram (20 buckets, _sum, _count).
var envoySeriesPerCluster = 4 + 2 + len(envoyBounds) + 2

// genEnvoy generates an exposition shaped like Envoy's cluster stats with
// at least series flat series, in the Prometheus text format or, with
// openMetrics, in OpenMetrics 1.0. It returns the body and the exact
// number of flat series.
func genEnvoy(series int, openMetrics bool) ([]byte, int) {
	clusters := (series + envoySeriesPerCluster - 1) / envoySeriesPerCluster
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
			b.WriteString(strconv.Itoa(c*mult + 7))
			b.WriteByte('\n')
		}
	}
	gauge := func(name string) {
		b.WriteString("# TYPE " + name + " gauge\n")
		for c := 0; c < clusters; c++ {
			b.WriteString(name + `{envoy_cluster_name="svc_` + strconv.Itoa(c) + `"} `)
			b.WriteString(strconv.Itoa(c % 17))
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
		total := c*1000 + 7
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
	return b.Bytes(), clusters * envoySeriesPerCluster
}
