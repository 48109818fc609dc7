package dump

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/internal/gcpercent"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// Recording is a recording opened for replay or analysis: one entry per
// scrape of one target, in time order. A dump is parsed entry by entry
// when asked; an imported file is parsed whole when opened.
type Recording interface {
	Len() int
	Target(i int) string
	Time(i int) time.Time
	// Snapshot parses entry i. A failed scrape returns a *ScrapeError;
	// a body that does not parse, the parser's error.
	Snapshot(i int) (*model.Snapshot, error)
	// Targets lists the targets, sorted.
	Targets() []string
	// Problems lists damage that was skipped when opening (dumps only).
	Problems() []error
	// Format is the file's format name.
	Format() string
	// Fork returns a recording of the same data for a second reader going
	// through it at the same time (a dump decodes fastest in order, per
	// reader). Close it after use; the data stays open until the original
	// is closed.
	Fork() (Recording, error)
	Close() error
}

// ScrapeError is a recorded failed scrape: the target was down.
type ScrapeError struct {
	Target string
	Msg    string
}

func (e *ScrapeError) Error() string { return e.Msg }

// OpenOptions tune OpenRecording.
type OpenOptions struct {
	// Format forces a format (one of Formats); "" detects it.
	Format string
	// Parser parses dump bodies and concat snapshots (default
	// expo.ExpfmtParser{}).
	Parser expo.Parser
	// Filter keeps only the families it selects (nil: all).
	Filter func(name string) bool
	// Target names imported series without an instance label (default:
	// the file's base name).
	Target string
	// Wrap, when not nil, puts the caller's parse around the recording's
	// own (a dialect translator's Parsing, which must see every parse):
	// the recording parses with Wrap(p), where p is expo.ExpfmtParser
	// that reads a dump's frame whose text kept its previous frame's
	// structure through a value map instead of parsing it (values.go).
	// Each Fork wraps its own p. Parser is then not used.
	Wrap func(p expo.Parser) expo.Parser
}

// OpenRecording opens a dump or imports a file in another format.
func OpenRecording(path string, opts OpenOptions) (Recording, error) {
	lines := expo.NewLineCaches(0) // the recording's targets' line caches
	if opts.Wrap != nil {
		opts.Parser = opts.Wrap(expo.ExpfmtParser{Lines: lines}) // imports: no value maps
	}
	if opts.Parser == nil {
		opts.Parser = expo.ExpfmtParser{Lines: lines}
	}
	format := opts.Format
	if format == "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		head := make([]byte, 64<<10)
		n, err := io.ReadFull(f, head)
		f.Close()
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if format, err = DetectFormat(head[:n]); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if format == FormatDump {
		r, err := Open(path)
		if err != nil {
			return nil, err
		}
		if opts.Wrap != nil {
			return newWrappedRecording(r, opts.Wrap, opts.Filter, new(atomic.Int64), lines), nil
		}
		return newDumpRecording(r, opts.Parser, opts.Filter), nil
	}
	var problems []error
	snaps, err := Import(path, format, ImportOptions{Target: opts.Target, Parser: opts.Parser, Filter: opts.Filter,
		Warn: func(err error) { problems = append(problems, err) }})
	if err != nil {
		return nil, err
	}
	rec := NewSnapshotRecording(snaps, format).(*snapRecording)
	rec.problems = problems
	return rec, nil
}

type dumpRecording struct {
	r      *Reader
	parser expo.Parser
	filter func(string) bool
	wrap   func(expo.Parser) expo.Parser // OpenOptions.Wrap, for Forks
	lines  *expo.LineCaches              // the line caches of its own parse under wrap, shared with Forks
	// vals holds each target's last mapped parse (values.go), kept the
	// bytes they keep, shared with Forks; reading is the frame being
	// parsed under wrap. All used under r's lock only.
	vals    map[string]*valueState
	kept    *atomic.Int64
	reading *valueFrame
	mapped  int // frames read through a map
}

func newDumpRecording(r *Reader, parser expo.Parser, filter func(string) bool) *dumpRecording {
	return &dumpRecording{r: r, parser: parser, filter: filter, vals: make(map[string]*valueState), kept: new(atomic.Int64)}
}

// newWrappedRecording is a recording parsing with wrap(its own parse).
func newWrappedRecording(r *Reader, wrap func(expo.Parser) expo.Parser, filter func(string) bool, kept *atomic.Int64, lines *expo.LineCaches) *dumpRecording {
	d := &dumpRecording{r: r, filter: filter, wrap: wrap, lines: lines, vals: make(map[string]*valueState), kept: kept}
	d.parser = wrap(ownParser{d})
	return d
}

func (d *dumpRecording) Len() int             { return d.r.Len() }
func (d *dumpRecording) Target(i int) string  { return d.r.Info(i).Target }
func (d *dumpRecording) Time(i int) time.Time { return d.r.Info(i).Time }
func (d *dumpRecording) Targets() []string    { return d.r.Targets() }
func (d *dumpRecording) Problems() []error    { return d.r.Problems() }
func (d *dumpRecording) Format() string       { return FormatDump }

// Close closes the recording and gives back what its value maps keep.
func (d *dumpRecording) Close() error {
	for _, vs := range d.vals {
		d.kept.Add(-vs.size)
	}
	clear(d.vals)
	return d.r.Close()
}

func (d *dumpRecording) Fork() (Recording, error) {
	c, err := d.r.Clone()
	if err != nil {
		return nil, err
	}
	if d.wrap != nil {
		return newWrappedRecording(c, d.wrap, d.filter, d.kept, d.lines), nil
	}
	f := newDumpRecording(c, d.parser, d.filter)
	f.kept = d.kept
	return f, nil
}

// Reader returns the dump under the recording.
func (d *dumpRecording) Reader() *Reader { return d.r }

func (d *dumpRecording) Snapshot(i int) (*model.Snapshot, error) {
	return d.snapshotValues(i)
}

// snapshotCopy is Snapshot as it was before value maps: the frame copied,
// then parsed (the tests' reference).
func (d *dumpRecording) snapshotCopy(i int) (*model.Snapshot, error) {
	f, err := d.r.Frame(i)
	if err != nil {
		return nil, err
	}
	if f.Err != "" {
		return nil, &ScrapeError{Target: f.Target, Msg: f.Err}
	}
	fams, err := d.parser.Parse(f.Target, f.Body, f.ContentType, d.filter)
	if err != nil {
		return nil, err
	}
	return &model.Snapshot{Target: f.Target, Time: f.Time, Families: fams}, nil
}

// DumpReader returns the dump a recording reads, or nil for an import.
func DumpReader(rec Recording) *Reader {
	if d, ok := rec.(*dumpRecording); ok {
		return d.r
	}
	return nil
}

// NewSnapshotRecording is a recording of snapshots already in memory (an
// import), sorted by time (stable).
func NewSnapshotRecording(snaps []model.Snapshot, format string) Recording {
	s := &snapRecording{snaps: snaps, format: format}
	sort.SliceStable(s.snaps, func(i, j int) bool { return s.snaps[i].Time.Before(s.snaps[j].Time) })
	seen := map[string]bool{}
	for _, sn := range snaps {
		if !seen[sn.Target] {
			seen[sn.Target] = true
			s.targets = append(s.targets, sn.Target)
		}
	}
	sort.Strings(s.targets)
	return s
}

type snapRecording struct {
	snaps    []model.Snapshot
	targets  []string
	format   string
	problems []error // what the import dropped, with its place
}

func (s *snapRecording) Len() int             { return len(s.snaps) }
func (s *snapRecording) Target(i int) string  { return s.snaps[i].Target }
func (s *snapRecording) Time(i int) time.Time { return s.snaps[i].Time }
func (s *snapRecording) Targets() []string    { return s.targets }
func (s *snapRecording) Problems() []error    { return s.problems }
func (s *snapRecording) Format() string       { return s.format }
func (s *snapRecording) Close() error         { return nil }
func (s *snapRecording) Fork() (Recording, error) {
	return s, nil
}
func (s *snapRecording) Snapshot(i int) (*model.Snapshot, error) {
	sn := s.snaps[i]
	return &sn, nil
}

// Search returns the first entry of rec at or after t (rec.Len() if none).
func Search(rec Recording, t time.Time) int {
	return sort.Search(rec.Len(), func(i int) bool { return !rec.Time(i).Before(t) })
}

// LoadStore appends every entry of rec into st, in time order, and returns
// the targets' statuses as a collector would report them after the last
// entry. Entries that cannot be read count as failed scrapes. transform,
// when not nil, rewrites each snapshot first (a dialect, as live).
func LoadStore(rec Recording, st *model.Store, transform func(*model.Snapshot) (*model.Snapshot, error)) []model.TargetStatus {
	return LoadStoreRange(rec, 0, rec.Len(), st, transform)
}

// WholeHistory is the history a store needs to hold every scrape of
// rec's entries [lo, hi): the most entries of one target, and one more
// (at least 2).
func WholeHistory(rec Recording, lo, hi int) int {
	per := map[string]int{}
	hist := 2
	for i := lo; i < hi; i++ {
		t := rec.Target(i)
		per[t]++
		hist = max(hist, per[t]+1)
	}
	return hist
}

// LoadWhole loads every entry of rec into a new store that keeps them all
// (WholeHistory), through transform as LoadStore does.
func LoadWhole(rec Recording, transform func(*model.Snapshot) (*model.Snapshot, error)) (*model.Store, []model.TargetStatus) {
	st := model.NewStore(model.StoreConfig{History: WholeHistory(rec, 0, rec.Len())})
	return st, LoadStore(rec, st, transform)
}

// Range returns the entries [lo, hi) of rec whose times are within
// [from, to]; a zero from or to leaves that side open.
func Range(rec Recording, from, to time.Time) (lo, hi int) {
	lo, hi = 0, rec.Len()
	if !from.IsZero() {
		lo = Search(rec, from)
	}
	if !to.IsZero() {
		hi = Search(rec, to.Add(1))
	}
	return lo, max(lo, hi)
}

// LoadStoreRange is LoadStore of the entries [lo, hi) only: a dump decodes
// just those (and, for each target's first, the delta chain from its key
// frame), so a window of a long recording costs what the window holds.
//
// Decoding, parsing and transforming run ahead of storing (EachParsed),
// and the store takes every entry in entry order: the same snapshots in
// the same order as ApplyEntry one by one (TestAnalyzeWholeSameAsSequential
// in analyze).
func LoadStoreRange(rec Recording, lo, hi int, st *model.Store, transform func(*model.Snapshot) (*model.Snapshot, error)) []model.TargetStatus {
	return LoadStoreRangeWith(rec, lo, hi, st, Loading{Transform: transform})
}

// Loading is what LoadStoreRangeWith does beside storing.
type Loading struct {
	// Transform, when not nil, rewrites each snapshot first (a dialect,
	// as live).
	Transform func(*model.Snapshot) (*model.Snapshot, error)
	// Release, when not nil, is given each transformed snapshot once the
	// store has taken it, when nothing reads it any longer
	// (dialect.Translator.Release).
	Release func(*model.Snapshot)
	// After, when not nil, is called once each entry is applied, in entry
	// order, with its time and whether its scrape went to the store
	// (false: a failed scrape or one that did not parse):
	// analysis.WholeBuilder.Observe.
	After func(at time.Time, stored bool)
	// Stop, when not nil, is asked after each entry: true ends the load
	// there (analysis.WholeBuilder.Err: its report is over its budget).
	Stop func() bool
}

// LoadStoreRangeWith is LoadStoreRange as l says.
func LoadStoreRangeWith(rec Recording, lo, hi int, st *model.Store, l Loading) []model.TargetStatus {
	statuses := make(map[string]*model.TargetStatus)
	for _, t := range rec.Targets() {
		statuses[t] = &model.TargetStatus{Name: t}
	}
	EachParsed(rec, lo, hi, l.Transform, func(e Parsed) bool {
		applyParsed(e, st, statuses)
		if l.Release != nil && e.Err == nil && l.Transform != nil {
			l.Release(e.Snap)
		}
		if l.After != nil {
			l.After(e.At, e.Err == nil)
		}
		return l.Stop == nil || !l.Stop()
	})
	out := make([]model.TargetStatus, 0, len(statuses))
	for _, t := range rec.Targets() {
		out = append(out, *statuses[t])
	}
	return out
}

// Parsed is one entry of a recording read and transformed.
type Parsed struct {
	Index  int
	Target string
	At     time.Time
	Snap   *model.Snapshot
	Err    error // a *ScrapeError for a failed scrape; else the parse's or transform's
}

// EachParsed calls fn with each entry of [lo, hi) of rec, read and
// transformed (when transform is not nil), in entry order, until fn
// returns false; it reports whether it went through them all.
//
// Entries are decoded, parsed and transformed ahead of fn on up to
// GOMAXPROCS goroutines, each with its own Fork of rec and its own share
// of the targets: a target's entries are read and transformed in order by
// one goroutine (a dump decodes fastest in order, and transform keeps
// per-target state), different targets' at once; transform must allow
// that (a dialect.Translator does). transform must not keep its argument
// past returning, unless its result shares the argument's memory: a
// recording may read a later entry into it (dumpRecording.release). A
// short range is read on the calling goroutine from rec itself.
func EachParsed(rec Recording, lo, hi int, transform func(*model.Snapshot) (*model.Snapshot, error), fn func(Parsed) bool) bool {
	n := max(1, min(runtime.GOMAXPROCS(0), len(rec.Targets()), maxLoaders))
	if hi-lo < minParallel {
		n = 1
	}
	if n == 1 {
		for i := lo; i < hi; i++ {
			if !fn(readEntry(rec, i, transform)) {
				return false
			}
		}
		return true
	}
	owner := make(map[string]int)
	readers := []Recording{rec}
	for len(readers) < n {
		f, err := rec.Fork()
		if err != nil {
			break // fewer loaders: each takes more targets
		}
		defer f.Close()
		readers = append(readers, f)
	}
	n = len(readers)
	for k, t := range rec.Targets() {
		owner[t] = k % n // a target missing from Targets goes to loader 0 on both sides
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait() // no loader reads a Fork after it is closed
	defer close(stop)
	chans := make([]chan Parsed, n)
	for w := range chans {
		chans[w] = make(chan Parsed, loadAhead)
		wg.Go(func() {
			r, out := readers[w], chans[w]
			defer close(out)
			for i := lo; i < hi; i++ {
				if owner[r.Target(i)] != w {
					continue
				}
				select {
				case out <- readEntry(r, i, transform):
				case <-stop:
					return
				}
			}
		})
	}
	for i := lo; i < hi; i++ {
		if !fn(<-chans[owner[rec.Target(i)]]) {
			return false
		}
	}
	return true
}

// minParallel is the fewest entries EachParsed reads on several
// goroutines: a shorter range costs less than starting them (each Fork
// decodes a target's delta chain from its key frame again).
const minParallel = 16

// StreamGCPercent is the collector's GOGC while a recording too long for
// its store streams through it and its report is built (docs/performance.md,
// "Analyze"). Loading makes garbage at many times its live heap, which
// once argued for a high GOGC (400); but the heap then grew to the memory
// limit, where the limit's own collections and the scavenger giving pages
// back cost more than the marking saved: on the 1-hour dump at 400, 8.6-9.8
// s user and 1.9-2.7 s system, 490-495 MB RSS; at 100, 8.8 s and 0.4 s, 365
// MB; at 50, 9.8-11.3 s and 0.6 s, 280-296 MB. Since analyze's store keeps
// its short history unsealed (model.StoreConfig.Unsealed), which makes
// little garbage and holds about 10 MB more, 40: 7.3-7.6 s user, 276-289
// MB, against 8.1-8.7 s and 270-296 MB sealed at 50. A short span (a 30 s
// window) keeps GOGC 100.
const StreamGCPercent = 40

// StreamGC sets GOGC to StreamGCPercent when a store that keeps kept
// scrapes of a target is to take a span of more (scrapes: the most of any
// target), unless the environment sets GOGC, and returns what puts the
// previous setting back: defer StreamGC(kept, scrapes)().
func StreamGC(kept, scrapes int) (restore func()) {
	if kept >= scrapes {
		return func() {}
	}
	return gcpercent.Set(StreamGCPercent)
}

// maxLoaders bounds LoadStoreRange's reading goroutines: past the cores
// the store's one goroutine is the bottleneck.
const maxLoaders = 8

// loadAhead is how many entries LoadStoreRange parses ahead of the store:
// enough to keep both goroutines busy over a slow frame, few enough that
// the parsed snapshots waiting stay small (a few MB at 2,000 series).
const loadAhead = 8

// readEntry reads entry i of rec and transforms it.
func readEntry(rec Recording, i int, transform func(*model.Snapshot) (*model.Snapshot, error)) Parsed {
	e := Parsed{Index: i, Target: rec.Target(i), At: rec.Time(i)}
	e.Snap, e.Err = rec.Snapshot(i)
	if e.Err == nil && transform != nil {
		raw := e.Snap
		e.Snap, e.Err = transform(raw)
		if r, ok := rec.(releaser); ok {
			r.release(raw, e.Snap)
		}
	}
	return e
}

// releaser is a recording whose snapshots' memory can serve its next
// ones.
type releaser interface {
	// release gives back raw, a snapshot the recording returned, which
	// its caller no longer reads, unless inUse (nil, or raw's transform
	// the caller keeps) shares its memory.
	release(raw, inUse *model.Snapshot) bool
}

// release implements releaser: the target's value map copies a later
// frame's parse into raw's families (expo.SlotMap.Release). It reports
// whether raw was taken.
func (d *dumpRecording) release(raw, inUse *model.Snapshot) bool {
	var keep []model.Family
	if inUse != nil {
		keep = inUse.Families
	}
	d.r.mu.Lock()
	defer d.r.mu.Unlock()
	vs := d.vals[raw.Target]
	return vs != nil && vs.slots.Release(raw.Families, keep)
}

// ApplyEntry appends entry i of rec to st and updates its target's status
// as the scraper would.
func ApplyEntry(rec Recording, i int, st *model.Store, statuses map[string]*model.TargetStatus, transform func(*model.Snapshot) (*model.Snapshot, error)) {
	applyParsed(readEntry(rec, i, transform), st, statuses)
}

// applyParsed stores one read entry and updates its target's status.
func applyParsed(e Parsed, st *model.Store, statuses map[string]*model.TargetStatus) {
	target, at, snap, err := e.Target, e.At, e.Snap, e.Err
	ts := statuses[target]
	if ts == nil {
		ts = &model.TargetStatus{Name: target}
		statuses[target] = ts
	}
	ts.Scrapes++
	ts.LastScrape = at
	if err != nil {
		ts.Up = false
		ts.Failures++
		ts.LastError = safetext.Terminal(err.Error())
		return
	}
	res := st.Append(snap)
	ts.Up = true
	ts.LastError = ""
	ts.LastSuccess = at
	ts.Series = snap.SeriesCount()
	ts.DroppedSeries = res.Dropped
}

// Notes says how a dump recording's index was built when the file had no
// usable index frames (dumps only; see Reader.Notes): worth one line on
// stderr, not a problem with the data.
func Notes(rec Recording) []string {
	if r := DumpReader(rec); r != nil {
		return r.Notes()
	}
	return nil
}
