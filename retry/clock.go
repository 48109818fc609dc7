package retry

import (
	"context"
	"time"
)

// Clock is the Owner's source of time, injectable so tests run without
// sleeping. Now must be on the same timeline as context deadlines (a fake
// clock should start at a real time.Now), because attempt contexts carry
// deadlines computed from Now.
type Clock interface {
	// Now returns the current time. The real clock's readings carry Go's
	// monotonic reading, so durations are immune to wall-clock steps.
	Now() time.Time
	// Sleep waits for d, or until ctx is done, in which case it returns
	// ctx.Err() early.
	Sleep(ctx context.Context, d time.Duration) error
}

// realClock is the default Clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
