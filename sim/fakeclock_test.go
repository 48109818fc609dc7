package sim

import (
	"sync"
	"time"
)

// fakeClock is a Clock that only moves when Advance is called. Timer
// creations are announced on created (while its buffer has room), so a test
// knows when the code under test is blocked waiting.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	created chan time.Duration
}

type fakeTimer struct {
	at      time.Time
	c       chan time.Time
	stopped bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }
func (t *fakeTimer) Stop() bool {
	was := !t.stopped
	t.stopped = true
	return was
}

func newFakeClock(start time.Time) *fakeClock {
	return &fakeClock{now: start, created: make(chan time.Duration, 1000)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	t := &fakeTimer{at: c.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- c.now
	} else {
		c.timers = append(c.timers, t)
	}
	c.mu.Unlock()
	select {
	case c.created <- d:
	default: // nobody is watching this many timers
	}
	return t
}

// Advance moves the clock and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			if !t.stopped {
				t.c <- c.now
			}
			continue
		}
		keep = append(keep, t)
	}
	c.timers = keep
}
