package dump

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// genTarget simulates one target's exposition changing like real counters:
// an Envoy-shaped body (per cluster four counters, two gauges and a
// 19-bound histogram: 28 flat series) whose counters grow by a random
// number of requests per scrape, written as the Go client writes it.
type genTarget struct {
	rng      *rand.Rand
	clusters []genCluster
}

type genCluster struct {
	name                   string
	rate                   float64 // requests per scrape
	rq, retry, retryOK, cx float64
	active, healthy        float64
	buckets                [20]float64
	sum                    float64
}

var genBounds = []float64{0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000, 3600000}

// newGenTarget makes a target of about series flat series.
func newGenTarget(seed uint64, series int) *genTarget {
	g := &genTarget{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for i := 0; i < (series+27)/28; i++ {
		c := genCluster{name: fmt.Sprintf("svc_%d", i), rate: math.Exp(g.rng.Float64() * 5)}
		// Start from a long uptime, as a real process would.
		c.rq = math.Floor(c.rate * 3600 * (1 + g.rng.Float64()*24))
		c.retry = math.Floor(c.rq * 0.01)
		c.retryOK = math.Floor(c.retry * 0.8)
		c.cx = math.Floor(c.rq / 100)
		c.healthy = 3
		cum := 0.0
		for b := range genBounds {
			cum += c.rq * 0.1 * math.Exp(-float64(b)/4)
			c.buckets[b] = math.Floor(math.Min(cum, c.rq))
		}
		c.buckets[len(genBounds)] = c.rq
		c.sum = c.rq * 12.345
		g.clusters = append(g.clusters, c)
	}
	return g
}

// poisson draws a Poisson(l) count (normal approximation above 30).
func (g *genTarget) poisson(l float64) float64 {
	if l > 30 {
		return math.Max(0, math.Round(l+math.Sqrt(l)*g.rng.NormFloat64()))
	}
	n, p, t := 0.0, 1.0, math.Exp(-l)
	for {
		p *= g.rng.Float64()
		if p <= t {
			return n
		}
		n++
	}
}

// step advances one scrape interval.
func (g *genTarget) step() {
	for i := range g.clusters {
		c := &g.clusters[i]
		n := g.poisson(c.rate)
		c.rq += n
		r := g.poisson(n * 0.01)
		c.retry += r
		c.retryOK += math.Floor(r * 0.8)
		c.cx += g.poisson(n / 100)
		c.active = math.Floor(c.rate * (0.5 + g.rng.Float64()))
		for k := 0.0; k < n && k < 50; k++ {
			// Latency in ms, log-normal around 12 ms.
			lat := math.Exp(2.5 + g.rng.NormFloat64())
			b := 0
			for b < len(genBounds) && lat > genBounds[b] {
				b++
			}
			w := 1.0
			if n > 50 {
				w = n / 50
			}
			for j := b; j <= len(genBounds); j++ {
				c.buckets[j] += w
			}
			c.sum += lat * w
		}
		for j := range c.buckets {
			c.buckets[j] = math.Round(c.buckets[j])
		}
	}
}

func ff(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// body renders the exposition in the text format.
func (g *genTarget) body() []byte {
	var b strings.Builder
	type metric struct {
		name, help, typ string
		value           func(c *genCluster) float64
	}
	counters := []metric{
		{"envoy_cluster_upstream_rq_total", "Total requests", "counter", func(c *genCluster) float64 { return c.rq }},
		{"envoy_cluster_upstream_rq_retry_total", "Total retries", "counter", func(c *genCluster) float64 { return c.retry }},
		{"envoy_cluster_upstream_rq_retry_success_total", "Successful retries", "counter", func(c *genCluster) float64 { return c.retryOK }},
		{"envoy_cluster_upstream_cx_total", "Total connections", "counter", func(c *genCluster) float64 { return c.cx }},
		{"envoy_cluster_upstream_rq_active", "Active requests", "gauge", func(c *genCluster) float64 { return c.active }},
		{"envoy_cluster_membership_healthy", "Healthy members", "gauge", func(c *genCluster) float64 { return c.healthy }},
	}
	for _, m := range counters {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", m.name, m.help, m.name, m.typ)
		for i := range g.clusters {
			c := &g.clusters[i]
			fmt.Fprintf(&b, "%s{envoy_cluster_name=%q} %s\n", m.name, c.name, ff(m.value(c)))
		}
	}
	const h = "envoy_cluster_upstream_rq_time"
	fmt.Fprintf(&b, "# HELP %s Request time in ms\n# TYPE %s histogram\n", h, h)
	for i := range g.clusters {
		c := &g.clusters[i]
		for j, le := range genBounds {
			fmt.Fprintf(&b, "%s_bucket{envoy_cluster_name=%q,le=%q} %s\n", h, c.name, ff(le), ff(c.buckets[j]))
		}
		fmt.Fprintf(&b, "%s_bucket{envoy_cluster_name=%q,le=\"+Inf\"} %s\n", h, c.name, ff(c.buckets[len(genBounds)]))
		fmt.Fprintf(&b, "%s_sum{envoy_cluster_name=%q} %s\n", h, c.name, ff(c.sum))
		fmt.Fprintf(&b, "%s_count{envoy_cluster_name=%q} %s\n", h, c.name, ff(c.buckets[len(genBounds)]))
	}
	return []byte(b.String())
}

// seriesCount is the number of flat series body renders.
func (g *genTarget) seriesCount() int { return len(g.clusters) * 28 }
