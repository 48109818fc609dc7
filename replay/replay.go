// Package replay plays a recording (a retrytop dump or an imported file)
// into a model.Store up to a playhead that moves like a video player's:
// play and pause, step one scrape, jump, change speed, go to either end.
// A Player is a ui.Source (Store, Statuses, Updates) and satisfies
// ui.Player, so the dashboard shows a replay exactly as it shows live
// data.
//
// It sits above analysis, beside ui: its timeline bar marks the bins where
// findings' thresholds were crossed (analysis.Timeline), so it reads
// conclusions, while dump below it only hands over snapshots.
//
// Time is injected: Options.Now is the wall clock that drives playback and
// Options.After the timer Run waits on, so tests move the clock by hand
// and call Tick instead of sleeping.
package replay

import (
	"context"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
)

// Speeds are the playback speeds + and - step through.
var Speeds = []float64{0.25, 0.5, 1, 2, 4, 8, 16, 32, 64}

// MinSpeed and MaxSpeed bound SetSpeed.
const (
	MinSpeed = 0.25
	MaxSpeed = 64
)

// Options tune a Player. The zero value is usable.
type Options struct {
	// Speed is the initial speed (default 1).
	Speed float64
	// From is the initial playhead (zero: the start of the recording).
	From time.Time
	// Play starts playing at once (otherwise the player starts paused).
	Play bool
	// Store bounds the store the dashboard reads (zero fields: defaults).
	Store model.StoreConfig
	// Lookback is how much data before the playhead a seek loads into
	// the store (default 5m: the 30 default timeline bins of 10 s).
	// Longer windows fill in as playback goes on.
	Lookback time.Duration
	// QuickLookback is the span a seek previews at once, before the rest
	// of Lookback is loaded: per target only its first and last scrape in
	// the span, so that the rows' rates over a window of that length are
	// there at once (default 30s, the default window; set it to the
	// window in use).
	QuickLookback time.Duration
	// NewTransform, when set, makes the function that rewrites every
	// snapshot before it is stored, as the scraper's Translate does live
	// (dialect). It is called for every rebuild of the store and
	// for ComputeSpikes, so a stateful transform starts afresh; each
	// transform is called for a target's snapshots in time order from one
	// goroutine at a time, for different targets' possibly at once (a
	// dialect.Translator allows that). It must not keep the snapshot it
	// is given past returning (dump.EachParsed).
	NewTransform func() Transform
	// IndexMemory is what the seek index (BuildIndex) may hold, in bytes
	// (0: half the process' memory limit; negative: no index).
	IndexMemory int64
	// SpikeBins is the number of bins of the timeline bar (default 120).
	SpikeBins int
	// Thresholds decide which bins spiked (default
	// analysis.DefaultThresholds()).
	Thresholds *analysis.Thresholds
	// Now is the wall clock (default time.Now) and After the timer
	// (default time.After); tests inject both.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// Transform rewrites a snapshot before it is stored.
type Transform func(*model.Snapshot) (*model.Snapshot, error)

// Spike levels of the timeline bar's bins.
const (
	SpikeNone     = 0
	SpikeWarning  = 1 // amplification or the provider-error share over its threshold
	SpikeCritical = 2 // amplification at or over the critical threshold
	SpikeUnknown  = 3 // not computed yet
)

// Player replays a recording. Its controls never block: they move the
// target playhead and wake the worker (Run), or are applied by the next
// Tick. It is safe for concurrent use.
type Player struct {
	rec  dump.Recording
	opts Options

	work sync.Mutex // serialises Tick

	mu         sync.Mutex
	store      *model.Store
	statuses   map[string]*model.TargetStatus
	next       int       // entries [loadedFrom, next) are in the store
	loaded     time.Time // the time the store is loaded up to (its playhead)
	playhead   time.Time // the requested playhead
	from       time.Time // the initial playhead (read-only after New)
	playing    bool
	speed      float64
	anchorWall time.Time // when playing: playhead = anchorData + (now-anchorWall)*speed
	anchorData time.Time
	start, end time.Time
	interval   time.Duration
	spikes     []uint8
	spikeBin   time.Duration
	lastErr    error
	gen        uint64    // bumped by every control: abandons a slow rebuild
	pending    time.Time // a seek loaded QuickLookback only: load Lookback up to here
	// seeking: a control moved the playhead farther than playing on
	// would (Seeking), at control generation seekGen; the Tick that
	// loads the store for it clears it.
	seeking   bool
	seekGen   uint64
	transform Transform // of the current store (nil: none); used under work
	// indexed: the current store was restored from the index, and playback
	// goes on from it (used under work, with tnext: each stored target's
	// scrape count).
	indexed bool
	tnext   map[string]int64

	index index

	updates   chan struct{}
	wake      chan struct{}
	targetIdx map[string]int // read-only after New
}

// New returns a player over rec, paused at opts.From (or the start) unless
// opts.Play. Call Run to play in real time, or Tick to advance by hand.
func New(rec dump.Recording, opts Options) *Player {
	if opts.Speed <= 0 {
		opts.Speed = 1
	}
	if opts.Lookback <= 0 {
		opts.Lookback = 5 * time.Minute
	}
	if opts.QuickLookback <= 0 {
		opts.QuickLookback = 30 * time.Second
	}
	opts.QuickLookback = min(opts.QuickLookback, opts.Lookback)
	if opts.SpikeBins <= 0 {
		opts.SpikeBins = 120
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	if opts.Thresholds == nil {
		th := analysis.DefaultThresholds()
		opts.Thresholds = &th
	}
	// Resolved once, the total series cap fixed (model.FixedConfig), so
	// that the index's store and every store of a seek agree.
	opts.Store = model.FixedConfig(opts.Store)
	p := &Player{
		rec:     rec,
		opts:    opts,
		speed:   clampSpeed(opts.Speed),
		updates: make(chan struct{}, 1),
		wake:    make(chan struct{}, 1),
		gen:     1,
	}
	if n := rec.Len(); n > 0 {
		p.start, p.end = rec.Time(0), rec.Time(n-1)
	}
	p.interval = medianInterval(rec)
	p.targetIdx = make(map[string]int)
	for i, t := range rec.Targets() {
		p.targetIdx[t] = i
	}
	p.spikes = make([]uint8, opts.SpikeBins)
	for i := range p.spikes {
		p.spikes[i] = SpikeUnknown
	}
	p.spikeBin = max(p.end.Sub(p.start)/time.Duration(opts.SpikeBins), time.Millisecond)
	p.reset()
	p.playhead = p.start
	if !opts.From.IsZero() {
		p.playhead = p.clamp(opts.From)
	}
	if n := rec.Len(); n > 0 && p.playhead.Equal(p.start) {
		// The first scrape round: at least one scrape of every target.
		p.playhead = p.firstRound()
	}
	p.from = p.playhead
	p.playing = opts.Play
	p.anchorWall, p.anchorData = opts.Now(), p.playhead
	return p
}

// firstRound is the time by which every target has had a scrape (capped
// at one interval after the start).
func (p *Player) firstRound() time.Time {
	seen := map[string]bool{}
	limit := p.start.Add(p.interval)
	for i := 0; i < p.rec.Len(); i++ {
		t := p.rec.Time(i)
		if t.After(limit) {
			break
		}
		seen[p.rec.Target(i)] = true
		if len(seen) == len(p.rec.Targets()) {
			return t
		}
	}
	return p.start
}

// medianInterval is the median gap between consecutive scrapes of one
// target (1 s when unknown).
func medianInterval(rec dump.Recording) time.Duration {
	last := map[string]time.Time{}
	var gaps []time.Duration
	for i := 0; i < rec.Len() && len(gaps) < 4096; i++ {
		t, tg := rec.Time(i), rec.Target(i)
		if prev, ok := last[tg]; ok && t.After(prev) {
			gaps = append(gaps, t.Sub(prev))
		}
		last[tg] = t
	}
	if len(gaps) == 0 {
		return time.Second
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	return gaps[len(gaps)/2]
}

func clampSpeed(x float64) float64 {
	if math.IsNaN(x) {
		return 1
	}
	return math.Min(math.Max(x, MinSpeed), MaxSpeed)
}

func (p *Player) clamp(t time.Time) time.Time {
	if t.Before(p.start) {
		return p.start
	}
	if t.After(p.end) {
		return p.end
	}
	return t
}

// reset empties the store (under p.mu or before the player is shared).
func (p *Player) reset() {
	p.store = model.NewStore(p.opts.Store)
	p.statuses = make(map[string]*model.TargetStatus)
	for _, t := range p.rec.Targets() {
		p.statuses[t] = &model.TargetStatus{Name: t}
	}
	p.next = 0
	p.loaded = time.Time{}
}

// ---- ui.Source ----

// Store is the store loaded up to the playhead.
func (p *Player) Store() *model.Store {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.store
}

// Statuses are the targets' statuses at the playhead, as the collector
// reported them when recording (a failed scrape shows the target down).
func (p *Player) Statuses() []model.TargetStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]model.TargetStatus, 0, len(p.statuses))
	for _, t := range p.rec.Targets() {
		if s := p.statuses[t]; s != nil {
			out = append(out, *s)
		}
	}
	return out
}

// Updates receives after the store or the playhead changed, and as the
// seek index grows (IndexProgress, a percent at a time).
func (p *Player) Updates() <-chan struct{} { return p.updates }

func (p *Player) notify() {
	select {
	case p.updates <- struct{}{}:
	default:
	}
}

func (p *Player) poke() {
	p.mu.Lock()
	p.gen++
	p.mu.Unlock()
	p.wakeRun()
}

// wakeRun makes Run tick now.
func (p *Player) wakeRun() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// ---- controls (ui.Player) ----

// Playing reports whether the playhead moves.
func (p *Player) Playing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.playing
}

// Toggle plays or pauses. Playing from the end starts over.
func (p *Player) Toggle() {
	p.mu.Lock()
	now := p.opts.Now()
	if p.playing {
		p.playhead = p.headAt(now)
		p.playing = false
	} else {
		if !p.playhead.Before(p.end) {
			p.playhead = p.start
		}
		p.playing = true
		p.anchorWall, p.anchorData = now, p.playhead
	}
	p.mu.Unlock()
	p.poke()
	p.notify()
}

// Step moves n scrape intervals forward (back when negative) and pauses.
func (p *Player) Step(n int) {
	p.mu.Lock()
	head := p.headAt(p.opts.Now())
	p.playing = false
	p.playhead = p.clamp(head.Add(time.Duration(n) * p.interval))
	p.mu.Unlock()
	p.moved()
}

// Jump moves the playhead by d; playing goes on from there.
func (p *Player) Jump(d time.Duration) {
	p.mu.Lock()
	now := p.opts.Now()
	p.playhead = p.clamp(p.headAt(now).Add(d))
	p.anchorWall, p.anchorData = now, p.playhead
	p.mu.Unlock()
	p.moved()
}

// SeekStart goes to the start of the recording, SeekEnd to its end.
func (p *Player) SeekStart() { p.seek(p.start) }

// SeekEnd goes to the end and pauses there.
func (p *Player) SeekEnd() {
	p.seek(p.end)
	p.mu.Lock()
	p.playing = false
	p.mu.Unlock()
}

// Seek moves the playhead to t (clamped to the recording).
func (p *Player) Seek(t time.Time) { p.seek(t) }

func (p *Player) seek(t time.Time) {
	p.mu.Lock()
	p.playhead = p.clamp(t)
	p.anchorWall, p.anchorData = p.opts.Now(), p.playhead
	p.mu.Unlock()
	p.moved()
}

// moved follows a control that set the playhead: it wakes the player and
// the views, and marks the player seeking when the store must be loaded
// again for the new playhead rather than played forward.
func (p *Player) moved() {
	p.mu.Lock()
	// Under the lock that bumps the generation: a Tick that reads this
	// generation loads for this playhead, and clears the mark.
	p.gen++
	if !p.near(p.loaded, p.playhead) {
		p.seeking, p.seekGen = true, p.gen
	}
	p.mu.Unlock()
	p.wakeRun()
	p.notify()
}

// near: a store loaded up to loaded reaches head by playing forward (a
// few scrapes), not by a seek.
func (p *Player) near(loaded, head time.Time) bool {
	return !loaded.IsZero() && !head.Before(loaded) && head.Sub(loaded) <= max(p.opts.QuickLookback, p.interval)
}

// Seeking reports that a control moved the playhead away from what the
// store holds (a seek, a jump, a step back) and the store has not been
// loaded for it yet: what the views show is of the moment before.
func (p *Player) Seeking() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seeking
}

// Speed is the playback speed.
func (p *Player) Speed() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.speed
}

// SetSpeed changes the speed (clamped to [MinSpeed, MaxSpeed]) without
// moving the playhead.
func (p *Player) SetSpeed(x float64) {
	p.mu.Lock()
	now := p.opts.Now()
	p.playhead = p.headAt(now)
	p.anchorWall, p.anchorData = now, p.playhead
	p.speed = clampSpeed(x)
	p.mu.Unlock()
	p.poke()
	p.notify()
}

// Position returns the playhead and the recording's start and end.
func (p *Player) Position() (pos, start, end time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.headAt(p.opts.Now()), p.start, p.end
}

// Length is the recording's duration.
func (p *Player) Length() time.Duration { return p.end.Sub(p.start) }

// Interval is the step of Step: the typical scrape interval.
func (p *Player) Interval() time.Duration { return p.interval }

// Spikes are the timeline bar's bins over [start, end], oldest first: one
// of the Spike levels each (SpikeUnknown until ComputeSpikes ran).
func (p *Player) Spikes() []uint8 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]uint8(nil), p.spikes...)
}

// Err is the newest error of a Tick (a frame that could not be read is
// shown as a failed scrape; this says why).
func (p *Player) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// headAt is the playhead at wall time now (under p.mu).
func (p *Player) headAt(now time.Time) time.Time {
	if !p.playing {
		return p.playhead
	}
	d := time.Duration(float64(now.Sub(p.anchorWall)) * p.speed)
	return p.clamp(p.anchorData.Add(d))
}

// ---- the worker ----

// Tick brings the store to the playhead: it applies the entries up to it,
// or after a jump (backwards, or ahead by more than QuickLookback) rebuilds
// the store in two steps: a preview of QuickLookback (shown at once), then,
// at the next Tick, all of Lookback (abandoned if a control comes
// meanwhile). At the end of the recording playback pauses. It returns how
// long until the next entry is due when playing (0 when paused or at the
// end), or 1ns when the full rebuild is still to do.
func (p *Player) Tick() time.Duration {
	p.work.Lock()
	defer p.work.Unlock()
	p.mu.Lock()
	now := p.opts.Now()
	head := p.headAt(now)
	if p.playing && !head.Before(p.end) {
		head = p.end
		p.playing = false
	}
	p.playhead = head
	if p.playing {
		p.anchorWall, p.anchorData = now, head
	}
	loaded, next, pending, gen := p.loaded, p.next, p.pending, p.gen
	p.mu.Unlock()

	changed := false
	switch {
	case p.near(loaded, head):
		// Forward by a few scrapes (playing, a step): append the entries
		// up to the playhead. Farther is a seek.
		st, statuses := p.current()
		end := p.until(next, head)
		if p.indexed {
			changed = true
			if !p.forward(st, next, end, head) {
				p.seekTo(head) // the index does not reach: as without one
			}
			break
		}
		p.load(next, end, st, statuses, p.transform, nil)
		p.mu.Lock()
		if p.store == st {
			p.next, p.loaded = end, head
		}
		p.mu.Unlock()
		changed = end != next
		if !pending.IsZero() && p.quickReach(pending, head) {
			// Still within the quick load: fill the rest of Lookback.
			if p.rebuild(pending, p.opts.Lookback, gen) {
				p.mu.Lock()
				p.pending = time.Time{}
				p.mu.Unlock()
				changed = true
			}
		} else if !pending.IsZero() {
			p.mu.Lock()
			p.pending = time.Time{}
			p.mu.Unlock()
		}
	case loaded.IsZero() && head.Equal(p.from):
		// The first load, at the playhead the replay starts from: all of
		// Lookback at once, so that the first screen shows the history
		// stepping there would have (no preview).
		if !p.restore(head) {
			p.indexed = false
			p.rebuild(head, p.opts.Lookback, 0)
		}
		changed = true
	case loaded.IsZero() || !head.Equal(loaded):
		p.seekTo(head)
		changed = true
	}
	p.mu.Lock()
	if p.seeking && p.seekGen <= gen {
		p.seeking = false // loaded for the controls read above
	}
	p.mu.Unlock()
	if changed {
		p.notify()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.pending.IsZero() {
		return time.Nanosecond
	}
	if !p.playing {
		return 0
	}
	if p.next >= p.rec.Len() {
		return time.Duration(float64(p.end.Sub(head)) / p.speed)
	}
	return max(time.Duration(float64(p.rec.Time(p.next).Sub(head))/p.speed), time.Millisecond)
}

// seekTo loads the store for a playhead far from the loaded one: restored
// from the index when it reaches head, else a preview of QuickLookback now
// and the rest of Lookback at the next Tick.
func (p *Player) seekTo(head time.Time) {
	if p.restore(head) {
		return
	}
	p.indexed = false
	if p.opts.QuickLookback < p.opts.Lookback && head.Sub(p.start) > p.opts.QuickLookback {
		p.preview(head)
		p.mu.Lock()
		p.pending = head
		p.mu.Unlock()
	} else {
		p.rebuild(head, p.opts.Lookback, 0)
	}
}

// restore makes the store the index's of the entries up to head: what
// playing from the start up to there builds. It returns false when the
// index does not reach head.
func (p *Player) restore(head time.Time) bool {
	end := p.until(0, head)
	if !p.index.covers(end) {
		return false
	}
	st, statuses, tnext, lastErr, ok := p.index.restore(end, p.opts.Store, p.rec.Targets())
	if !ok {
		return false
	}
	p.indexed, p.tnext, p.transform = true, tnext, nil
	p.mu.Lock()
	old := p.store
	p.store, p.statuses, p.next, p.loaded, p.pending = st, statuses, end, head, time.Time{}
	if lastErr != nil {
		p.lastErr = lastErr
	}
	p.mu.Unlock()
	if old != nil {
		// Its rings go to the next restore's store, unless a frame
		// holds it.
		old.Retire()
	}
	return true
}

// forward plays entries [next, end) from the index into st, the current
// store (restored from it); false when the index does not reach end.
func (p *Player) forward(st *model.Store, next, end int, head time.Time) bool {
	updates := map[string]model.TargetStatus{}
	lastErr, ok := p.index.forward(next, end, p.rec, st, updates, p.tnext)
	if !ok {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for t, ts := range updates {
		p.statuses[t] = &ts
	}
	if lastErr != nil {
		p.lastErr = lastErr
	}
	p.next, p.loaded = end, head
	return true
}

// quickReach: the store loaded for a seek to at is still worth completing
// at head.
func (p *Player) quickReach(at, head time.Time) bool {
	return !head.Before(at) && head.Sub(at) < p.opts.QuickLookback
}

// Settle ticks until the store holds all of Lookback before the playhead.
func (p *Player) Settle() {
	for p.Tick() == time.Nanosecond {
	}
}

// until returns the end of the entries from i at or before head.
func (p *Player) until(i int, head time.Time) int {
	for i < p.rec.Len() && !p.rec.Time(i).After(head) {
		i++
	}
	return i
}

// rebuild loads a new store with lookback of data up to head and makes it
// the current one. With gen not 0 (the controls' generation, which starts
// at 1) it gives up (false) when a control happened since gen was read.
func (p *Player) rebuild(head time.Time, lookback time.Duration, gen uint64) bool {
	st := model.NewStore(p.opts.Store)
	statuses := make(map[string]*model.TargetStatus)
	for _, t := range p.rec.Targets() {
		statuses[t] = &model.TargetStatus{Name: t}
	}
	from := dump.Search(p.rec, head.Add(-lookback))
	end := p.until(from, head)
	var tf Transform
	if p.opts.NewTransform != nil {
		tf = p.opts.NewTransform()
	}
	var abort func() bool
	if gen != 0 {
		abort = func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.gen != gen
		}
	}
	if !p.load(from, end, st, statuses, tf, abort) {
		return false
	}
	p.transform = tf
	p.mu.Lock()
	// Entries that arrived while loading (playback went on) follow.
	p.store, p.statuses, p.next, p.loaded = st, statuses, end, head
	p.mu.Unlock()
	return true
}

// preview makes a store of each target's first and last scrape within
// QuickLookback before head: the rows' rates over that window at once
// (a counter reset inside it aside), before the full rebuild.
func (p *Player) preview(head time.Time) {
	from := dump.Search(p.rec, head.Add(-p.opts.QuickLookback))
	end := p.until(from, head)
	first, last := map[string]int{}, map[string]int{}
	for i := from; i < end; i++ {
		t := p.rec.Target(i)
		if _, ok := first[t]; !ok {
			first[t] = i
		}
		last[t] = i
	}
	var pick []int
	for t, i := range first {
		pick = append(pick, i)
		if last[t] != i {
			pick = append(pick, last[t])
		}
	}
	sort.Ints(pick)
	st := model.NewStore(p.opts.Store)
	statuses := make(map[string]*model.TargetStatus)
	for _, t := range p.rec.Targets() {
		statuses[t] = &model.TargetStatus{Name: t}
	}
	var tf Transform
	if p.opts.NewTransform != nil {
		tf = p.opts.NewTransform()
	}
	entries := make([]parsed, len(pick))
	var wg sync.WaitGroup
	workers := max(runtime.GOMAXPROCS(0), 1)
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for k := range pick {
				if p.worker(pick[k], workers) == w {
					entries[k] = p.parse(pick[k])
				}
			}
		})
	}
	wg.Wait()
	for k, i := range pick {
		e := entries[k]
		if e.err == nil && tf != nil {
			e.snap, e.err = tf(e.snap)
		}
		p.store1(i, e, st, statuses)
	}
	p.mu.Lock()
	p.store, p.statuses, p.next, p.loaded = st, statuses, end, head
	p.mu.Unlock()
	p.transform = tf
}

// parsed is one entry read and transformed.
type parsed struct {
	snap *model.Snapshot
	err  error
}

// load appends entries [from, end) to st in order, reading and
// transforming them ahead on all cores (dump.EachParsed). abort, when not
// nil, is asked every loadChunk entries; load returns false when it said
// so.
func (p *Player) load(from, end int, st *model.Store, statuses map[string]*model.TargetStatus, tf Transform, abort func() bool) bool {
	n := 0
	return dump.EachParsed(p.rec, from, end, tf, func(e dump.Parsed) bool {
		if n%loadChunk == 0 && abort != nil && abort() {
			return false
		}
		n++
		p.store1(e.Index, parsed{e.Snap, e.Err}, st, statuses)
		return true
	})
}

// loadChunk is how many entries load stores between asking whether to
// stop.
const loadChunk = 32

// worker is the parse worker of entry i: by target.
func (p *Player) worker(i, workers int) int {
	return p.targetIdx[p.rec.Target(i)] % workers
}

func (p *Player) parse(i int) parsed {
	snap, err := p.rec.Snapshot(i)
	return parsed{snap, err}
}

func (p *Player) current() (*model.Store, map[string]*model.TargetStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.store, p.statuses
}

// store1 appends one parsed entry; statuses are only touched under p.mu.
func (p *Player) store1(i int, e parsed, st *model.Store, statuses map[string]*model.TargetStatus) {
	target, at := p.rec.Target(i), p.rec.Time(i)
	snap, err := e.snap, e.err
	var res model.AppendResult
	if err == nil {
		res = st.Append(snap)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ts := statuses[target]
	if ts == nil {
		ts = &model.TargetStatus{Name: target}
		statuses[target] = ts
	}
	updateStatus(ts, at, snap, err, res)
	if err != nil {
		if _, scrape := err.(*dump.ScrapeError); !scrape {
			p.lastErr = err
		}
	}
}

// Run plays until ctx ends: it ticks when an entry is due and at once
// after a control. It returns nil.
func (p *Player) Run(ctx context.Context) error {
	for {
		wait := p.Tick()
		var timer <-chan time.Time
		if wait > 0 {
			timer = p.opts.After(min(wait, 250*time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		case <-timer:
		}
	}
}

// ---- the timeline bar ----

// ComputeSpikes reads the whole recording once into a store of its own
// and marks the bins where, for any row, amplification or the share of
// attempts the provider failed went over the thresholds (analysis'
// timeline per row). It can take a while on a large recording: run it
// in a goroutine; ctx stops it.
func (p *Player) ComputeSpikes(ctx context.Context) error {
	rec, err := p.rec.Fork() // not to disturb the playback's decoding
	if err != nil {
		return err
	}
	defer rec.Close()
	n := rec.Len()
	if n == 0 {
		return nil
	}
	// A bin's rates need only each target's scrapes around each bin edge
	// (analysis.Timeline reads a counter at an edge between them), so only
	// those are read: two scrapes per target and bin at most, whatever the
	// recording's length.
	pick := edgeScrapes(rec, p.start, p.spikeBin, len(p.spikes))
	st := model.NewStore(model.StoreConfig{History: len(p.spikes) + 2, MaxSeriesPerTarget: p.opts.Store.MaxSeriesPerTarget})
	var tf Transform
	if p.opts.NewTransform != nil {
		tf = p.opts.NewTransform()
	}
	for k, i := range pick {
		if k%64 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		snap, err := rec.Snapshot(i)
		if err == nil && tf != nil {
			snap, err = tf(snap)
		}
		if err != nil {
			continue
		}
		st.Append(contractOnly(snap))
	}
	levels := SpikeLevels(st, p.start, p.end, p.spikeBin, len(p.spikes), *p.opts.Thresholds)
	p.mu.Lock()
	p.spikes = levels
	p.mu.Unlock()
	p.notify()
	return nil
}

// edgeScrapes returns, in time order, the entries that are some target's
// last at or before, or first after, one of the edges start+k*bin, k =
// 0..n: the samples around every edge a bin's increase is read between.
func edgeScrapes(rec dump.Recording, start time.Time, bin time.Duration, n int) []int {
	last := map[string]int{}
	after := map[string]bool{} // the target's next entry follows an edge
	seen := map[int]bool{}
	var out []int
	add := func(i int) {
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	k := 0
	for i := 0; i < rec.Len(); i++ {
		for k <= n && rec.Time(i).After(start.Add(time.Duration(k)*bin)) {
			for t, j := range last {
				add(j)
				after[t] = true
			}
			k++
		}
		t := rec.Target(i)
		if after[t] {
			add(i)
			after[t] = false
		}
		last[t] = i
	}
	for _, j := range last {
		add(j)
	}
	sort.Ints(out)
	return out
}

// SpikeLevels computes bins of width bin from start (n of them) over the
// rows of st: SpikeCritical where some row's amplification reached
// th.AmplificationCritical, SpikeWarning where it passed th.Amplification
// or the provider errors and timeouts passed th.FailureShare of the
// attempts, for rows with at least th.MinOriginalsPerS originals.
func SpikeLevels(st *model.Store, start, end time.Time, bin time.Duration, n int, th analysis.Thresholds) []uint8 {
	out := make([]uint8, n)
	startMs, endMs := start.UnixMilli(), end.UnixMilli()
	for _, t := range st.Targets() {
		for _, dep := range analysis.Dependencies(st, t) {
			tl := analysis.Timeline(st, model.Key{Target: t, Dependency: dep}, bin, startMs, endMs)
			for i, s := range tl {
				if i >= n {
					break
				}
				out[i] = max(out[i], spikeLevel(s, th))
			}
		}
	}
	return out
}

func spikeLevel(s model.Signals, th analysis.Thresholds) uint8 {
	orig, ok := s.OriginalsPerS.Get()
	if !ok || orig < th.MinOriginalsPerS {
		return SpikeNone
	}
	lvl := uint8(SpikeNone)
	if amp, ok := s.Amplification.Get(); ok {
		switch {
		case amp >= th.AmplificationCritical:
			return SpikeCritical
		case amp > th.Amplification:
			lvl = SpikeWarning
		}
	}
	if att, ok := s.AttemptsPerS.Get(); ok && att > 0 {
		fail := s.ProviderErrorsPerS.Or(0) + s.TimeoutsPerS.Or(0)
		if fail/att >= th.FailureShare {
			lvl = SpikeWarning
		}
	}
	return lvl
}

// ContractFamily reports whether a family belongs to the metric contract
// (retry_*) or the server-side families analysis joins onto rows: the only
// families the dashboard reads.
func ContractFamily(name string) bool {
	return strings.HasPrefix(name, "retry_") || strings.HasPrefix(name, "sim_provider_")
}

func contractOnly(s *model.Snapshot) *model.Snapshot {
	out := &model.Snapshot{Target: s.Target, Time: s.Time}
	for _, f := range s.Families {
		if ContractFamily(f.Name) {
			out.Families = append(out.Families, f)
		}
	}
	return out
}
