package analysis

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/internal/simrec"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/sim"
)

// recoveryTolerance is how far a recovery may be from the sim's: the sim
// dates it to the start of a whole second (the moment it stands for lies
// in the second before), and the scrapes that date the trigger's end and
// goodput's return are 1 s apart.
const recoveryTolerance = 1.0 // s

// recording is a sim scenario recorded in virtual time at 1 s, the first
// scrape phase after the sim's start, loaded into a store of every scrape.
type recording struct {
	run     simrec.Run
	store   *model.Store
	targets []model.TargetStatus
}

// recordAt records sc with its first scrape phase after the sim's start;
// the client's scrapes in the first late of the run are refused, as a
// target's that starts after the recorder does (its row then starts
// after the others').
func recordAt(t *testing.T, sc sim.Scenario, phase, late time.Duration) recording {
	t.Helper()
	run := simrec.RecordScenario(t, sc, sim.Options{Seed: 1}, time.Second, phase)
	r, err := dump.OpenRecording(run.Path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	refuse := func(s *model.Snapshot) (*model.Snapshot, error) {
		if s.Target == sim.NameClient && s.Time.Before(run.Start.Add(late)) {
			return nil, errors.New("connection refused")
		}
		return s, nil
	}
	st := model.NewStore(model.StoreConfig{History: r.Len() + 1, MaxSeriesPerTarget: 20000})
	return recording{run: run, store: st, targets: dump.LoadStore(r, st, refuse)}
}

// clientRecovery is the client -> provider row's recovery in rep: the
// phase that carries one.
func clientRecovery(t *testing.T, rep *Report) model.Value {
	t.Helper()
	row := findRow(t, rep.Dependencies, sim.NameClient, sim.NameProvider)
	for _, p := range row.Phases {
		if p.RecoveryS.OK() {
			return p.RecoveryS
		}
	}
	return model.Absent
}

// checkRecovery holds a recovery to the sim's truth.
func checkRecovery(t *testing.T, what string, got model.Value, truth sim.Recovery) {
	t.Helper()
	want := truth.UserRecovery.Seconds()
	switch {
	case !truth.Recovered && got.OK():
		t.Errorf("%s: recovery %.2f s, the sim never recovered", what, got.V())
	case truth.Recovered && (!got.OK() || math.Abs(got.V()-want) > recoveryTolerance):
		t.Errorf("%s: recovery %v, the sim's %v s", what, got, want)
	}
}

// Recovery is dated from the scrapes, not the report's bins: at bin
// widths whose edges miss the phases' (the slow phase ends inside a bin)
// and with the scrapes off the sim's whole seconds, the client ->
// provider recovery is the sim's within recoveryTolerance, and a run
// that does not recover has none. With the first scrape 300 ms after
// the sim's start, the client answers its first two late.
func TestRecoveryIndependentOfBins(t *testing.T) {
	phases := []struct{ phase, late time.Duration }{{300 * time.Millisecond, 2 * time.Second}, {700 * time.Millisecond, 0}}
	if testing.Short() {
		phases = phases[:1]
	}
	for _, tc := range []struct {
		name      string
		recovered bool
	}{
		{"baseline", true},
		{"chain", true},
		{"metastable-bounded", true}, // its slow phase ends at 25 s
		{"ignore-cancel", false},
		{"metastable", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, ok := sim.ScenarioByName(tc.name)
			if !ok {
				t.Fatalf("no scenario %q", tc.name)
			}
			for _, ph := range phases {
				phase := ph.phase
				d := recordAt(t, sc, phase, ph.late)
				truth := d.run.Truth.Recovery
				if truth.Recovered != tc.recovered {
					t.Fatalf("the sim recovered %v, want %v", truth.Recovered, tc.recovered)
				}
				for _, bin := range []time.Duration{4 * time.Second, 5 * time.Second, 7 * time.Second, 10 * time.Second} {
					rep := BuildReport(d.store, d.targets, ReportOptions{Bin: bin})
					got := clientRecovery(t, &rep)
					t.Logf("first scrape +%v, %v bins: recovery %v, the sim's %v", phase, bin, got, truth.UserRecovery)
					checkRecovery(t, "first scrape +"+phase.String()+", "+bin.String()+" bins", got, truth)
				}
			}
		})
	}
}

// analyze FILE streams a recording through a store of a few minutes
// (WholeBuilder): on one longer than that, whose start the store no
// longer holds when the report is built, the recovery is the one a store
// of every scrape gives (the same scrapes, gathered while they streamed),
// and the sim's within recoveryTolerance.
func TestRecoveryStreamed(t *testing.T) {
	const phase = 400 * time.Millisecond
	// chain: the slow phase ends inside a 4 s and a 5 s bin, and dated by
	// them its recovery read 3 s and 6 s against the sim's 1 s.
	for _, name := range []string{"chain"} {
		t.Run(name, func(t *testing.T) {
			sc, _ := sim.ScenarioByName(name)
			ps := sc.Schedule.Phases
			ps[len(ps)-1].Duration += 180 * time.Second // past 33 bins of 5 s: more than the store keeps
			d := recordAt(t, sc, phase, 0)
			r, times := openRecording(t, d.run.Path)
			for _, bin := range []time.Duration{4 * time.Second, 5 * time.Second} {
				st, sp, inc := streamIncident(t, r, times, ReportOptions{Bin: bin})
				if oldest := st.Times(sim.NameProvider)[0]; oldest <= sp.StartMs() {
					t.Fatalf("%v bins: the store still holds the incident's start", bin)
				}
				full := BuildReport(d.store, d.targets, ReportOptions{Bin: bin, Span: &sp})
				got, want := clientRecovery(t, &inc), clientRecovery(t, &full)
				t.Logf("%v bins: streamed %v, every scrape %v, the sim's %v", bin, got, want, d.run.Truth.Recovery.UserRecovery)
				if got.OK() != want.OK() || math.Abs(got.V()-want.V()) > 1e-9 {
					t.Errorf("%v bins: streamed recovery %v, a store of every scrape %v", bin, got, want)
				}
				checkRecovery(t, bin.String()+" bins, streamed", got, d.run.Truth.Recovery)
			}
		})
	}
}
