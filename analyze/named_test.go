package analyze

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/sources"
)

// TestTargetDownNamedOnce: a live target that fails after answering once
// is in the TARGET_DOWN finding by name once, then its error as the
// scraper words it.
func TestTargetDownNamedOnce(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) > 1 {
			http.Error(w, "boom", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"db\"} 1\n"))
	}))
	defer srv.Close()
	src, err := (&sources.Spec{}).Resolve([]string{"app=" + srv.URL + "/metrics"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Live(t.Context(), src, LiveOptions{Window: time.Millisecond, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	want := "app is down: its newest scrape failed (GET " + srv.URL + "/metrics: server returned HTTP status 503 Service Unavailable); its signals are missing from this report"
	for _, f := range rep.Findings {
		if f.Code == analysis.CodeTargetDown {
			if f.Message != want {
				t.Errorf("TARGET_DOWN %q\nwant %q", f.Message, want)
			}
			return
		}
	}
	t.Errorf("no TARGET_DOWN finding: %+v", rep.Findings)
}
