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
	st, _ := dump.LoadWhole(rec, nil)
	return st
}
