package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// The charts' time axes carry wall-clock times in the dashboard's
// location, and the header clock agrees with them.
func TestTimeAxisWallClock(t *testing.T) {
	tests := []struct {
		name      string
		loc       *time.Location
		clock     string // the header's, from fixedNow 03:12:45 UTC
		end, from string // the axis' right label (dataTime) and the first bin's start
	}{
		{"utc", time.UTC, "03:12:45", "03:12:43", "03:07:43"},
		{"utc+2", time.FixedZone("EET", 2*3600), "05:12:45", "05:12:43", "05:07:43"},
		{"utc-5:30", time.FixedZone("X", -(5*3600 + 1800)), "21:42:45", "21:42:43", "21:37:43"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := goldenModel(t, Options{Location: tt.loc}, 120, 40)
			scr := ansi.Strip(m.View())
			if h := firstLine(scr); !strings.HasSuffix(h, tt.clock) {
				t.Errorf("header clock: %q, want it to end in %s", h, tt.clock)
			}
			axis := lineWith(scr, tt.end)
			if axis == "" || !strings.HasPrefix(strings.TrimSpace(axis), tt.from) {
				t.Errorf("time axis %q, want it from %s to %s:\n%s", axis, tt.from, tt.end, scr)
			}
		})
	}
}

// Bins of whole minutes are labelled to the minute; a frame without a
// time keeps the relative axis.
func TestTimeAxisLayouts(t *testing.T) {
	p := painter{c: &common{opts: Options{Location: time.UTC}.withDefaults(), g: &blockGlyphs}}
	end := time.Date(2025, 3, 4, 3, 12, 0, 0, time.UTC)
	got := ansi.Strip(p.timeAxis(nil, end, time.Minute, 30, 2)[0].s)
	if !strings.Contains(got, "02:42") || !strings.HasSuffix(got, "03:12") || strings.Contains(got, "03:12:00") {
		t.Errorf("minute bins: %q, want 02:42 … 03:12 to the minute", got)
	}
	got = ansi.Strip(p.timeAxis(nil, time.Time{}, 10*time.Second, 30, 2)[0].s)
	if !strings.Contains(got, "-5m") || !strings.HasSuffix(got, "now") {
		t.Errorf("no time: %q, want -5m … now", got)
	}
	if got = ansi.Strip(p.timeAxis(nil, end, 10*time.Second, 3, 2)[0].s); strings.TrimSpace(got) != "" {
		t.Errorf("6 columns: %q, want no labels that cannot fit", got)
	}
}
