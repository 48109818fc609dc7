package dump

import (
	"runtime/debug"
	"testing"
)

// TestStreamGC: GOGC is StreamGCPercent only while a span longer than the
// store streams and the environment sets no GOGC, and is put back after.
func TestStreamGC(t *testing.T) {
	const base = 137 // a setting no default has
	defer debug.SetGCPercent(debug.SetGCPercent(base))
	cases := []struct {
		name          string
		env           string
		kept, scrapes int
		want          int
	}{
		{"streaming", "", 300, 3601, StreamGCPercent},
		{"the store holds the span", "", 64, 31, base},
		{"equal", "", 31, 31, base},
		{"GOGC set by the user", "100", 300, 3601, base},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOGC", c.env)
			restore := StreamGC(c.kept, c.scrapes)
			if got := debug.SetGCPercent(-1); got != c.want {
				t.Errorf("GOGC %d while loading, want %d", got, c.want)
			}
			debug.SetGCPercent(c.want) // what the probe above turned off
			restore()
			if got := debug.SetGCPercent(base); got != base {
				t.Errorf("GOGC %d after, want %d back", got, base)
			}
		})
	}
}
