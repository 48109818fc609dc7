package sim

import (
	"testing"
	"time"
)

func granted(w *waiter) bool {
	select {
	case <-w.ready:
		return true
	default:
		return false
	}
}

func TestSlotQueueGrantsFIFO(t *testing.T) {
	q := newSlotQueue(2, 0)
	a, _ := q.enter(t0)
	b, _ := q.enter(t0)
	if !granted(a) || !granted(b) {
		t.Fatal("the first two requests should get the two slots at once")
	}
	c, _ := q.enter(t0.Add(10 * time.Millisecond))
	d, _ := q.enter(t0.Add(20 * time.Millisecond))
	if granted(c) || granted(d) {
		t.Fatal("requests beyond the slots must wait")
	}
	st := q.stats(t0.Add(50 * time.Millisecond))
	if st.Busy != 2 || st.Depth != 2 || st.Oldest != 40*time.Millisecond {
		t.Fatalf("stats %+v, want busy 2, depth 2, oldest 40ms", st)
	}
	q.release(t0.Add(100 * time.Millisecond))
	if !granted(c) || granted(d) {
		t.Fatal("a release must hand the slot to the oldest waiter")
	}
	if c.waited != 90*time.Millisecond {
		t.Errorf("c waited %v, want 90ms", c.waited)
	}
	st = q.stats(t0.Add(100 * time.Millisecond))
	if st.Busy != 2 || st.Depth != 1 || st.Oldest != 80*time.Millisecond {
		t.Fatalf("after release: %+v", st)
	}
	q.release(t0.Add(110 * time.Millisecond))
	q.release(t0.Add(120 * time.Millisecond))
	q.release(t0.Add(130 * time.Millisecond))
	st = q.stats(t0.Add(130 * time.Millisecond))
	if !granted(d) || st.Busy != 0 || st.Depth != 0 || st.Oldest != 0 {
		t.Fatalf("after all releases: %+v", st)
	}
	if st.PeakBusy != 2 || st.PeakDepth != 2 || st.PeakOpen != 4 {
		t.Errorf("peaks %+v, want busy 2, depth 2, open 4", st)
	}
}

func TestSlotQueueLeave(t *testing.T) {
	q := newSlotQueue(1, 0)
	a, _ := q.enter(t0)
	b, _ := q.enter(t0)
	c, _ := q.enter(t0)
	if !q.leave(b) {
		t.Fatal("a waiting request must be able to leave")
	}
	if q.leave(a) {
		t.Fatal("leave of a granted request must report that it holds a slot")
	}
	q.release(t0) // a's slot
	if !granted(c) || granted(b) {
		t.Fatal("the slot must skip the request that left")
	}
	if st := q.stats(t0); st.Busy != 1 || st.Depth != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSlotQueueBound(t *testing.T) {
	q := newSlotQueue(1, 2)
	for i := range 3 {
		if _, ok := q.enter(t0); !ok {
			t.Fatalf("request %d refused; one slot and two queue places fit three", i)
		}
	}
	if _, ok := q.enter(t0); ok {
		t.Fatal("the fourth request must be refused by the bounded queue")
	}
	if st := q.stats(t0); st.Busy != 1 || st.Depth != 2 {
		t.Fatalf("a refused request must take nothing: %+v", st)
	}
}
