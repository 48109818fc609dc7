package collect

import (
	"context"
	"time"

	"github.com/retrytop/retrytop/model"
)

// ScrapeWindow scrapes every target at once, then every interval, and a last
// time when d has passed, so a rate over d has samples at both ends. It
// returns the statuses after the last scrape, or earlier when ctx ends.
// progress, when not nil, is called after each round.
func (s *Scraper) ScrapeWindow(ctx context.Context, d, interval time.Duration, progress func(round int, st []model.TargetStatus)) []model.TargetStatus {
	if interval <= 0 {
		interval = DefaultInterval
	}
	start := time.Now()
	end := start.Add(d)
	statuses := s.ScrapeOnce(ctx)
	round := 1
	if progress != nil {
		progress(round, statuses)
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for time.Now().Before(end) {
		wait := time.Until(end)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return s.Statuses()
		case <-ticker.C:
		case <-timer.C:
		}
		timer.Stop()
		statuses = s.ScrapeOnce(ctx)
		round++
		if progress != nil {
			progress(round, statuses)
		}
	}
	return statuses
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
