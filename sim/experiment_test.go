package sim

import (
	"context"
	"os"
	"testing"
)

// TestRecordExperiment runs the full-length experiment that
// docs/experiment.md records, only when asked:
//
//	SIM_RECORD=compare go test -run TestRecordExperiment -v -timeout 5m ./sim/
//	SIM_RECORD=ignore-cancel go test -run TestRecordExperiment -v -timeout 5m ./sim/
//
// "compare" is what `retrytop demo --compare` prints; a scenario name runs
// that scenario alone and prints its ground truth.
func TestRecordExperiment(t *testing.T) {
	what := os.Getenv("SIM_RECORD")
	if what == "" {
		t.Skip("set SIM_RECORD=compare or a scenario name to record a full run")
	}
	ctx := context.Background()
	if what == "compare" {
		res, err := Compare(ctx, Options{})
		if err != nil {
			t.Fatal(err)
		}
		res.Baseline.WriteTable(os.Stdout)
		res.Bounded.WriteTable(os.Stdout)
		res.WriteTable(os.Stdout)
		return
	}
	sc, ok := ScenarioByName(what)
	if !ok {
		t.Fatalf("no scenario %q (have %v)", what, ScenarioNames())
	}
	s, err := Start(ctx, sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Wait()
	s.Truth().WriteTable(os.Stdout)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
