package sim

import (
	"container/list"
	"sync"
	"time"
)

// slotQueue is the provider's execution slots and the FIFO queue in front of
// them. It never reads a clock: callers pass the time, so tests drive it
// without sleeping.
type slotQueue struct {
	mu        sync.Mutex
	slots     int
	maxQueue  int // 0: unbounded
	busy      int
	queue     list.List // of *waiter, oldest first
	peakBusy  int
	peakDepth int
	peakOpen  int // executing + queued
}

// waiter is one request waiting for (or holding) a slot.
type waiter struct {
	ready   chan struct{} // closed when the waiter is granted a slot
	enq     time.Time
	waited  time.Duration // enqueue to grant; set before ready is closed
	granted bool
	elem    *list.Element
}

func newSlotQueue(slots, maxQueue int) *slotQueue {
	return &slotQueue{slots: max(slots, 1), maxQueue: max(maxQueue, 0)}
}

// enter asks for a slot at now. It returns the waiter, already granted when
// a slot was free (its ready channel closed), or queued otherwise; ok is
// false when the queue is full (nothing was taken).
func (q *slotQueue) enter(now time.Time) (w *waiter, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	w = &waiter{ready: make(chan struct{}), enq: now}
	if q.busy < q.slots {
		q.busy++
		q.peakBusy = max(q.peakBusy, q.busy)
		q.peakOpen = max(q.peakOpen, q.busy+q.queue.Len())
		w.granted = true
		close(w.ready)
		return w, true
	}
	if q.maxQueue > 0 && q.queue.Len() >= q.maxQueue {
		return nil, false
	}
	w.elem = q.queue.PushBack(w)
	q.peakDepth = max(q.peakDepth, q.queue.Len())
	q.peakOpen = max(q.peakOpen, q.busy+q.queue.Len())
	return w, true
}

// leave takes a waiter that gave up out of the queue. It returns false when
// the waiter had already been granted a slot: the caller then holds that
// slot and must release it.
func (q *slotQueue) leave(w *waiter) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if w.granted {
		return false
	}
	q.queue.Remove(w.elem)
	w.elem = nil
	return true
}

// release frees one slot at now and hands it to the oldest waiter, if any.
func (q *slotQueue) release(now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	front := q.queue.Front()
	if front == nil {
		q.busy--
		return
	}
	w := q.queue.Remove(front).(*waiter)
	w.elem = nil
	w.granted = true
	w.waited = max(now.Sub(w.enq), 0)
	close(w.ready)
}

// queueStats is a consistent reading of the slots and queue.
type queueStats struct {
	Busy, Depth                   int
	Oldest                        time.Duration // age of the oldest waiter at now, 0 when empty
	PeakBusy, PeakDepth, PeakOpen int
}

func (q *slotQueue) stats(now time.Time) queueStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := queueStats{Busy: q.busy, Depth: q.queue.Len(), PeakBusy: q.peakBusy, PeakDepth: q.peakDepth, PeakOpen: q.peakOpen}
	if f := q.queue.Front(); f != nil {
		s.Oldest = max(now.Sub(f.Value.(*waiter).enq), 0)
	}
	return s
}
