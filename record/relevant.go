package record

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/sources"
)

// Relevant is record --only-relevant: it rewrites each body handed to
// the dump to the lines of the families some dialect reads
// (expo.SelectBody with the dialects' filter), which analyze, replay
// and export read alike, since they read a recording through the same
// filter. Whether a dialect reads a target is decided on its first body
// that parses; a target none reads is written whole from then on, with
// one warning: its families are what 'retrytop dialect draft' needs, and
// a recording cannot be made again.
type Relevant struct {
	tr     *dialect.Translator
	forced map[string]string // target -> the dialect name=URL@dialect forces
	urls   map[string]string // target -> URL without credentials, for the hint
	warn   func(string)

	mu      sync.Mutex
	targets map[string]*relevantTarget

	served, written atomic.Int64 // body bytes
}

// relevantTarget is Relevant's state for one target. The scraper calls
// OnScrape for one target at a time, so only the map needs the lock.
type relevantTarget struct {
	decided, whole bool
	buf            []byte // the selected body, reused
}

// NewRelevant selects for src's targets with src's dialects; warn is told
// of each target no dialect reads.
func NewRelevant(src *sources.Sources, warn func(string)) *Relevant {
	o := &Relevant{tr: src.Translate, forced: map[string]string{}, urls: map[string]string{},
		warn: warn, targets: map[string]*relevantTarget{}}
	for _, t := range src.Targets {
		o.urls[t.Name] = scrape.SafeURL(t.URL)
		if t.Dialect != "" {
			o.forced[t.Name] = t.Dialect
		}
	}
	return o
}

// Hook wraps a dump hook: bodies are selected before next writes them.
func (o *Relevant) Hook(next func(string, time.Time, []byte, string, error)) func(string, time.Time, []byte, string, error) {
	return func(target string, at time.Time, body []byte, contentType string, err error) {
		if err == nil {
			body = o.body(target, at, body, contentType)
		}
		next(target, at, body, contentType, err)
	}
}

// body returns what to write of one target's body.
func (o *Relevant) body(target string, at time.Time, body []byte, contentType string) []byte {
	o.mu.Lock()
	st := o.targets[target]
	if st == nil {
		st = &relevantTarget{}
		o.targets[target] = st
	}
	o.mu.Unlock()
	o.served.Add(int64(len(body)))
	if !st.decided {
		o.decide(st, target, at, body, contentType)
	}
	if st.decided && !st.whole {
		if out, ok := expo.SelectBody(st.buf[:0], body, contentType, o.tr.Filter); ok {
			st.buf = out
			o.written.Add(int64(len(out)))
			return out
		}
	}
	// Undecided (it did not parse: the replay reports it as the scrape
	// did), kept whole, or a body the selection must not touch.
	o.written.Add(int64(len(body)))
	return body
}

// decide tells from a body whether a dialect reads the target, as the
// analysis of the recording will: the dialects' filter, then detection.
func (o *Relevant) decide(st *relevantTarget, target string, at time.Time, body []byte, contentType string) {
	if o.forced[target] != "" {
		st.decided = true // the user named its dialect
		return
	}
	var p expo.ExpfmtParser
	fams, err := p.Parse(target, body, contentType, o.tr.Filter)
	if err != nil {
		return // decided on a later body
	}
	st.decided = true
	if _, _, err := o.tr.Translate("", &model.Snapshot{Target: target, Time: at, Families: fams}); err == nil && len(o.tr.Detected(target)) > 0 {
		return
	}
	st.whole = true
	seen := "no families"
	if all, err := p.Parse(target, body, contentType, nil); err == nil && len(all) > 0 {
		seen = "families such as " + dialect.SeenFamilies(all, 5)
	}
	url := o.urls[target]
	if url == "" {
		url = "URL"
	}
	o.warn(fmt.Sprintf("no dialect reads %q (%s): recording all of its families; run 'retrytop dialect draft %s' for a custom mapping to start from (docs/dialects.md)",
		target, seen, url))
}

// Bytes are the body bytes served and written so far.
func (o *Relevant) Bytes() (served, written int64) { return o.served.Load(), o.written.Load() }

// Summary is the line record prints at the end with --only-relevant.
func (o *Relevant) Summary() string {
	served, written := o.Bytes()
	pct := "-"
	if served > 0 {
		pct = fmt.Sprintf("%.0f%%", 100*float64(written)/float64(served))
	}
	return fmt.Sprintf("  --only-relevant: wrote %s of the %s of bodies served (%s)", FormatSize(written), FormatSize(served), pct)
}
