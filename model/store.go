package model

import (
	"math"
	"sort"
	"sync"
)

// Point is one value of a flat series at a scrape time (Unix milliseconds).
type Point struct {
	T int64
	V float64
}

// Series is a copy of one flat series' retained history, oldest first.
// Scrapes at which the series was absent are left out, so a gap in Points is
// a gap in the data, never a zero.
type Series struct {
	Target string
	Name   string
	Labels Labels
	Type   MetricType
	Points []Point
	// Stale is true when the newest scrape of the target did not contain
	// the series: it disappeared (a restart, a removed dependency).
	Stale bool
}

// StoreConfig bounds a Store.
type StoreConfig struct {
	// History is the number of scrapes kept per target (default 900:
	// 15 minutes at 1 s).
	History int
	// MaxSeriesPerTarget caps distinct flat series per target (default
	// 20,000). Series beyond it are dropped and counted, never stored.
	MaxSeriesPerTarget int
}

// DefaultStoreConfig is 15 minutes at 1 s and 20,000 series per target.
var DefaultStoreConfig = StoreConfig{History: 900, MaxSeriesPerTarget: 20000}

// Store keeps bounded history for many targets: per target, a ring of scrape
// times and, per series, a ring of values aligned with it. Memory per series
// is History*8 bytes plus its identity, fixed from the series' first scrape.
// It is safe for concurrent use.
type Store struct {
	mu      sync.RWMutex
	cfg     StoreConfig
	targets map[string]*targetHistory
}

type targetHistory struct {
	times   []int64 // ring of scrape times
	next    int64   // index of the next scrape (monotonic); slot = idx % len(times)
	series  map[string]*storedSeries
	byName  map[string][]*storedSeries
	dropped int // series refused by the cap at the newest scrape
	keyBuf  []byte
}

type storedSeries struct {
	name     string
	labels   Labels
	typ      MetricType
	values   []float64 // ring aligned with targetHistory.times; NaN = absent
	lastSeen int64     // scrape index of the newest value
}

// NewStore returns an empty store; zero fields of cfg take the defaults.
func NewStore(cfg StoreConfig) *Store {
	if cfg.History <= 0 {
		cfg.History = DefaultStoreConfig.History
	}
	if cfg.MaxSeriesPerTarget <= 0 {
		cfg.MaxSeriesPerTarget = DefaultStoreConfig.MaxSeriesPerTarget
	}
	return &Store{cfg: cfg, targets: make(map[string]*targetHistory)}
}

// Config returns the bounds the store was built with.
func (s *Store) Config() StoreConfig { return s.cfg }

// AppendResult says what one Append kept.
type AppendResult struct {
	Series  int // series stored from the snapshot
	Dropped int // series refused because the target is at its cap
}

// Append adds one scrape. Scrapes of a target must arrive in time order;
// an older or equal timestamp than the newest stored is ignored so a
// replayed or duplicated frame can never reorder history.
func (s *Store) Append(snap *Snapshot) AppendResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	th := s.targets[snap.Target]
	if th == nil {
		th = &targetHistory{
			times:  make([]int64, s.cfg.History),
			series: make(map[string]*storedSeries),
			byName: make(map[string][]*storedSeries),
		}
		s.targets[snap.Target] = th
	}
	t := snap.Time.UnixMilli()
	if th.next > 0 && t <= th.times[(th.next-1)%int64(len(th.times))] {
		return AppendResult{}
	}
	idx := th.next
	slot := int(idx % int64(len(th.times)))
	th.times[slot] = t
	th.next++

	var res AppendResult
	snap.Flatten(func(fs FlatSeries) {
		th.keyBuf = append(th.keyBuf[:0], fs.Name...)
		th.keyBuf = append(th.keyBuf, 0xff)
		th.keyBuf = fs.Labels.AppendKey(th.keyBuf)
		ss := th.series[string(th.keyBuf)] // no allocation for the lookup
		if ss == nil {
			key := string(th.keyBuf)
			if len(th.series) >= s.cfg.MaxSeriesPerTarget {
				res.Dropped++
				return
			}
			ss = &storedSeries{name: fs.Name, labels: append(Labels(nil), fs.Labels...), typ: fs.Type, values: make([]float64, len(th.times))}
			for i := range ss.values {
				ss.values[i] = math.NaN()
			}
			th.series[key] = ss
			th.byName[fs.Name] = append(th.byName[fs.Name], ss)
		}
		ss.values[slot] = fs.Value
		ss.lastSeen = idx
		res.Series++
	})
	// Series missing from this scrape get an explicit gap; series missing
	// for the whole retained history are forgotten so churn stays bounded.
	for key, ss := range th.series {
		if ss.lastSeen == idx {
			continue
		}
		ss.values[slot] = math.NaN()
		if idx-ss.lastSeen >= int64(len(th.times)) {
			delete(th.series, key)
			th.removeByName(ss)
		}
	}
	th.dropped = res.Dropped
	return res
}

func (th *targetHistory) removeByName(ss *storedSeries) {
	list := th.byName[ss.name]
	for i, x := range list {
		if x == ss {
			list[i] = list[len(list)-1]
			list = list[:len(list)-1]
			break
		}
	}
	if len(list) == 0 {
		delete(th.byName, ss.name)
	} else {
		th.byName[ss.name] = list
	}
}

// Targets lists the targets that have at least one scrape, sorted.
func (s *Store) Targets() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.targets))
	for t := range s.targets {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// TargetStats describes what the store holds for one target.
type TargetStats struct {
	Scrapes       int   // scrapes retained
	Series        int   // distinct series retained
	DroppedSeries int   // series refused by the cap at the newest scrape
	NewestMs      int64 // newest scrape time, 0 when none
	OldestMs      int64 // oldest retained scrape time
}

// Stats returns what the store holds for target.
func (s *Store) Stats(target string) TargetStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	th := s.targets[target]
	if th == nil || th.next == 0 {
		return TargetStats{}
	}
	times := th.orderedTimes()
	return TargetStats{
		Scrapes:       len(times),
		Series:        len(th.series),
		DroppedSeries: th.dropped,
		NewestMs:      times[len(times)-1],
		OldestMs:      times[0],
	}
}

// Times returns the retained scrape times of target, oldest first.
func (s *Store) Times(target string) []int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	th := s.targets[target]
	if th == nil {
		return nil
	}
	return th.orderedTimes()
}

func (th *targetHistory) orderedTimes() []int64 {
	n := th.retained()
	out := make([]int64, n)
	start := th.next - int64(n)
	for i := 0; i < n; i++ {
		out[i] = th.times[(start+int64(i))%int64(len(th.times))]
	}
	return out
}

func (th *targetHistory) retained() int {
	if th.next < int64(len(th.times)) {
		return int(th.next)
	}
	return len(th.times)
}

// Select copies the retained history of target's series named name whose
// labels satisfy match (nil matches all), in a stable order.
func (s *Store) Select(target, name string, match func(Labels) bool) []Series {
	s.mu.RLock()
	defer s.mu.RUnlock()
	th := s.targets[target]
	if th == nil {
		return nil
	}
	list := th.byName[name]
	out := make([]Series, 0, len(list))
	n := th.retained()
	start := th.next - int64(n)
	for _, ss := range list {
		if match != nil && !match(ss.labels) {
			continue
		}
		pts := make([]Point, 0, n)
		for i := 0; i < n; i++ {
			slot := (start + int64(i)) % int64(len(th.times))
			v := ss.values[slot]
			if math.IsNaN(v) {
				continue
			}
			pts = append(pts, Point{T: th.times[slot], V: v})
		}
		out = append(out, Series{Target: target, Name: name, Labels: ss.labels, Type: ss.typ, Points: pts, Stale: ss.lastSeen != th.next-1})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels.String() < out[j].Labels.String() })
	return out
}

// Names lists the series names retained for target, sorted.
func (s *Store) Names(target string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	th := s.targets[target]
	if th == nil {
		return nil
	}
	out := make([]string, 0, len(th.byName))
	for n := range th.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
