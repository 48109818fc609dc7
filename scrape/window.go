package scrape

import (
	"context"
	"strings"
	"time"

	"github.com/retrytop/retrytop/model"
)

// ScrapeWindow scrapes every target once, together, so the window starts
// with data from each, then lets each target scrape on its own schedule
// (Run: its interval, its jitter, the bounded worker pool) until d has
// passed, and scrapes every target a last time, so a rate over d has
// samples at both ends. A target that hangs for its timeout therefore
// delays nobody else: each keeps its interval. It returns the statuses
// after the last scrape, or earlier when ctx ends. progress, when not nil,
// is called after the first scrape (round 1) and then every interval with
// the statuses so far.
func (s *Scraper) ScrapeWindow(ctx context.Context, d, interval time.Duration, progress func(round int, st []model.TargetStatus)) []model.TargetStatus {
	if interval <= 0 {
		interval = DefaultInterval
	}
	end := time.Now().Add(d)
	statuses := s.ScrapeOnce(ctx)
	round := 1
	if progress != nil {
		progress(round, statuses)
	}
	if d <= 0 || ctx.Err() != nil {
		return s.Statuses()
	}
	runCtx, stop := context.WithDeadline(ctx, end)
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Run(runCtx)
	}()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-ticker.C:
			round++
			if progress != nil {
				progress(round, s.Statuses())
			}
		}
	}
	if ctx.Err() != nil {
		return s.Statuses()
	}
	return s.ScrapeOnce(ctx)
}

// Unreadable reports whether a target's failed scrape is one that will not
// cure itself: refused, unknown host, not an exposition, an HTTP error. A
// timeout is not: a busy target (or a busy machine) answers the next
// scrape, and a CI gate must not fail on one slow first answer.
func Unreadable(st model.TargetStatus) bool {
	if st.Up || st.LastError == "" {
		return false
	}
	e := strings.ToLower(st.LastError)
	for _, transient := range []string{"deadline exceeded", "timeout", "timed out"} {
		if strings.Contains(e, transient) {
			return false
		}
	}
	return true
}

// AnyScraped reports whether at least one target has had a successful scrape.
func AnyScraped(statuses []model.TargetStatus) bool {
	for _, st := range statuses {
		if !st.LastSuccess.IsZero() {
			return true
		}
	}
	return false
}
