package record

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/scrape"
)

// TestSummaryNamesTheTargetOnce: a failed target's summary line names it
// once, then the scraper's error as its status holds it.
func TestSummaryNamesTheTargetOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	s := scrape.NewScraper([]scrape.Target{{Name: "app", URL: srv.URL + "/metrics"}}, nil, scrape.Options{})
	sts := s.ScrapeOnce(t.Context())
	var b strings.Builder
	WriteSummary(&b, "rec.rtd", sts, dump.Stats{Frames: 1})
	want := "rec.rtd: 1 frame(s), 0 B (bodies 0 B)\n" +
		"  app                  scrapes 1, failed 1, written 0 B; last scrape error: GET " + srv.URL + "/metrics: server returned HTTP status 503 Service Unavailable\n"
	if b.String() != want {
		t.Errorf("summary\n%q\nwant\n%q", b.String(), want)
	}
}
