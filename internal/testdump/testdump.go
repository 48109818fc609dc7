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

// Write writes n scrapes at 1 s of targets (Contract, the k-th target
// 10 ms after the one before) to a dump file in a temporary directory.
func Write(t testing.TB, n int, targets ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		for k, tg := range targets {
			at := T0.Add(time.Duration(i)*time.Second + time.Duration(k)*10*time.Millisecond)
			if err := w.Append(tg, at, "text/plain; version=0.0.4", []byte(Contract(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
