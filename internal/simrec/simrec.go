// Package simrec records the sim's scenarios in virtual time for tests: a
// synctest bubble over the sim's in-process transport, every target's
// /metrics written to a recording at a fixed interval of virtual time, as
// `retrytop record` would, with the sim's counters at every scrape.
package simrec

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/sim"
)

// Run is one recorded scenario.
type Run struct {
	// Path is the recording, in the test's temporary directory.
	Path string
	// Start is when the sim started; Counters are its counters at every
	// scrape (Start + phase + i x every), read at the moment of the scrape;
	// Truth is its ground truth once the schedule ended.
	Start    time.Time
	Counters []sim.Counters
	Truth    sim.Truth
}

// Record runs scenario name with opts (InProcess set) to the end of its
// schedule in virtual time, scraping every target every interval.
func Record(t *testing.T, name string, opts sim.Options, every time.Duration) Run {
	t.Helper()
	return RecordPhase(t, name, opts, every, 0)
}

// RecordPhase is Record with the first scrape phase after the sim's start
// (0 <= phase < every): the scrapes then fall elsewhere in the phases'
// seconds, as a real recorder's do.
func RecordPhase(t *testing.T, name string, opts sim.Options, every, phase time.Duration) Run {
	t.Helper()
	sc, ok := sim.ScenarioByName(name)
	if !ok {
		t.Fatalf("no scenario %q", name)
	}
	return RecordScenario(t, sc, opts, every, phase)
}

// RecordScenario is RecordPhase for a scenario that is not built in.
func RecordScenario(t *testing.T, sc sim.Scenario, opts sim.Options, every, phase time.Duration) Run {
	t.Helper()
	run := Run{Path: filepath.Join(t.TempDir(), sc.Name+".rtd")}
	synctest.Test(t, func(t *testing.T) {
		opts.InProcess = true
		stack, err := sim.Start(context.Background(), sc, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer stack.Close()
		run.Start = stack.Started()
		if phase > 0 {
			time.Sleep(phase) // virtual: the bubble's clock
		}
		w, err := dump.Create(run.Path, false, dump.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			// Every goroutine of the bubble is blocked: nothing moves
			// while the counters and the targets are read.
			synctest.Wait()
			run.Counters = append(run.Counters, stack.Counters())
			for _, tg := range stack.Targets() {
				body, ctype, err := stack.Scrape(tg)
				if err != nil {
					t.Fatal(err)
				}
				if err := w.Append(tg.Name, time.Now(), ctype, body); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-stack.Done():
				run.Truth = stack.Truth()
				return
			default:
			}
			<-tick.C
		}
	})
	return run
}
