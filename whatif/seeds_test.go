package whatif

import (
	"fmt"
	"testing"
	"time"

	"github.com/retrytop/retrytop/sim"
)

// recordings is how many recordings of each scenario the seed tests make:
// seeds 1.. and first scrapes 0, 100, 200 ... ms after the start. -short
// and the race detector (which checks the sim's concurrency, tested in
// package sim, not the fit) make 3.
func recordings() int {
	if testing.Short() || raceOn {
		return 3
	}
	return 10
}

// The fit does not depend on where the scrapes fall or on the seed: on
// recordings of the same scenarios with different seeds and scrape
// phases, every prediction within the tolerances of TestDoneWhen
// (checkPredictions) and
// checkMetastable. -short and -race run 3 of each instead of 10.
func TestFitAcrossSeedsAndPhases(t *testing.T) {
	n := recordings()
	if n < 10 {
		t.Logf("-short or -race: %d recordings of each scenario instead of 10", n)
	}
	for i := range n {
		opts := sim.Options{Seed: uint64(i + 1)}
		phase := time.Duration(i) * 100 * time.Millisecond
		t.Run(fmt.Sprintf("seed %d phase %v", opts.Seed, phase), func(t *testing.T) {
			base, _ := recordFit(t, "baseline", opts, phase)
			bounded, _ := recordFit(t, "bounded", opts, phase)
			// The scrapes' phase is not the trigger's: its end falls anywhere
			// in a bin, and a recovery read inside that bin is known to the
			// bin's width.
			checkPredictions(t, base, bounded, time.Second.Seconds())
			stuck, stuckRun := recordFit(t, "metastable", opts, phase)
			mb, mbRun := recordFit(t, "metastable-bounded", opts, phase)
			checkMetastable(t, stuck, mb, stuckRun, mbRun)
		})
	}
}
