package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/sim"
)

// Recovery is dated from the scrapes, not the report's bins: whatever the
// bin width, including widths whose edges miss the phases' (a trigger
// that ends inside a bin), the client -> provider recovery is the sim's
// within a second (its truth's resolution and the scrape interval), and
// a run that does not recover has none.
func TestRecoveryIndependentOfBins(t *testing.T) {
	const tolerance = 1.0 // s: the sim dates recovery to a whole second, the scrapes are 1 s apart
	for _, tc := range []struct {
		name      string
		recovered bool
	}{
		{"baseline", true},
		{"chain", true},
		{"metastable-bounded", true}, // its slow phase ends at 25 s: inside 10 s bins
		{"ignore-cancel", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := recordDemo(t, tc.name)
			if d.truth.Recovery.Recovered != tc.recovered {
				t.Fatalf("the sim recovered %v, want %v", d.truth.Recovery.Recovered, tc.recovered)
			}
			for _, bin := range []time.Duration{4 * time.Second, 5 * time.Second, 7 * time.Second, 10 * time.Second} {
				rep := BuildReport(d.store, d.targets, ReportOptions{Bin: bin})
				row := findRow(t, rep.Dependencies, sim.NameClient, sim.NameProvider)
				rec := model.Absent
				for _, p := range row.Phases {
					if p.RecoveryS.OK {
						rec = p.RecoveryS
						break
					}
				}
				truth := d.truth.Recovery.UserRecovery.Seconds()
				switch {
				case !tc.recovered && rec.OK:
					t.Errorf("%v bins: recovery %.2f s, the sim never recovered", bin, rec.V)
				case tc.recovered && (!rec.OK || math.Abs(rec.V-truth) > tolerance):
					t.Errorf("%v bins: recovery %v, the sim's %v s", bin, rec, truth)
				}
			}
		})
	}
}
