package scrape

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrytop/retrytop/model"
)

func TestScrapeWindowScrapesBothEnds(t *testing.T) {
	// In a synctest bubble with an in-memory transport, so the window's
	// timers run in virtual time and a busy machine cannot stretch them.
	synctest.Test(t, func(t *testing.T) {
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{"Content-Type": {ctText}},
				Body: io.NopCloser(strings.NewReader("# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"db\"} 1\n")), Request: r}, nil
		})
		tests := []struct {
			d, every   time.Duration
			minScrapes int
			maxScrapes int
			wantRound1 bool
		}{
			// No window: the one scrape that starts it.
			{0, time.Second, 1, 1, true},
			// 40 ms at 10 ms: the first and the last scrape at least; at
			// most one per interval started inside the window (0, 10, 20,
			// 30 ms) plus those two.
			{40 * time.Millisecond, 10 * time.Millisecond, 2, 6, true},
		}
		for _, tt := range tests {
			tgt, err := ParseTarget("app=http://app.test:9100/metrics")
			if err != nil {
				t.Fatal(err)
			}
			tgt.Interval = tt.every
			s := NewScraper([]Target{tgt}, model.NewStore(model.StoreConfig{}), Options{Transport: rt})
			first := false
			st := s.ScrapeWindow(context.Background(), tt.d, tt.every, func(r int, st []model.TargetStatus) {
				first = first || (r == 1 && len(st) == 1 && st[0].Scrapes == 1)
			})
			if first != tt.wantRound1 {
				t.Errorf("d=%v: round 1 after the first scrape: %v", tt.d, first)
			}
			if len(st) != 1 || st[0].Scrapes < tt.minScrapes || st[0].Scrapes > tt.maxScrapes || !AnyScraped(st) {
				t.Errorf("d=%v: statuses %+v, want %d..%d scrapes", tt.d, st, tt.minScrapes, tt.maxScrapes)
			}
		}
	})
}

// analyze scraped in lockstep rounds, so one target hanging for
// its timeout made the healthy ones skip ticks. Each target now keeps its
// own interval.
func TestScrapeWindowHangingTargetDelaysNobody(t *testing.T) {
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("retry_originals_total{dependency=\"db\"} 1\n"))
	}))
	defer healthy.Close()
	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hanging.Close()
	defer close(release)
	const (
		window   = 3 * time.Second
		interval = 100 * time.Millisecond
		timeout  = 500 * time.Millisecond
	)
	var targets []Target
	for _, u := range []string{"good=" + healthy.URL, "stuck=" + hanging.URL} {
		tgt, err := ParseTarget(u)
		if err != nil {
			t.Fatal(err)
		}
		tgt.Interval, tgt.Timeout = interval, timeout
		targets = append(targets, tgt)
	}
	s := NewScraper(targets, model.NewStore(model.StoreConfig{}), Options{})
	st := s.ScrapeWindow(context.Background(), window, interval, nil)
	// In lockstep every round waits for the stuck target's 500 ms timeout:
	// at most window/timeout + 2 = 8 scrapes. On its own schedule the
	// healthy target gets up to window/interval = 30; 12 leaves room for a
	// busy machine and is still out of lockstep's reach.
	const lockstepMax = int(window/timeout) + 2
	if st[0].Name != "good" || st[0].Scrapes <= lockstepMax+3 {
		t.Errorf("healthy target: %d scrapes in %v at %v, want more than %d (lockstep gives at most %d)",
			st[0].Scrapes, window, interval, lockstepMax+3, lockstepMax)
	}
	if st[1].Up {
		t.Errorf("stuck target up: %+v", st[1])
	}
}

func TestAnyScrapedFalseWhenAllDown(t *testing.T) {
	if AnyScraped([]model.TargetStatus{{Name: "a"}, {Name: "b", Failures: 3}}) {
		t.Error("AnyScraped true without a successful scrape")
	}
}

func TestUnreadable(t *testing.T) {
	tests := []struct {
		st   model.TargetStatus
		want bool
	}{
		{model.TargetStatus{Up: true}, false},
		{model.TargetStatus{LastError: `target "a": GET http://127.0.0.1:1/metrics: dial tcp 127.0.0.1:1: connect: connection refused`}, true},
		{model.TargetStatus{LastError: `target "a": line 1: not a Prometheus exposition: it starts with '<', a web page`}, true},
		{model.TargetStatus{LastError: `target "a": GET http://h/metrics: server returned HTTP status 404 Not Found`}, true},
		{model.TargetStatus{LastError: `target "a": GET http://h/metrics: context deadline exceeded`}, false},
		{model.TargetStatus{LastError: `target "a": Get "http://h/metrics": net/http: request canceled (Client.Timeout exceeded while awaiting headers)`}, false},
	}
	for _, tt := range tests {
		if got := Unreadable(tt.st); got != tt.want {
			t.Errorf("Unreadable(%q) = %v, want %v", tt.st.LastError, got, tt.want)
		}
	}
}
