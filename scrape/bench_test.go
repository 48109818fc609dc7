package scrape

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"

	"github.com/retrytop/retrytop/internal/expotest"
	"github.com/retrytop/retrytop/model"
)

// benchFilters parse every family, or the request counters only: what a
// rate view of an Envoy dialect needs.
var benchFilters = []struct {
	name   string
	filter func(string) bool
}{
	{"all", nil},
	{"rq_counters", expotest.Only("envoy_cluster_upstream_rq_total", "envoy_cluster_upstream_rq_retry_total", "envoy_cluster_upstream_rq_retry_success_total")},
}

// BenchmarkScrape measures one target's scrape, parse and store over
// loopback HTTP, as ScrapeOnce does it, in steady state (the store's rings
// are allocated by a warm-up scrape).
func BenchmarkScrape(b *testing.B) {
	for _, size := range []int{2000, 100000} {
		body, series := expotest.GenEnvoy(size, false)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctText)
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write(body)
		}))
		for _, f := range benchFilters {
			b.Run(fmt.Sprintf("series=%d/families=%s", series, f.name), func(b *testing.B) {
				store := model.NewStore(model.StoreConfig{MaxSeriesPerTarget: 2 * series})
				s := NewScraper([]Target{target("envoy", srv.URL)}, store, Options{Clock: stepClock(), Filter: f.filter})
				if st := s.ScrapeOnce(b.Context())[0]; !st.Up || st.DroppedSeries != 0 {
					b.Fatalf("warm-up scrape: %+v", st)
				}
				kept := s.Statuses()[0].Series
				b.SetBytes(int64(len(body)))
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				for b.Loop() {
					s.ScrapeOnce(b.Context())
				}
				expotest.ReportPerSeries(b, series, &before)
				if st := s.Statuses()[0]; !st.Up || st.Series != kept {
					b.Fatalf("status after the loop: %+v", st)
				}
			})
		}
		srv.Close()
	}
}
