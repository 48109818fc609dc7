package scrape

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lockedBuffer is a log destination safe for the scraper's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
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
	var log lockedBuffer
	tg := target("slow", srv.URL)
	tg.Interval = 20 * time.Millisecond
	s := NewScraper([]Target{tg}, nil, Options{OnScrape: hook, Logger: slog.New(slog.NewTextHandler(&log, nil))})
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
	if n := strings.Count(log.String(), "scrape skipped: the previous one still runs"); n != 1 {
		t.Errorf("skips logged %d times, want once for the run of them:\n%s", n, log.String())
	}
	close(release)
	cancel()
	<-done
}
