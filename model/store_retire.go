package model

import (
	"sync"
	"sync/atomic"
)

// A replay's seek replaces its store with one restored from the seek
// index, of the same shape: the replaced store's rings (about 50 MB on
// a fleet of 15,000 series) became garbage as the new ones were made,
// so every second or third seek ran a collection beside the restore and
// wrote fresh memory. Retire gives the old rings' arrays to the next
// Loads instead, once no reader holds the store (Hold).

// arrayPool holds the arrays retired stores gave back, a sync.Pool per
// length: what no Load takes goes at the collector's pace.
type arrayPool[T float32 | float64] struct {
	pools sync.Map // int -> *sync.Pool of *[]T
}

// take is an array of n values, given back by a retired store when
// there is one (its contents stale: the caller writes every value).
func (a *arrayPool[T]) take(n int) []T {
	if p, ok := a.pools.Load(n); ok {
		if v, _ := p.(*sync.Pool).Get().(*[]T); v != nil {
			return *v
		}
	}
	return make([]T, n)
}

func (a *arrayPool[T]) give(v []T) {
	p, _ := a.pools.LoadOrStore(len(v), new(sync.Pool))
	p.(*sync.Pool).Put(&v)
}

var (
	// ringArrays are the float32 rings' arrays (ownRing's).
	ringArrays arrayPool[float32]
	// wideChunks are the float64 rings' open chunks (a chunk is sealed
	// on its own, so each is an array of its own).
	wideChunks arrayPool[float64]
)

// retirement is what Hold and Retire share.
type retirement struct {
	held atomic.Int32 // readers holding the store
	// asked: Retire was called, and the last Release retires the store
	// if readers held it then (set under the store's lock, read without
	// it by Release: a frame's Release takes the lock only then).
	asked atomic.Bool
	// retired: emptied (under the store's lock).
	retired bool
}

// Hold marks a reader that reads the store in several calls (a frame):
// Retire waits for its Release. False when the store was retired, or
// asked to be: the caller reads the store that replaced it.
func (s *Store) Hold() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ret.retired || s.ret.asked.Load() {
		return false
	}
	s.ret.held.Add(1)
	return true
}

// Release ends a Hold; the last one retires the store if it was asked
// to be meanwhile.
func (s *Store) Release() {
	// Retire sets asked before it counts the readers, Release counts
	// itself out before it reads asked: one of them sees the other.
	if s.ret.held.Add(-1) > 0 || !s.ret.asked.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retire()
}

// Retire empties the store, giving its rings' arrays to the next
// stores' Loads; when readers hold it, the last one's Release does.
// Its owner retires a store it replaced: readers that come after see no
// target, and Hold refuses it.
func (s *Store) Retire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ret.asked.Store(true)
	s.retire()
}

// retire is Retire under the store's lock, once no reader holds it.
func (s *Store) retire() {
	if s.ret.held.Load() > 0 || s.ret.retired {
		return
	}
	s.ret.retired = true
	for _, th := range s.targets {
		for _, ss := range th.series {
			if v := ss.ring.ownArray(); v != nil {
				ringArrays.give(v)
			}
			if w := ss.ring.wide; w != nil {
				for _, v := range w.v {
					if v != nil {
						wideChunks.give(v)
					}
				}
			}
			ss.ring = ring{}
		}
	}
	s.targets = make(map[string]*targetHistory)
	s.total, s.ident, s.dropped = 0, 0, 0
	s.mem = memMeasure{}
}

// ownArray is the array of a ring of its own (ownRing's), nil for any
// other.
func (r *ring) ownArray() []float32 {
	t := r.tile
	if t == nil || t.cols != 1 || t.seals || len(t.v) == 0 || cap(t.v[0]) < t.slots {
		return nil
	}
	v := t.v[0][:t.slots:t.slots]
	// Its chunks lie in it, in order (ownRing): the last one ends it.
	if last := len(t.v) - 1; len(t.v[last]) == 0 || &t.v[last][0] != &v[last*chunkSlots] {
		return nil
	}
	return v
}
