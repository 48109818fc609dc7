package main

import (
	"os"
	"testing"

	"github.com/retrytop/retrytop/collect/dump"
	"github.com/retrytop/retrytop/model"
)

// loadSequential is LoadStoreRange as it was before it parsed ahead: one
// entry read, transformed and stored at a time (the reference).
func loadSequential(rec dump.Recording, lo, hi int, st *model.Store, transform func(*model.Snapshot) (*model.Snapshot, error)) []model.TargetStatus {
	statuses := make(map[string]*model.TargetStatus)
	for _, t := range rec.Targets() {
		statuses[t] = &model.TargetStatus{Name: t}
	}
	for i := lo; i < hi; i++ {
		dump.ApplyEntry(rec, i, st, statuses, transform)
	}
	out := make([]model.TargetStatus, 0, len(statuses))
	for _, t := range rec.Targets() {
		out = append(out, *statuses[t])
	}
	return out
}

// TestAnalyzeWholeSameAsSequential: analyze FILE over the whole recording
// prints byte for byte what it printed when every entry was loaded one at
// a time (issue 19): the demo's recordings (sim's baseline and bounded
// scenarios, whatif/testdata), the dump format's fixture and a contract
// incident, in JSON and text, with and without --from/--to.
func TestAnalyzeWholeSameAsSequential(t *testing.T) {
	files := []string{"../../whatif/testdata/baseline.rtd", "../../whatif/testdata/bounded.rtd", "../../collect/dump/testdata/v2.rtd", writeTestDump(t, 150, "app", "client")}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("fixture %s: %v", f, err)
		}
		for _, args := range [][]string{
			{"--format", "json"},
			{"--format", "json", "--window", "10s", "--bin", "5s"},
			{"--format", "json", "--from", "20s", "--to", "90s"},
			{"--format", "text", "--wide"},
		} {
			args = append([]string{"analyze", f}, args...)
			got, gotErr, err := execute(t, args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, gotErr)
			}
			loadRange = loadSequential
			want, wantErr, err := execute(t, args...)
			loadRange = dump.LoadStoreRange
			if err != nil {
				t.Fatalf("%v, sequential: %v\n%s", args, err, wantErr)
			}
			if len(want) < 100 {
				t.Fatalf("%v: %d bytes of output: nothing to compare", args, len(want))
			}
			if got != want || gotErr != wantErr {
				t.Errorf("%v: output differs from loading entry by entry (%d and %d bytes; stderr %q and %q)", args, len(got), len(want), gotErr, wantErr)
			}
		}
	}
}
