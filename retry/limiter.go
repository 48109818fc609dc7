package retry

import (
	"fmt"
	"sync/atomic"
)

// Limiter is a non-blocking admission limiter: at most Limit attempts in
// flight, of which the last reservedForCritical slots only Critical work may
// take. It never queues: TryAcquire answers at once, so waiting cannot hide
// in a semaphore queue (the seed's "do not move waiting into an unbounded
// queue").
//
// A Limiter is process-scoped: a limit of 10 on each of 20 replicas admits
// 200 attempts cluster-wide. Share one Limiter among all callers of one
// dependency in the process, and give each dependency its own (a bulkhead),
// so a slow provider cannot take the slots another dependency needs.
//
// The zero value is not usable; use NewLimiter.
type Limiter struct {
	limit    int64
	reserved int64
	inUse    atomic.Int64
}

// NewLimiter returns a limiter admitting limit concurrent attempts, of which
// reservedForCritical are kept for Critical work. It panics if limit < 1 or
// reservedForCritical is outside [0, limit): configuration bugs should fail
// at start-up, not shed traffic in production.
func NewLimiter(limit, reservedForCritical int) *Limiter {
	if limit < 1 {
		panic(fmt.Sprintf("retry: NewLimiter limit must be at least 1, got %d", limit))
	}
	if reservedForCritical < 0 || reservedForCritical >= limit {
		panic(fmt.Sprintf("retry: NewLimiter reservedForCritical must be in [0, %d), got %d", limit, reservedForCritical))
	}
	return &Limiter{limit: int64(limit), reserved: int64(reservedForCritical)}
}

// TryAcquire takes a slot for one attempt of priority p if one is free, and
// reports whether it did. Sheddable work sees Limit minus the reserved
// slots; Critical work sees all of them. Every true result must be paired
// with one Release.
func (l *Limiter) TryAcquire(p Priority) bool {
	ceil := l.limit
	if p != Critical {
		ceil -= l.reserved
	}
	for {
		cur := l.inUse.Load()
		if cur >= ceil {
			return false
		}
		if l.inUse.CompareAndSwap(cur, cur+1) {
			return true
		}
	}
}

// Release returns a slot taken by TryAcquire. Releasing more than was
// acquired is a bug and panics, as sync.WaitGroup does.
func (l *Limiter) Release() {
	if l.inUse.Add(-1) < 0 {
		panic("retry: Limiter.Release without a matching TryAcquire")
	}
}

// Limit returns the total number of slots.
func (l *Limiter) Limit() int { return int(l.limit) }

// Reserved returns the number of slots only Critical work may take.
func (l *Limiter) Reserved() int { return int(l.reserved) }

// InUse returns the number of slots held now.
func (l *Limiter) InUse() int { return int(l.inUse.Load()) }
