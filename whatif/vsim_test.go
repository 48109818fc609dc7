package whatif

import (
	"testing"
	"time"

	"github.com/retrytop/retrytop/internal/simrec"
	"github.com/retrytop/retrytop/sim"
)

// recordVirtual records a sim scenario in virtual time, every target's
// /metrics every second as `retrytop record --interval 1s` would
// (simrec.Record, docs/testing.md).
func recordVirtual(t *testing.T, name string, opts sim.Options) string {
	t.Helper()
	return simrec.Record(t, name, opts, time.Second).Path
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
