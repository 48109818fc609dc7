package scrape

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// TestParseEvery: with Options.ParseEvery a recorder's scraper parses the
// first body, every n-th after it and the one after a failure; the others
// are handed to OnScrape unparsed and unstored, but a web page is still
// refused.
func TestParseEvery(t *testing.T) {
	var mu sync.Mutex
	body := "# TYPE c_total counter\nc_total{dependency=\"a\"} 1\nc_total{dependency=\"b\"} 2\n"
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b := body
		mu.Unlock()
		ct := ctText
		if strings.HasPrefix(b, "<") {
			ct = "text/html"
		}
		w.Header().Set("Content-Type", ct)
		_, _ = w.Write([]byte(b))
	})
	set := func(b string) {
		mu.Lock()
		body = b
		mu.Unlock()
	}
	var seen int
	sc := NewScraper([]Target{target("app", srv.URL)}, nil, Options{
		Clock:      stepClock(),
		ParseEvery: 3,
		OnScrape: func(_ string, _ time.Time, b []byte, _ string, err error) {
			if err == nil && len(b) > 0 {
				seen++
			}
		},
	})
	scrape := func() (up bool, series, stored int, lastErr string) {
		st := statusOf(t, sc.ScrapeOnce(context.Background()), "app")
		return st.Up, st.Series, sc.Store().Stats("app").Scrapes, st.LastError
	}
	for i, want := range []struct {
		body   string // "" keeps the previous body
		up     bool
		series int
		stored int // scrapes in the store: only parsed ones
	}{
		{"", true, 2, 1}, // 1: the first body is parsed
		{"", true, 2, 1}, // 2: checked only
		{"", true, 2, 1}, // 3: checked only
		{"", true, 2, 2}, // 4: the third after a parse is parsed
		{"# TYPE c_total counter\nc_total{dependency=\"a\"} 5\n", true, 2, 2}, // 5: a change goes unread until the next parse
		{"<html>oops</html>\n", false, 2, 2},                                  // 6: a web page is refused unparsed
		{"# TYPE c_total counter\nc_total{dependency=\"a\"} 6\n", true, 1, 3}, // 7: after a failure, parsed
		{"", true, 1, 3}, // 8: checked only
	} {
		if want.body != "" {
			set(want.body)
		}
		up, series, stored, lastErr := scrape()
		if up != want.up || series != want.series || stored != want.stored {
			t.Errorf("scrape %d: up %v, series %d, stored scrapes %d (error %q); want %v, %d, %d",
				i+1, up, series, stored, lastErr, want.up, want.series, want.stored)
		}
		if !want.up && !strings.Contains(lastErr, "not a Prometheus exposition") {
			t.Errorf("scrape %d: error %q, want it to say the body is not an exposition", i+1, lastErr)
		}
	}
	if seen != 8 {
		t.Errorf("OnScrape saw %d bodies, want all 8", seen)
	}
}

// TestNoStore: with Options.NoStore a parsed body counts its series in
// the target's status and stores nothing, so no series cap applies.
func TestNoStore(t *testing.T) {
	body := "# TYPE c_total counter\nc_total{dependency=\"a\"} 1\nc_total{dependency=\"b\"} 2\nc_total{dependency=\"c\"} 3\n"
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write([]byte(body))
	})
	sc := NewScraper([]Target{target("app", srv.URL)}, model.NewStore(model.StoreConfig{History: 2, MaxSeriesPerTarget: 1}),
		Options{Clock: stepClock(), NoStore: true})
	for i := range 2 {
		st := statusOf(t, sc.ScrapeOnce(context.Background()), "app")
		if !st.Up || st.Series != 3 || st.DroppedSeries != 0 || st.SeriesCap != nil {
			t.Errorf("scrape %d: up %v, series %d, dropped %d, cap %+v; want up, 3, 0, none", i+1, st.Up, st.Series, st.DroppedSeries, st.SeriesCap)
		}
	}
	if got := sc.Store().Stats("app"); got.Scrapes != 0 || got.Series != 0 {
		t.Errorf("the store holds %d scrapes of %d series, want none", got.Scrapes, got.Series)
	}
}
