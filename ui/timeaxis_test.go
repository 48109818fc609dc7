package ui

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// axisLabels are the clock times on an axis line, with their columns.
func axisLabels(t *testing.T, axis string, loc *time.Location) (times []time.Time, cols []int) {
	t.Helper()
	re := regexp.MustCompile(`\d\d:\d\d(:\d\d)?`)
	for _, ix := range re.FindAllStringIndex(axis, -1) {
		layout := "15:04:05"
		if ix[1]-ix[0] == 5 {
			layout = "15:04"
		}
		tm, err := time.ParseInLocation(layout, axis[ix[0]:ix[1]], loc)
		if err != nil {
			t.Fatalf("label %q: %v", axis[ix[0]:ix[1]], err)
		}
		times, cols = append(times, tm), append(cols, ix[0])
	}
	return times, cols
}

// axisLine is a line of clock labels only.
var axisLine = regexp.MustCompile(`^ +(\d\d:\d\d(:\d\d)? *)+$`)

// The charts' time axes carry wall-clock times in the dashboard's
// location at even steps (the same step between every two labels, each
// label a multiple of it), and the header clock agrees with them.
func TestTimeAxisWallClock(t *testing.T) {
	tests := []struct {
		name  string
		loc   *time.Location
		clock string // the header's, from fixedNow 03:12:45 UTC
		hour  string // the hour the axis labels are in
	}{
		{"utc", time.UTC, "03:12:45", "03:"},
		{"utc+2", time.FixedZone("EET", 2*3600), "05:12:45", "05:"},
		{"utc-5:30", time.FixedZone("X", -(5*3600 + 1800)), "21:42:45", "21:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := goldenModel(t, Options{Location: tt.loc}, 120, 40)
			scr := ansi.Strip(m.View())
			if h := firstLine(scr); !strings.HasSuffix(h, tt.clock) {
				t.Errorf("header clock: %q, want it to end in %s", h, tt.clock)
			}
			axis := ""
			for _, ln := range strings.Split(scr, "\n") {
				if axisLine.MatchString(ln) && strings.Contains(ln, " "+tt.hour) {
					axis = ln
					break
				}
			}
			times, _ := axisLabels(t, axis, tt.loc)
			if len(times) < 3 {
				t.Fatalf("time axis %q: want at least 3 labels:\n%s", axis, scr)
			}
			step := times[1].Sub(times[0])
			for i := 1; i < len(times); i++ {
				if d := times[i].Sub(times[i-1]); d != step {
					t.Errorf("axis %q: step %v after %v, want even steps", axis, d, step)
				}
				if sinceHour := times[i].Sub(times[i].Truncate(time.Hour)); sinceHour%step != 0 {
					t.Errorf("axis %q: %v is not on a multiple of %v", axis, times[i].Format("15:04:05"), step)
				}
			}
			// The fixture's 30 bins of 10s end at dataTime (03:12:43 UTC).
			first := dataTime.Add(-300 * time.Second)
			if times[0].Hour() != first.In(tt.loc).Hour() || times[len(times)-1].After(time.Date(0, 1, 1, dataTime.In(tt.loc).Hour(), dataTime.In(tt.loc).Minute(), dataTime.Second(), 0, tt.loc)) {
				t.Errorf("axis %q outside %s..%s", axis, first.In(tt.loc).Format("15:04:05"), dataTime.In(tt.loc).Format("15:04:05"))
			}
		})
	}
}

// Labels sit at the column of their time: minute bins to the minute, a
// frame without a time keeps the relative axis, too narrow has none.
func TestTimeAxisLayouts(t *testing.T) {
	p := painter{c: &common{opts: Options{Location: time.UTC}.withDefaults(), g: &blockGlyphs}}
	end := time.Date(2025, 3, 4, 3, 12, 0, 0, time.UTC)
	got := ansi.Strip(p.timeAxis(nil, 0, end, time.Minute, 30, 60)[0].s)
	times, cols := axisLabels(t, got, time.UTC)
	if len(times) < 3 || strings.Contains(got, "03:12:00") {
		t.Fatalf("minute bins: %q, want labels to the minute", got)
	}
	start := end.Add(-30 * time.Minute)
	for i, tm := range times {
		// Two columns a bin of one minute: minute m sits at 2*(m-start).
		want := gutterW + 2*int(tm.Sub(time.Date(0, 1, 1, start.Hour(), start.Minute(), 0, 0, time.UTC))/time.Minute)
		if cols[i] != want {
			t.Errorf("%s at column %d, want %d: %q", tm.Format("15:04"), cols[i], want, got)
		}
		// 7 columns a label at 2 a bin: every 4 bins, the nice step 5m.
		if tm.Minute()%5 != 0 {
			t.Errorf("%s is not on a step of 5m: %q", tm.Format("15:04"), got)
		}
	}
	got = ansi.Strip(p.timeAxis(nil, 0, time.Time{}, 10*time.Second, 30, 60)[0].s)
	if !strings.Contains(got, "-5m") || !strings.HasSuffix(got, "now") {
		t.Errorf("no time: %q, want -5m … now", got)
	}
	if got = ansi.Strip(p.timeAxis(nil, 0, end, 10*time.Second, 3, 6)[0].s); strings.TrimSpace(got) != "" {
		t.Errorf("6 columns: %q, want no labels that cannot fit", got)
	}
}
