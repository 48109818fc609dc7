package scrape

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"

	"github.com/retrytop/retrytop/expo"
)

// DefaultScrapeMemory is the scrapes' share of memory when
// Options.Memory is nil: 256 MiB, half of the command's default
// --memory-limit (the rest holds the store, frames and the runtime).
const DefaultScrapeMemory = 256 << 20

// MemoryBudget bounds, in total, the bytes the scrapes of a process hold
// at once: each body while it is read, grown in steps and reserved before
// each step is allocated, and its parse (expo.ParseCost bytes per byte of
// body, or expo.ParseBytesPerSeries a series) until the snapshot is
// stored. One budget is shared by every scrape of a Scraper (and may be
// shared by several Scrapers).
//
// When a reservation does not fit, the largest scrape in flight is shed:
// its context is cancelled with a *ShedError naming it, and the scrape
// that asked waits until the shed one has really ended (a parse does not
// stop half-way) before taking its bytes: a shed scrape's bytes stay
// counted until it releases them, so the budget bounds memory that is
// live, not only memory promised. When the one that asks is itself the
// largest, it fails instead. So one endless or decompression-bomb target
// costs at most the budget, and many of them cannot starve a small,
// healthy target of memory. Idle body buffers kept for reuse are not
// counted; each is at most 1 MiB and there are at most MaxConcurrent of
// them.
type MemoryBudget struct {
	mu     sync.Mutex
	limit  int64
	used   int64
	active map[*Hold]struct{} // holds not shed nor released
	// draining is the bytes of shed scrapes still running, part of used;
	// drained is closed (and replaced) whenever one of them ends.
	draining int64
	drained  chan struct{}
	shed     int64
	refused  int64
	peak     int64
	// heapLimit, when positive, is the process' limit a large reservation
	// must fit under beside the live heap (CheckHeap); live reads the live
	// heap, collect runs a collection.
	heapLimit int64
	live      func() int64
	collect   func()
}

// heapCheckFloor: reservations of at least this many bytes are checked
// against the live heap too (CheckHeap); smaller ones, a small target's,
// never are.
const heapCheckFloor = 1 << 20

// CheckHeap makes every reservation of at least 1 MiB also fit under
// limit (the process' --memory-limit) beside the live heap: what the Go
// runtime found live at its newest collection, the store and everything
// else the budget does not see included. When it does not fit, a
// collection is run (the newest may be out of date) and, if it still
// does not, the reservation fails with a *BudgetError saying so. Go's own
// soft limit (GOMEMLIMIT) is the backstop behind this, not the bound.
func (b *MemoryBudget) CheckHeap(limit int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.heapLimit, b.live, b.collect = limit, liveHeap, runtime.GC
}

// liveHeap is the heap the newest collection found live.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// errNoHeapRoom: the live heap leaves no room as it was last measured.
var errNoHeapRoom = errors.New("no room beside the live heap")

// checkHeap fails a reservation of n more bytes for h that the live heap
// leaves no room for (CheckHeap); without collect, it fails at once where
// a collection would be tried. b.mu is not held: it may collect.
func (b *MemoryBudget) checkHeap(h *Hold, n int64, mayCollect bool) error {
	b.mu.Lock()
	limit, live, collect, held := b.heapLimit, b.live, b.collect, h.n
	b.mu.Unlock()
	if limit <= 0 || n < heapCheckFloor || held+n > b.limit {
		return nil // small; or more than the whole budget, which refuses it in its own words
	}
	if live()+n <= limit {
		return nil
	}
	if !mayCollect {
		return errNoHeapRoom
	}
	collect()
	heap := live()
	if heap+n <= limit {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refused++
	return &BudgetError{Target: h.target, Want: h.n + n, Used: b.used - h.n, Limit: b.limit, Heap: heap, Process: limit}
}

// NewMemoryBudget returns a budget of limit bytes (at least 1 MiB).
func NewMemoryBudget(limit int64) *MemoryBudget {
	return &MemoryBudget{limit: max(limit, 1<<20), active: map[*Hold]struct{}{}, drained: make(chan struct{})}
}

// Limit is the budget's size in bytes.
func (b *MemoryBudget) Limit() int64 { return b.limit }

// InUse is the bytes reserved now, a shed scrape's until it has ended;
// Peak the most ever reserved at once; Shed how many scrapes were shed
// so far.
func (b *MemoryBudget) InUse() int64 { b.mu.Lock(); defer b.mu.Unlock(); return b.used }
func (b *MemoryBudget) Peak() int64  { b.mu.Lock(); defer b.mu.Unlock(); return b.peak }
func (b *MemoryBudget) Shed() int64  { b.mu.Lock(); defer b.mu.Unlock(); return b.shed }

// Refused is how many reservations failed because the scrape asking was
// the largest.
func (b *MemoryBudget) Refused() int64 { b.mu.Lock(); defer b.mu.Unlock(); return b.refused }

// Hold is one scrape's reservation.
type Hold struct {
	b        *MemoryBudget
	target   string
	n        int64
	ctx      context.Context
	cancel   context.CancelCauseFunc
	shed     *ShedError // why it was shed, once it was
	released bool
}

// Start opens a reservation of 0 bytes for target's scrape, which runs
// until ctx ends; cancel stops that scrape when it is shed (and should
// end ctx).
func (b *MemoryBudget) Start(ctx context.Context, target string, cancel context.CancelCauseFunc) *Hold {
	h := &Hold{b: b, target: target, ctx: ctx, cancel: cancel}
	b.mu.Lock()
	b.active[h] = struct{}{}
	b.mu.Unlock()
	return h
}

// Grow reserves n more bytes. When they do not fit it sheds the scrapes
// larger than this one would be, and waits for shed scrapes to end while
// their bytes would make room; it fails with a *BudgetError when this
// scrape is the largest, with its *ShedError when it was shed meanwhile,
// and with a *WaitError when its context ends while it waits.
func (h *Hold) Grow(n int64) error {
	b := h.b
	if err := b.checkHeap(h, n, true); err != nil {
		return err
	}
	b.mu.Lock()
	for {
		if _, ok := b.active[h]; !ok {
			b.mu.Unlock()
			if h.shed != nil {
				return h.shed
			}
			return &ShedError{Target: h.target, Limit: b.limit}
		}
		if b.used+n <= b.limit {
			b.used += n
			h.n += n
			b.peak = max(b.peak, b.used)
			b.mu.Unlock()
			return nil
		}
		if b.used-b.draining+n > b.limit {
			// Not even once the shed scrapes end: shed another, or fail.
			largest := b.largerThan(h, h.n+n)
			if largest == nil {
				b.refused++
				err := &BudgetError{Target: h.target, Want: h.n + n, Used: b.used - h.n, Limit: b.limit}
				b.mu.Unlock()
				return err
			}
			largest.shed = &ShedError{Target: largest.target, Size: largest.n, Limit: b.limit}
			largest.cancel(largest.shed)
			delete(b.active, largest)
			b.draining += largest.n
			b.shed++
			continue
		}
		drained := b.drained
		b.mu.Unlock()
		select {
		case <-drained:
		case <-h.ctx.Done():
			b.mu.Lock()
			shed := h.shed
			b.mu.Unlock()
			if shed != nil {
				return shed
			}
			return &WaitError{Limit: b.limit, Err: context.Cause(h.ctx)}
		}
		b.mu.Lock()
	}
}

// largerThan is the largest scrape in flight, other than h and not shed,
// holding more than n bytes (nil: none). b.mu is held.
func (b *MemoryBudget) largerThan(h *Hold, n int64) *Hold {
	var largest *Hold
	for o := range b.active {
		if o != h && o.n > n && (largest == nil || o.n > largest.n) {
			largest = o
		}
	}
	return largest
}

// TryGrow reserves n more bytes when they fit as things are, shedding
// nothing, and reports whether it did.
func (h *Hold) TryGrow(n int64) bool {
	b := h.b
	if b.checkHeap(h, n, false) != nil { // Grow, which may collect, will tell
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.active[h]; !ok || b.used+n > b.limit {
		return false
	}
	b.used += n
	h.n += n
	b.peak = max(b.peak, b.used)
	return true
}

// giveBack returns n of the bytes the scrape reserved (nil: no budget),
// unless it was shed: a shed scrape's bytes stay until it ends.
func (h *Hold) giveBack(n int64) {
	if h == nil {
		return
	}
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.active[h]; ok {
		n = min(n, h.n)
		h.n -= n
		b.used -= n
	}
}

// Release returns everything the scrape reserved, shed or not: call it
// when the scrape has ended and holds none of that memory any more.
func (h *Hold) Release() {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if h.released {
		return
	}
	h.released = true
	b.used -= h.n
	if _, ok := b.active[h]; ok {
		delete(b.active, h)
	} else if h.shed != nil {
		b.draining -= h.n
		close(b.drained)
		b.drained = make(chan struct{})
	}
	h.n = 0
}

// ShedError is the cause a shed scrape's context is cancelled with.
type ShedError struct {
	Target string
	Size   int64 // bytes it held when shed
	Limit  int64
}

func (e *ShedError) Error() string {
	return fmt.Sprintf("shed: it held the most memory (%s) when the scrapes' memory budget (%s, --memory-limit) ran out",
		expo.FormatBytes(e.Size), expo.FormatBytes(e.Limit))
}

// WaitError is a scrape whose context ended while it waited for shed
// scrapes to give their memory back; Err is the context's cause.
type WaitError struct {
	Limit int64
	Err   error
}

func (e *WaitError) Error() string { return e.waiting() + ": " + e.Err.Error() }

// waiting says what the scrape waited for, without why it stopped.
func (e *WaitError) waiting() string {
	return fmt.Sprintf("waiting for memory: the scrapes' memory budget (%s, --memory-limit) was in use", expo.FormatBytes(e.Limit))
}

func (e *WaitError) Unwrap() error { return e.Err }

// BudgetError is a scrape that would not fit in the budget even after
// every smaller one was left alone: it is the largest. Or, when Process
// is set, one the live heap (Heap) leaves no room for under the process'
// limit (MemoryBudget.CheckHeap).
type BudgetError struct {
	Target     string
	Want, Used int64
	Limit      int64
	Heap       int64
	Process    int64
}

func (e *BudgetError) Error() string {
	if e.Process > 0 {
		return fmt.Sprintf("needs %s, more than the live heap (%s) leaves under the process' memory limit of %s (--memory-limit)",
			expo.FormatBytes(e.Want), expo.FormatBytes(e.Heap), expo.FormatBytes(e.Process))
	}
	return fmt.Sprintf("needs %s, more than the scrapes' memory budget of %s leaves (%s in use by smaller scrapes; --memory-limit)",
		expo.FormatBytes(e.Want), expo.FormatBytes(e.Limit), expo.FormatBytes(e.Used))
}
