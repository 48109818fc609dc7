package whatif

import (
	"testing"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
)

// load reads a recording into a store whole, as `analyze FILE` does.
func load(t testing.TB, path string) *model.Store {
	t.Helper()
	rec, err := dump.OpenRecording(path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	per := map[string]int{}
	for i := 0; i < rec.Len(); i++ {
		per[rec.Target(i)]++
	}
	hist := 2
	for _, n := range per {
		hist = max(hist, n+1)
	}
	st := model.NewStore(model.StoreConfig{History: hist})
	dump.LoadStore(rec, st, nil)
	return st
}
