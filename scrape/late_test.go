package scrape

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingHandler counts the log records of each message.
type countingHandler struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n[r.Message]++
	return nil
}

func (h *countingHandler) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[msg]
}

// TestLateScrapesCounted: while a target's scrape runs past its next
// ticks (here held in OnScrape), no second scrape of it starts; each tick
// it skips is counted in its status (late_scrapes) and the first of the
// run is logged once.
func TestLateScrapesCounted(t *testing.T) {
	srv := serve(t, exposition(smallBody))
	var calls atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	hook := func(string, time.Time, []byte, string, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release
		}
	}
	log := &countingHandler{n: map[string]int{}}
	tg := target("slow", srv.URL)
	tg.Interval = 20 * time.Millisecond
	s := NewScraper([]Target{tg}, nil, Options{OnScrape: hook, Logger: slog.New(log)})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	<-entered
	for s.Statuses()[0].Late < 3 {
		select {
		case <-s.Updates():
		case <-time.After(30 * time.Second): // a failure's bound, not a wait
			close(release)
			t.Fatalf("no third late scrape counted: %+v", s.Statuses()[0])
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d scrapes of the target started while its first ran, want 1", n)
	}
	if st := s.Statuses()[0]; st.Scrapes != 0 {
		t.Errorf("%d scrapes ended while the first was held", st.Scrapes)
	}
	if n := log.count("scrape skipped: the previous one still runs"); n != 1 {
		t.Errorf("skips logged %d times, want once for the run of them", n)
	}
	close(release)
	cancel()
	<-done
}
