package scrape

import (
	"context"
	"fmt"
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
// body) until the snapshot is stored. One budget is shared by every
// scrape of a Scraper (and may be shared by several Scrapers).
//
// When a reservation does not fit, the largest scrape in flight is shed:
// its context is cancelled with a *ShedError naming it, its bytes are
// returned at once, and the scrape that asked goes on. When the one that
// asks is itself the largest, it fails instead. So one endless or
// decompression-bomb target costs at most the budget, and many of them
// cannot starve a small, healthy target of memory. Idle body buffers kept
// for reuse are not counted; each is at most 1 MiB and there are at most
// MaxConcurrent of them.
type MemoryBudget struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	active  map[*Hold]struct{}
	shed    int64
	refused int64
	peak    int64
}

// NewMemoryBudget returns a budget of limit bytes (at least 1 MiB).
func NewMemoryBudget(limit int64) *MemoryBudget {
	return &MemoryBudget{limit: max(limit, 1<<20), active: map[*Hold]struct{}{}}
}

// Limit is the budget's size in bytes.
func (b *MemoryBudget) Limit() int64 { return b.limit }

// InUse is the bytes reserved now; Peak the most ever reserved at once;
// Shed how many scrapes were shed so far.
func (b *MemoryBudget) InUse() int64 { b.mu.Lock(); defer b.mu.Unlock(); return b.used }
func (b *MemoryBudget) Peak() int64  { b.mu.Lock(); defer b.mu.Unlock(); return b.peak }
func (b *MemoryBudget) Shed() int64  { b.mu.Lock(); defer b.mu.Unlock(); return b.shed }

// Refused is how many reservations failed because the scrape asking was
// the largest.
func (b *MemoryBudget) Refused() int64 { b.mu.Lock(); defer b.mu.Unlock(); return b.refused }

// Hold is one scrape's reservation.
type Hold struct {
	b      *MemoryBudget
	target string
	n      int64
	cancel context.CancelCauseFunc
	shed   *ShedError // why it was shed, once it was
}

// Start opens a reservation of 0 bytes for target's scrape; cancel stops
// that scrape when it is shed.
func (b *MemoryBudget) Start(target string, cancel context.CancelCauseFunc) *Hold {
	h := &Hold{b: b, target: target, cancel: cancel}
	b.mu.Lock()
	b.active[h] = struct{}{}
	b.mu.Unlock()
	return h
}

// Grow reserves n more bytes, shedding larger scrapes when they do not
// fit; it fails with a *BudgetError when this scrape is the largest, and
// with its *ShedError when it was shed meanwhile.
func (h *Hold) Grow(n int64) error {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.active[h]; !ok {
		if h.shed != nil {
			return h.shed
		}
		return &ShedError{Target: h.target, Limit: b.limit}
	}
	for b.used+n > b.limit {
		var largest *Hold
		for o := range b.active {
			if o != h && o.n > h.n+n && (largest == nil || o.n > largest.n) {
				largest = o
			}
		}
		if largest == nil {
			b.refused++
			return &BudgetError{Target: h.target, Want: h.n + n, Used: b.used - h.n, Limit: b.limit}
		}
		largest.shed = &ShedError{Target: largest.target, Size: largest.n, Limit: b.limit}
		largest.cancel(largest.shed)
		b.used -= largest.n
		largest.n = 0
		delete(b.active, largest)
		b.shed++
	}
	b.used += n
	h.n += n
	b.peak = max(b.peak, b.used)
	return nil
}

// TryGrow reserves n more bytes when they fit as things are, shedding
// nothing, and reports whether it did.
func (h *Hold) TryGrow(n int64) bool {
	b := h.b
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

// Release returns everything the scrape reserved.
func (h *Hold) Release() {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.active[h]; ok {
		b.used -= h.n
		h.n = 0
		delete(b.active, h)
	}
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

// BudgetError is a scrape that would not fit in the budget even after
// every smaller one was left alone: it is the largest.
type BudgetError struct {
	Target     string
	Want, Used int64
	Limit      int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("needs %s, more than the scrapes' memory budget of %s leaves (%s in use by smaller scrapes; --memory-limit)",
		expo.FormatBytes(e.Want), expo.FormatBytes(e.Limit), expo.FormatBytes(e.Used))
}
