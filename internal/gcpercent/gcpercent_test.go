package gcpercent

import (
	"runtime/debug"
	"testing"
)

func TestSet(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	t.Setenv("GOGC", "")
	restore := Set(50)
	if got := debug.SetGCPercent(50); got != 50 {
		t.Errorf("GOGC %d once set, want 50", got)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d once restored, want 100", got)
	}

	// GOGC set by the user is theirs.
	t.Setenv("GOGC", "200")
	restore = Set(50)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d with GOGC=200 in the environment, want it untouched (100)", got)
	}
	restore()
}
