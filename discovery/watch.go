package discovery

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/scrape"
)

// DefaultPoll is how often a Watcher looks at its files' size and
// modification time: cheap (a stat per file), and quick enough for a
// dashboard to follow a deployment.
const DefaultPoll = 2 * time.Second

// DefaultMaxTargets bounds the discovered targets of a Watcher.
const DefaultMaxTargets = 10000

// Options configure a Watcher.
type Options struct {
	// Static targets (command line, --config) come first in every set
	// and are never removed; a discovered target with the URL of one is
	// left out.
	Static []scrape.Target
	// Interval is the scrape interval of targets whose job and labels set
	// none (default scrape.DefaultInterval).
	Interval time.Duration
	// OverrideInterval makes Interval win over scrape_interval and
	// __scrape_interval__ (the user gave --interval).
	OverrideInterval bool
	// MaxTargets bounds discovered targets (default DefaultMaxTargets);
	// the rest are skipped with a warning.
	MaxTargets int
	// Poll is the period of Run's checks (default DefaultPoll).
	Poll time.Duration
	// Clock decides when a file is due for a full re-read (its
	// refresh_interval); default time.Now.
	Clock func() time.Time
	// Ticks, when set, drives Run instead of a ticker every Poll (tests).
	Ticks <-chan time.Time
}

// Set is one target set and what is wrong with its sources.
type Set struct {
	Targets []scrape.Target
	// Errors are files that cannot be read or parsed now; the targets of
	// their last good content are kept. Sanitised.
	Errors []string
	// Warnings are parts of a config not read and targets skipped.
	// Sanitised.
	Warnings []string
}

// Watcher follows the files of some jobs and yields their target set
// whenever it changes. A file is re-read when its size or modification
// time changes, or its refresh_interval has passed; the content's hash
// decides whether it really changed. A file that becomes unreadable or
// invalid keeps its last good targets and is reported in Set.Errors until
// it is fixed; a file that no longer matches a glob is dropped with its
// targets.
type Watcher struct {
	jobs []*Job
	opts Options

	mu      sync.Mutex // guards all below; Refresh runs one at a time
	files   map[string]*fileState
	cur     Set
	started bool
}

// fileState is what a Watcher knows of one file.
type fileState struct {
	size   int64
	mtime  time.Time
	readAt time.Time
	read   bool // size and mtime are those of the last good read
	hash   [sha256.Size]byte
	parsed bool    // hash is that of the last parsed content
	groups []Group // of the last good content
	good   bool    // some content parsed: groups are real
	err    error   // the file's problem now, nil when its last read parsed
}

// NewWatcher watches the files of jobs. Nothing is read until Refresh.
func NewWatcher(jobs []*Job, opts Options) *Watcher {
	if opts.Interval <= 0 {
		opts.Interval = scrape.DefaultInterval
	}
	if opts.MaxTargets <= 0 {
		opts.MaxTargets = DefaultMaxTargets
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Watcher{jobs: jobs, opts: opts, files: make(map[string]*fileState)}
}

// Current returns the last set Refresh computed.
func (w *Watcher) Current() Set {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

// Run calls Refresh every Poll (or on every Ticks) until ctx ends, and
// apply with each set that differs from the one before.
func (w *Watcher) Run(ctx context.Context, apply func(Set)) {
	ticks := w.opts.Ticks
	if ticks == nil {
		t := time.NewTicker(w.opts.Poll)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			if set, changed := w.Refresh(); changed {
				apply(set)
			}
		}
	}
}

// Refresh checks every file once and returns the target set, and whether
// it (targets, errors or warnings) differs from the last one. The first
// call reads everything and reports a change.
func (w *Watcher) Refresh() (Set, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.opts.Clock()
	dirty := !w.started
	var errs, warns []string
	groups := make([][]Group, len(w.jobs))
	checked := make(map[string]bool, len(w.files))
	for ji, j := range w.jobs {
		warns = append(warns, j.Warnings...)
		groups[ji] = append(groups[ji], j.Static...)
		used := make(map[string]bool) // a file matched twice in a job counts once
		for _, fsd := range j.Files {
			paths, perrs := expand(fsd.Patterns)
			errs = append(errs, perrs...)
			for _, p := range paths {
				if used[p] {
					continue
				}
				used[p] = true
				st := w.files[p]
				if st == nil {
					st = &fileState{}
					w.files[p] = st
				}
				if !checked[p] { // a file shared by jobs is read once
					checked[p] = true
					if w.check(p, st, now, fsd.Refresh) {
						dirty = true
					}
					if st.err != nil {
						msg := safetext.Terminal(st.err.Error())
						if st.good {
							msg += "; its last good targets are kept"
						}
						errs = append(errs, msg)
					}
				}
				groups[ji] = append(groups[ji], st.groups...)
			}
		}
	}
	for p := range w.files {
		if !checked[p] {
			delete(w.files, p) // no longer matched: its targets go
			dirty = true
		}
	}
	if !dirty && slices.Equal(errs, w.cur.Errors) {
		return w.cur, false
	}
	targets, twarns := build(w.opts.Static, w.jobs, groups, &w.opts)
	warns = append(warns, twarns...)
	set := Set{Targets: targets, Errors: errs, Warnings: warns}
	changed := !w.started || !reflect.DeepEqual(set, w.cur)
	w.started = true
	w.cur = set
	return set, changed
}

// check looks at one file and re-reads it when it may have changed. It
// reports whether its groups or its error changed.
func (w *Watcher) check(path string, st *fileState, now time.Time, refresh time.Duration) bool {
	prevErr := errText(st.err)
	fi, err := os.Stat(path)
	if err != nil {
		st.err = fmt.Errorf("%s: %w", safetext.Terminal(path), unwrapPath(err))
		st.read = false
		return errText(st.err) != prevErr
	}
	if fi.IsDir() {
		st.err = fmt.Errorf("%s: is a directory", safetext.Terminal(path))
		st.read = false
		return errText(st.err) != prevErr
	}
	if st.read && fi.Size() == st.size && fi.ModTime().Equal(st.mtime) && now.Sub(st.readAt) < refresh {
		return false
	}
	b, err := readCapped(path)
	st.readAt = now
	if err != nil {
		st.err = err
		st.read = false
		return errText(st.err) != prevErr
	}
	st.size, st.mtime, st.read = fi.Size(), fi.ModTime(), true
	h := sha256.Sum256(b)
	if st.parsed && h == st.hash {
		if st.err != nil && !isParseErr(st.err) {
			st.err = nil // readable again, same content as the last parse
		}
		return errText(st.err) != prevErr
	}
	st.hash, st.parsed = h, true
	groups, err := ParseFileSD(path, b)
	if err != nil {
		st.err = parseErr{err}
		return errText(st.err) != prevErr
	}
	st.groups, st.err, st.good = groups, nil, true
	return true
}

// parseErr marks an error of the content, which stays while the content
// does.
type parseErr struct{ error }

func (e parseErr) Unwrap() error { return e.error }

func isParseErr(err error) bool {
	_, ok := err.(parseErr)
	return ok
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// expand turns patterns into sorted paths: a pattern without glob
// characters is a file that must exist (its absence is an error reported
// by check), a glob matches whatever exists now.
func expand(patterns []string) ([]string, []string) {
	var paths, errs []string
	for _, p := range patterns {
		if !hasMeta(p) {
			paths = append(paths, filepath.Clean(p))
			continue
		}
		m, err := filepath.Glob(p)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %s", safetext.Terminal(p), safetext.Terminal(err.Error())))
			continue
		}
		paths = append(paths, m...)
	}
	sort.Strings(paths)
	return slices.Compact(paths), errs
}

func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[\`) }
