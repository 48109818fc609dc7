package whatif

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/sim"
)

// recordVirtual runs a sim scenario to the end of its schedule in virtual
// time (a synctest bubble over the sim's in-process transport,
// docs/testing.md) and records every target's /metrics every second of
// virtual time, as `retrytop record --interval 1s` would.
func recordVirtual(t *testing.T, name string, opts sim.Options) string {
	t.Helper()
	sc, ok := sim.ScenarioByName(name)
	if !ok {
		t.Fatalf("no scenario %q", name)
	}
	path := filepath.Join(t.TempDir(), name+".rtd")
	synctest.Test(t, func(t *testing.T) {
		opts.InProcess = true
		stack, err := sim.Start(context.Background(), sc, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer stack.Close()
		w, err := dump.Create(path, false, dump.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			synctest.Wait()
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
				return
			default:
			}
			<-tick.C
		}
	})
	return path
}

// The done-when again on the real sim in virtual time: baseline and
// bounded with identical options and seed (what `demo --compare` runs),
// each recorded at 1 s. Same tolerances and the same recovery rule as
// TestDoneWhen.
func TestDoneWhenVirtualSim(t *testing.T) {
	if testing.Short() {
		t.Skip("two 50 s sim runs in virtual time: 4 s, 40 s under -race on the shared 2-core machine")
	}
	opts := sim.Options{Seed: 1}
	base, err := Fit(load(t, recordVirtual(t, "baseline", opts)), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	bounded, err := Fit(load(t, recordVirtual(t, "bounded", opts)), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	checkPredictions(t, base, bounded)
}
