package sim

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

// virtualRun is one scenario run in virtual time (inside a synctest
// bubble, over the in-process transport): the store that retrytop's scrape
// path filled at every scrape, and the sim's counters read at the very same
// moments.
type virtualRun struct {
	s     *Stack
	store *model.Store
	// edges[i] are the counters at the i-th scrape, start + i*every.
	edges   []Counters
	startMs int64
	every   time.Duration
}

// runVirtual runs sc to the end of its schedule in virtual time and
// scrapes every target every interval. It must run inside synctest.Test.
//
// A scrape happens at a quiescent moment: synctest.Wait returns once every
// other goroutine of the bubble is durably blocked, so whatever was due at
// this virtual instant has happened and nothing moves while the scrape and
// the counters are read. The scrape and the truth of one edge therefore
// describe the same state exactly; the test checks that by reading the
// counters before and after the scrape.
func runVirtual(t *testing.T, sc Scenario, opts Options, every time.Duration) *virtualRun {
	t.Helper()
	opts.InProcess = true
	s, err := Start(context.Background(), sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	tr, err := dialect.NewTranslator(dialect.Config{})
	if err != nil {
		t.Fatal(err)
	}
	total := s.Scenario().Schedule.Total()
	run := &virtualRun{
		s:       s,
		store:   model.NewStore(model.StoreConfig{History: int(total/every) + 64, MaxSeriesPerTarget: 20000}),
		startMs: s.Started().UnixMilli(),
		every:   every,
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		synctest.Wait()
		before := s.Counters()
		run.scrapeAll(t, tr)
		after := s.Counters()
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Fatalf("counters moved during the scrape at %v: %+v -> %+v", before.At, before, after)
		}
		run.edges = append(run.edges, before)
		select {
		case <-s.Done():
			return run
		default:
		}
		<-tick.C
	}
}

// scrapeAll reads every target's /metrics through the stack's transport
// and stores it the way scrape.Scraper does with a body it fetched
// (Scraper.fetch and scrape): expo.ExpfmtParser parses it, the dialect
// Translator (built-in dialects, detection) translates it, and the
// snapshot, stamped with the scrape's time, is appended to the store; the
// parser keeps only the families the translator's dialects read, as the
// command's scraper does (Options.Filter = Translator.Filter). The scraper has
// no public entry point taking (target, body, time), so these are the same
// public steps in the same order.
func (run *virtualRun) scrapeAll(t *testing.T, tr *dialect.Translator) {
	t.Helper()
	now := time.Now()
	for _, tg := range run.s.Targets() {
		body, ctype, err := run.s.Scrape(tg)
		if err != nil {
			t.Fatal(err)
		}
		fams, err := expo.ExpfmtParser{}.Parse(tg.Name, body, ctype, tr.Filter)
		if err != nil {
			t.Fatalf("scrape %s: %v", tg.Name, err)
		}
		snap, _, err := tr.Translate("", &model.Snapshot{Target: tg.Name, Time: now, Families: fams})
		if err != nil {
			t.Fatalf("translate %s: %v", tg.Name, err)
		}
		run.store.Append(snap)
	}
}
