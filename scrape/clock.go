package scrape

import (
	"sync"
	"time"
)

// SteadyClock returns a clock, safe for concurrent use, that reads wall
// once, at its first call, and from then on advances by what elapsed
// measures: a step of the wall clock
// (NTP, date -s, a virtual machine resumed) then neither moves scrape
// times backwards, which the store would ignore and a recording would
// write out of order, nor jumps them forward, which would read as an
// hour-long gap. NewScraper's default is SteadyClock(time.Now,
// MonotonicSince()).
func SteadyClock(wall func() time.Time, elapsed func() time.Duration) func() time.Time {
	var once sync.Once
	var start time.Time
	var base time.Duration
	return func() time.Time {
		once.Do(func() { start, base = wall(), elapsed() })
		return start.Add(elapsed() - base)
	}
}

// MonotonicSince returns the time elapsed since its call on the monotonic
// clock, which wall-clock steps do not move.
func MonotonicSince() func() time.Duration {
	t0 := time.Now()
	return func() time.Duration { return time.Since(t0) }
}
