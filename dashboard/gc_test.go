package dashboard

import (
	"runtime/debug"
	"testing"
)

func TestLiveGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	t.Setenv("GOGC", "")
	restore := LiveGC()
	if got := debug.SetGCPercent(LiveGCPercent); got != LiveGCPercent {
		t.Errorf("GOGC %d while live, want %d", got, LiveGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d once restored, want 100", got)
	}

	// GOGC set by the user is theirs.
	t.Setenv("GOGC", "200")
	restore = LiveGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d with GOGC=200 in the environment, want it untouched (100)", got)
	}
	restore()
}
