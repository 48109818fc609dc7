package whatif

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/internal/simrec"
	"github.com/retrytop/retrytop/policy"
	"github.com/retrytop/retrytop/sim"
)

// A slowdown past the caller's 300 ms attempt timeout, on a provider that
// honours cancellation: no request finishes while it lasts, so the
// recording cannot tell its service time. The fit says so, with a lower
// bound that is one (below the sim's 400 ms), and the report names the
// undetermined parameter instead of presenting a guess as a fit.
func TestFitSaysWhatItCannotDetermine(t *testing.T) {
	const slow = 400 * time.Millisecond
	sc, _ := sim.ScenarioByName("baseline")
	sc.Name = "baseline-400ms"
	sc.Schedule.Phases[1].ServiceTime = slow
	run := simrec.RecordScenario(t, sc, sim.Options{Seed: 1}, time.Second, 0)
	f, err := Fit(load(t, run.Path), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var und []Assumption
	for _, a := range f.Assumptions {
		if a.Confidence == ConfidenceUndetermined {
			und = append(und, a)
		}
		if a.Confidence == "" && strings.Contains(a.What, "slow service time") {
			t.Errorf("%s: no confidence", a.What)
		}
	}
	for _, a := range und {
		t.Logf("%s: %s [%s]", a.What, a.Value, a.Source)
	}
	if len(und) != 1 || !strings.HasPrefix(und[0].Value, "at least ") {
		t.Fatalf("undetermined %+v, want the slow service time, as a lower bound", und)
	}
	tr := f.Model.Trigger
	if tr.End-tr.Start < 15 {
		t.Errorf("trigger %+v, want the 20 s slowdown (at least 15 bins whole)", tr)
	}
	for i := tr.Start + 1; i < tr.End-1; i++ {
		if got := f.Model.Provider.ServiceTime[i]; got > slow || got <= 2*sim.HealthyServiceTime {
			t.Errorf("bin %d: service time %v, want a lower bound of the sim's %v above the healthy level", i, got, slow)
		}
	}
	specs, _ := policy.Parse("bounded")
	rep, err := Build("baseline-400ms.rtd", f, specs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Undetermined) != 1 || rep.Undetermined[0] != und[0].What {
		t.Errorf("report undetermined %v, want %q", rep.Undetermined, und[0].What)
	}
	var b bytes.Buffer
	if err := Write(&b, rep, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "the recording cannot determine: "+und[0].What) {
		t.Errorf("text does not say what the recording cannot determine:\n%s", b.String())
	}
	b.Reset()
	if err := Write(&b, rep, "json"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Undetermined []string         `json:"undetermined"`
		Assumptions  []map[string]any `json:"assumptions"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Undetermined) != 1 || doc.Undetermined[0] != und[0].What {
		t.Errorf("JSON undetermined %v, want [%q]", doc.Undetermined, und[0].What)
	}
	for _, a := range doc.Assumptions {
		if a["what"] == und[0].What && a["confidence"] != ConfidenceUndetermined {
			t.Errorf("JSON assumption %v: confidence %v", a["what"], a["confidence"])
		}
	}
}
