// Package testdump writes the small recordings tests read: a retrying
// client's contract families, healthy, then an incident with retries and
// provider errors, scraped at 1 s. For tests only.
package testdump

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
)

// T0 is the time of a test dump's first scrape.
var T0 = time.Date(2025, 3, 4, 3, 0, 0, 0, time.UTC)

// Contract is a retrying client's body at scrape n: healthy, then from
// n=60 to 120 an incident with retries and provider errors.
func Contract(n int) string {
	orig := 50 * n
	att, errs := orig, 0
	switch {
	case n > 60 && n < 120:
		att, errs = orig+(n-60)*150, (n-60)*40
	case n >= 120:
		att, errs = orig+60*150, 60*40
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"provider\",priority=\"critical\"} %d\n", orig)
	fmt.Fprintf(&b, "# TYPE retry_attempts_total counter\n")
	fmt.Fprintf(&b, "retry_attempts_total{dependency=\"provider\",outcome=\"success\"} %d\n", att-errs)
	fmt.Fprintf(&b, "retry_attempts_total{dependency=\"provider\",outcome=\"temporary_error\"} %d\n", errs)
	fmt.Fprintf(&b, "# TYPE retry_request_duration_seconds histogram\n")
	for _, le := range []string{"0.01", "0.1", "1", "+Inf"} {
		fmt.Fprintf(&b, "retry_request_duration_seconds_bucket{dependency=\"provider\",result_class=\"success\",le=%q} %d\n", le, orig-errs)
	}
	fmt.Fprintf(&b, "retry_request_duration_seconds_sum{dependency=\"provider\",result_class=\"success\"} %g\n", float64(orig)*0.004)
	fmt.Fprintf(&b, "retry_request_duration_seconds_count{dependency=\"provider\",result_class=\"success\"} %d\n", orig-errs)
	fmt.Fprintf(&b, "# TYPE retry_active_calls gauge\nretry_active_calls{dependency=\"provider\"} %d\n", n%7)
	return b.String()
}

// Envoy is an Envoy sidecar's cluster stats at scrape n: two clusters,
// healthy, then from n=60 to 120 the provider's slow and retried; a
// third cluster appears at n=90 (the exposition's structure changes).
func Envoy(n int) string {
	type cluster struct {
		name           string
		total, retries int
		slow           bool
	}
	orig := 40 * n
	retries, timeouts := 0, 0
	switch {
	case n > 60 && n < 120:
		retries, timeouts = (n-60)*90, (n-60)*30
	case n >= 120:
		retries, timeouts = 60*90, 60*30
	}
	clusters := []cluster{{"provider", orig + retries, retries, true}, {"cache", 25 * n, 0, false}}
	if n >= 90 {
		clusters = append(clusters, cluster{"audit", 3 * (n - 89), 0, false})
	}
	var b strings.Builder
	counter := func(stat string, v func(c cluster) int) {
		fmt.Fprintf(&b, "# TYPE envoy_cluster_%s counter\n", stat)
		for _, c := range clusters {
			fmt.Fprintf(&b, "envoy_cluster_%s{envoy_cluster_name=%q} %d\n", stat, c.name, v(c))
		}
	}
	counter("upstream_rq_total", func(c cluster) int { return c.total })
	counter("upstream_rq_completed", func(c cluster) int { return c.total - c.total%3 })
	counter("upstream_rq_retry", func(c cluster) int { return c.retries })
	counter("upstream_rq_retry_success", func(c cluster) int { return c.retries / 3 })
	counter("upstream_rq_per_try_timeout", func(c cluster) int {
		if c.slow {
			return timeouts
		}
		return 0
	})
	fmt.Fprintf(&b, "# TYPE envoy_cluster_upstream_rq_active gauge\n")
	for _, c := range clusters {
		fmt.Fprintf(&b, "envoy_cluster_upstream_rq_active{envoy_cluster_name=%q} %d\n", c.name, n%5)
	}
	fmt.Fprintf(&b, "# TYPE envoy_cluster_upstream_rq_time histogram\n")
	for _, c := range clusters {
		done := c.total - c.total%3
		fast := done
		if c.slow {
			fast = done - timeouts
		}
		for _, le := range []string{"5", "50", "500", "5000", "+Inf"} {
			v := fast
			if le == "5000" || le == "+Inf" {
				v = done
			}
			fmt.Fprintf(&b, "envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name=%q,le=%q} %d\n", c.name, le, v)
		}
		fmt.Fprintf(&b, "envoy_cluster_upstream_rq_time_sum{envoy_cluster_name=%q} %d\n", c.name, 4*fast+2000*(done-fast))
		fmt.Fprintf(&b, "envoy_cluster_upstream_rq_time_count{envoy_cluster_name=%q} %d\n", c.name, done)
	}
	return b.String()
}

// Write writes n scrapes at 1 s of targets (Contract, the k-th target
// 10 ms after the one before) to a dump file in a temporary directory.
func Write(t testing.TB, n int, targets ...string) string {
	t.Helper()
	return WriteBodies(t, n, Contract, targets...)
}

// WriteBodies is Write of body(i) at scrape i.
func WriteBodies(t testing.TB, n int, body func(int) string, targets ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		for k, tg := range targets {
			at := T0.Add(time.Duration(i)*time.Second + time.Duration(k)*10*time.Millisecond)
			if err := w.Append(tg, at, "text/plain; version=0.0.4", []byte(body(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
