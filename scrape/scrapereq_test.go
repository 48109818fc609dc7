package scrape

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// roundTripFunc is an http.RoundTripper from a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestScrapeRequestPartsMadeOnce: a target's request URL, Host and
// headers are made once (prepare) and reused by every scrape. Each scrape
// must still send what a request made afresh sends: the target's URL with
// its query, the host, the headers; a transport that writes into one
// request's headers must not reach the next; and a target changed by
// SetTargets (new URL, new timeout) is asked with its new parts.
func TestScrapeRequestPartsMadeOnce(t *testing.T) {
	type seen struct{ url, host, accept, enc, timeout, extra string }
	var got []seen
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, seen{r.URL.String(), r.Host, r.Header.Get("Accept"), r.Header.Get("Accept-Encoding"),
			r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"), r.Header.Get("X-Extra")})
		r.Header.Set("X-Extra", "written by the transport") // against its contract: must not stick
		r.URL.Path = "/changed"
		return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{"Content-Type": {ctText}},
			Body: io.NopCloser(strings.NewReader("up 1\n")), Request: r}, nil
	})
	tg := Target{Name: "a", URL: "http://example.test:9100/metrics?x=1", Interval: 5 * time.Second, Timeout: 2 * time.Second}
	s := NewScraper([]Target{tg}, model.NewStore(model.StoreConfig{}), Options{Transport: rt, Clock: stepClock()})
	for range 2 {
		if st := s.ScrapeOnce(t.Context()); !st[0].Up {
			t.Fatalf("scrape: %+v", st[0])
		}
	}
	tg.URL, tg.Timeout = "http://other.test/m", 500*time.Millisecond
	s.SetTargets([]Target{tg})
	if st := s.ScrapeOnce(t.Context()); !st[0].Up {
		t.Fatalf("scrape after SetTargets: %+v", st[0])
	}
	want := []seen{
		{"http://example.test:9100/metrics?x=1", "example.test:9100", DefaultAcceptHeader, "gzip", "2", ""},
		{"http://example.test:9100/metrics?x=1", "example.test:9100", DefaultAcceptHeader, "gzip", "2", ""},
		{"http://other.test/m", "other.test", DefaultAcceptHeader, "gzip", "0.5", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d requests, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
