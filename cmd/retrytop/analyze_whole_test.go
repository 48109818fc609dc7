package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dump"
)

// benchEnvoyBody renders an Envoy-shaped exposition of clusters clusters
// (per cluster four counters, two gauges and a 19-bound histogram: 28 flat
// series, the shape of dump's benchmark dump) at scrape i.
func benchEnvoyBody(b *strings.Builder, rng *rand.Rand, clusters, i int) {
	b.Reset()
	for _, m := range []struct{ name, typ string }{
		{"envoy_cluster_upstream_rq_total", "counter"}, {"envoy_cluster_upstream_rq_retry_total", "counter"},
		{"envoy_cluster_upstream_rq_retry_success_total", "counter"}, {"envoy_cluster_upstream_cx_total", "counter"},
		{"envoy_cluster_upstream_rq_active", "gauge"}, {"envoy_cluster_membership_healthy", "gauge"},
	} {
		fmt.Fprintf(b, "# TYPE %s %s\n", m.name, m.typ)
		for c := range clusters {
			v := float64(i*(c+1)*10 + rng.IntN(10))
			if m.typ == "gauge" {
				v = float64(rng.IntN(50))
			}
			fmt.Fprintf(b, "%s{envoy_cluster_name=\"svc_%d\"} %g\n", m.name, c, v)
		}
	}
	const h = "envoy_cluster_upstream_rq_time"
	fmt.Fprintf(b, "# TYPE %s histogram\n", h)
	bounds := []string{"0.5", "1", "5", "10", "25", "50", "100", "250", "500", "1000", "2500", "5000", "10000", "30000", "60000", "300000", "600000", "1800000", "3600000", "+Inf"}
	for c := range clusters {
		n := i * (c + 1) * 10
		for k, le := range bounds {
			fmt.Fprintf(b, "%s_bucket{envoy_cluster_name=\"svc_%d\",le=%q} %d\n", h, c, le, n*(k+1)/len(bounds))
		}
		fmt.Fprintf(b, "%s_sum{envoy_cluster_name=\"svc_%d\"} %g\n%s_count{envoy_cluster_name=\"svc_%d\"} %d\n", h, c, float64(n)*12.345, h, c, n)
	}
}

// benchWholeDump is the dump BenchmarkAnalyzeWhole reads: 10 targets x 72
// clusters (2,016 series) x 300 scrapes at 1 s, written into the
// benchmark's temporary directory; with RETRYTOP_BENCH_DUMP=FILE, FILE
// when it exists (dump's 1-hour dump, say), else that dump written
// there and kept (to time the retrytop binary on it).
func benchWholeDump(b *testing.B) string {
	path := os.Getenv("RETRYTOP_BENCH_DUMP")
	if path != "" {
		if _, err := os.Stat(path); err == nil {
			return path
		}
	} else {
		path = filepath.Join(b.TempDir(), "whole.rtd")
	}
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var body strings.Builder
	for i := range 300 {
		for k := range 10 {
			benchEnvoyBody(&body, rng, 72, i)
			at := recT0.Add(time.Duration(i)*time.Second + time.Duration(k)*37*time.Millisecond)
			if err := w.Append(fmt.Sprintf("envoy-%c", 'a'+k), at, "text/plain; version=0.0.4", []byte(body.String())); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkAnalyzeWhole times analyze FILE over the whole recording
// (JSON, discarded) against decoding every frame of the same file in the
// same iteration (the anchor: dump.Reader.Frame in order, one goroutine).
// analyze/decode is the figure; seconds alone depend on the machine's load.
//
//	go test ./cmd/retrytop -run '^$' -bench AnalyzeWhole -benchtime 3x -benchmem
//	RETRYTOP_BENCH_DUMP=/tmp/hour.rtd go test ./cmd/retrytop -run '^$' -bench AnalyzeWhole -benchtime 1x -benchmem
func BenchmarkAnalyzeWhole(b *testing.B) {
	path := benchWholeDump(b)
	var decode, analyze time.Duration
	for b.Loop() {
		t0 := time.Now()
		r, err := dump.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		for i := range r.Len() {
			if _, err := r.Frame(i); err != nil {
				b.Fatal(err)
			}
		}
		r.Close()
		t1 := time.Now()
		cmd := newRootCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs([]string{"analyze", path, "--format", "json"})
		if err := cmd.Execute(); err != nil {
			b.Fatal(err)
		}
		decode, analyze = decode+t1.Sub(t0), analyze+time.Since(t1)
	}
	b.ReportMetric(decode.Seconds()/float64(b.N), "decode-s/op")
	b.ReportMetric(analyze.Seconds()/float64(b.N), "analyze-s/op")
	b.ReportMetric(analyze.Seconds()/decode.Seconds(), "analyze/decode")
}

// TestBinBudgetSaysWhatToDo: a report over its share of --memory-limit
// exits 1 (the flags decide it) and names the bin that fits, and, when
// --bin was given, the width without it if that fits; other errors pass
// as they are.
func TestBinBudgetSaysWhatToDo(t *testing.T) {
	// The 1-hour dump under --memory-limit 128MiB (analysis's
	// TestBinBudgetWiderBin: 20 s bins fit).
	be := &analysis.BinBudgetError{Series: 15120, Bins: 360, Bin: 10 * time.Second, Limit: 64 << 20}
	err := binBudget(fmt.Errorf("loading: %w", be), true)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage {
		t.Fatalf("%v: not exit code %d", err, exitUsage)
	}
	for _, want := range []string{"15120 series x 360 bins of 10s", "budget of 64 MB (half of --memory-limit)", "use --bin 20s or wider"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "leave --bin out") {
		t.Errorf("%q: the hour's width without --bin, 10 s, does not fit", err)
	}
	// Two hours at --bin 5s under the default limit: 10 s bins fit
	// (739 of them at 24 bytes), and so do those without --bin (20 s).
	be = &analysis.BinBudgetError{Series: 15120, Bins: 1440, Bin: 5 * time.Second, Limit: 256 << 20}
	for _, given := range []bool{true, false} {
		err = binBudget(be, given)
		if want := "leave --bin out (20s here), use --bin 10s or wider"; strings.Contains(err.Error(), want) != given {
			t.Errorf("--bin given %v: %q, want it to say %q only when given", given, err, want)
		}
	}
	other := errors.New("other")
	if got := binBudget(other, true); got != other {
		t.Errorf("another error became %v", got)
	}
}
