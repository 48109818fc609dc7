// Package bench measures retrytop's parse, store, record and dump paths
// beside anchors run in the same process and the same rounds:
// VictoriaMetrics' text parser (lib/protoparser/prometheus Rows.Unmarshal),
// Prometheus' textparse.PromParser, expfmt's text parser, zstd at its best
// level, a GET-only HTTP loop and a bytes.IndexByte floor. It is a module
// of its own so that the product's go.mod carries none of them;
// scripts/bench-ratios.sh runs it and prints one ratio per figure of
// docs/performance.md.
package bench

import (
	"bytes"
	"strconv"

	"github.com/retrytop/retrytop/internal/expotest"
)

// Body is one generated exposition and the family filter its dialect
// passes to the parser.
type Body struct {
	Name   string
	Series int // flat series
	gen    func(step int) []byte
}

// Text returns the body at scrape number step: counters grow between
// steps so that the store and the dump see changing values.
func (b Body) Text(step int) []byte { return b.gen(step) }

// Bodies are the three shapes of docs/performance.md: Envoy's cluster stats with 2k
// and 100k series, and a Go service with the retry contract and the Go
// runtime's families (2k).
func Bodies() []Body {
	return []Body{
		{Name: "envoy2k", Series: envoySeries(2000), gen: func(s int) []byte { return Envoy(2000, s) }},
		{Name: "envoy100k", Series: envoySeries(100000), gen: func(s int) []byte { return Envoy(100000, s) }},
		{Name: "gosvc2k", Series: goServiceSeries(2000), gen: func(s int) []byte { return GoService(2000, s) }},
	}
}

// envoyBounds are Envoy's default histogram bucket bounds (milliseconds).
func envoySeries(n int) int {
	_, flat := expotest.EnvoyAt(n, 0)
	return flat
}

// Envoy is internal/expotest's Envoy-shaped body of at least series flat
// series at scrape step.
func Envoy(series, step int) []byte {
	body, _ := expotest.EnvoyAt(series, step)
	return body
}

// goRuntime is the fixed part of a Go service's exposition (client_golang's
// Go and process collectors, promhttp's handler counters): 79 lines of
// families no dialect reads.
func goRuntime(b *bytes.Buffer, step int) int {
	n := 0
	w := func(s string) { b.WriteString(s); b.WriteByte('\n') }
	w("# HELP go_gc_duration_seconds A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.")
	w("# TYPE go_gc_duration_seconds summary")
	for _, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		w(`go_gc_duration_seconds{quantile="` + q + `"} 3.1e-05`)
	}
	w("go_gc_duration_seconds_sum " + strconv.Itoa(step) + ".012")
	w("go_gc_duration_seconds_count " + strconv.Itoa(step*3))
	n += 7
	for _, g := range []string{"go_goroutines", "go_threads", "go_memstats_alloc_bytes", "go_memstats_heap_alloc_bytes",
		"go_memstats_heap_idle_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_heap_objects", "go_memstats_heap_released_bytes",
		"go_memstats_heap_sys_bytes", "go_memstats_last_gc_time_seconds", "go_memstats_mcache_inuse_bytes", "go_memstats_mcache_sys_bytes",
		"go_memstats_mspan_inuse_bytes", "go_memstats_mspan_sys_bytes", "go_memstats_next_gc_bytes", "go_memstats_other_sys_bytes",
		"go_memstats_stack_inuse_bytes", "go_memstats_stack_sys_bytes", "go_memstats_sys_bytes", "go_sched_gomaxprocs_threads",
		"process_open_fds", "process_max_fds", "process_resident_memory_bytes", "process_virtual_memory_bytes",
		"process_virtual_memory_max_bytes"} {
		w("# HELP " + g + " Number of things (generated).")
		w("# TYPE " + g + " gauge")
		w(g + " " + strconv.Itoa(1000+step*7%13) + ".5e+06")
		n++
	}
	for _, c := range []string{"go_memstats_alloc_bytes_total", "go_memstats_mallocs_total", "go_memstats_frees_total",
		"process_cpu_seconds_total", "process_network_receive_bytes_total", "process_network_transmit_bytes_total"} {
		w("# HELP " + c + " Total of things (generated).")
		w("# TYPE " + c + " counter")
		w(c + " " + strconv.Itoa(123456+step*4099))
		n++
	}
	w("# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.")
	w("# TYPE process_start_time_seconds gauge")
	w("process_start_time_seconds 1.76497e+09")
	w(`# HELP go_info Information about the Go environment.`)
	w(`# TYPE go_info gauge`)
	w(`go_info{version="go1.26.8"} 1`)
	w("# TYPE promhttp_metric_handler_requests_total counter")
	for _, c := range []string{"200", "500", "503"} {
		w(`promhttp_metric_handler_requests_total{code="` + c + `"} ` + strconv.Itoa(step))
	}
	return n + 5
}

// retryBounds are the retry package's 14 duration buckets and +Inf.
var retryBounds = []string{"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "+Inf"}

// goSvcPerDep is the flat series one dependency adds: originals, attempts
// and results counters by outcome (3 x 3), two histograms.
var goSvcPerDep = 9 + 2*(len(retryBounds)+2)

func goServiceSeries(n int) int {
	var b bytes.Buffer
	fixed := goRuntime(&b, 0)
	return fixed + (n-fixed+goSvcPerDep-1)/goSvcPerDep*goSvcPerDep
}

// GoService generates a Go service's exposition: the Go runtime's
// families and the retry contract for as many dependencies as make at
// least series flat series. Most lines belong to families the native
// dialect reads, as on a service instrumented with the retry package.
func GoService(series, step int) []byte {
	var b bytes.Buffer
	fixed := goRuntime(&b, step)
	deps := (series - fixed + goSvcPerDep - 1) / goSvcPerDep
	b.Grow(deps * 3000)
	outcomes := []string{"success", "error", "timeout"}
	for _, fam := range []string{"retry_originals_total", "retry_attempts_total", "retry_results_total"} {
		b.WriteString("# HELP " + fam + " The contract's counter (generated).\n# TYPE " + fam + " counter\n")
		for d := 0; d < deps; d++ {
			for o, oc := range outcomes {
				b.WriteString(fam + `{dependency="dep-` + strconv.Itoa(d) + `.svc.cluster.local:8080",outcome="` + oc + `",service="checkout"} `)
				b.WriteString(strconv.Itoa(expotest.Grow((d+1)*(3-o)*100, d*7+o, step, (d%7)*(3-o)+1)))
				b.WriteByte('\n')
			}
		}
	}
	for _, h := range []string{"retry_request_duration_seconds", "retry_attempt_duration_seconds"} {
		b.WriteString("# HELP " + h + " The contract's histogram (generated).\n# TYPE " + h + " histogram\n")
		for d := 0; d < deps; d++ {
			lbl := `{dependency="dep-` + strconv.Itoa(d) + `.svc.cluster.local:8080",service="checkout"`
			total := expotest.Grow((d+1)*300, d*13+len(h), step, (d%7)*6+1)
			for i, le := range retryBounds {
				b.WriteString(h + "_bucket" + lbl + `,le="` + le + `"} `)
				b.WriteString(strconv.Itoa(total * (i + 1) / len(retryBounds)))
				b.WriteByte('\n')
			}
			b.WriteString(h + "_sum" + lbl + "} " + strconv.FormatFloat(float64(total)*0.0123, 'g', -1, 64) + "\n")
			b.WriteString(h + "_count" + lbl + "} " + strconv.Itoa(total) + "\n")
		}
	}
	return b.Bytes()
}
