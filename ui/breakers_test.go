package ui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/retrytop/retrytop/model"
)

// breakerStates is the breaker of the fixture's checkout → payments per
// bin (30 bins, oldest first): closed, open for 12 bins from bin 10, a
// half-open probe at 22, open again at 23-25, closed from 26; bin 3 is
// the fixture's missed scrape (absent).
func breakerStates(i int) model.Value {
	switch {
	case i == 3:
		return model.Absent
	case i >= 10 && i < 22, i >= 23 && i < 26:
		return some(model.BreakerOpen)
	case i == 22:
		return some(model.BreakerHalfOpen)
	}
	return some(model.BreakerClosed)
}

// quotaAt is the exported retry quota per bin: full at 20 until the
// breaker opens, drained by 4 a bin to 0, and never refilled.
func quotaAt(i int) model.Value {
	if i == 3 {
		return model.Absent
	}
	return some(float64(max(20-4*max(i-9, 0), 0)))
}

// breakerFrame is the goldens' fixture frame whose checkout → payments
// has a breaker (open at the end), an exported quota that drained, POST
// attempts over their originals, an Istio edge and a setting that hides
// retry stats.
func breakerFrame(t time.Time, window time.Duration) model.Frame {
	f := fixtureFrame(t, window, 0)
	r := &f.Rows[0]
	r.BreakerState = some(model.BreakerOpen)
	r.BreakerRejectedPerS = some(37)
	r.BudgetBalance = some(0)
	r.UnsafeOriginalsPerS = some(10)
	r.UnsafeAttemptsPerS = some(24)
	r.EdgeReceivedPerS = some(289)
	r.EdgeAmplification = some(2.41)
	r.SettingsOff = []string{model.SettingIstioProxyStats, "someFlag"}
	tl := f.Timelines[r.Key()].Bins()
	for i := range tl {
		tl[i].BreakerState = breakerStates(i)
		tl[i].BudgetBalance = quotaAt(i)
		if tl[i].BreakerState.OK() {
			tl[i].BreakerRejectedPerS = some(37 * boolf(tl[i].BreakerState.V() == model.BreakerOpen))
		}
	}
	f.Timelines[r.Key()] = model.NewTimeline(tl)
	return f
}

// breakerModel is a model on breakerFrame with checkout → payments open
// in the detail view, scrolled to its end where the section is.
func breakerModel(t *testing.T, opts Options, w, h int) *Model {
	m := newTestModel(t, opts, func(req frameRequest) model.Frame { return breakerFrame(dataTime, req.Window) })
	send(m, tea.WindowSizeMsg{Width: w, Height: h}, liveFrame(breakerFrame(dataTime, time.Minute)), keyMsg("enter"))
	m.View() // the scroll's end is known once the detail has been rendered
	send(m, keyMsg("G"))
	return m
}

func TestGoldenBreakers(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
		w, h int
	}{
		{"breakers_80x24", Options{}, 80, 24},
		{"breakers_200x60", Options{}, 200, 60},
		{"breakers_ascii_80x24", Options{Charset: CharsetASCII}, 80, 24},
	} {
		t.Run(c.name, func(t *testing.T) {
			scr := screen(t, breakerModel(t, c.opts, c.w, c.h))
			golden(t, c.name, scr)
			for _, want := range []string{
				"BREAKER", "QUOTA",
				"  refused       ", "37.0/s",
				"quota left",
				"POST/PATCH      originals 10.0/s  attempts 24.0/s  re-sent 14.0/s",
				"mesh edge       received 289/s  amplification 2.41x derived",
				"setting off     proxyStatsMatcher: retry stats off: add upstream_rq_retry.* to",
				"inclusionRegexps",
				"setting off     someFlag: hides retry data",
			} {
				if !strings.Contains(scr, want) {
					t.Errorf("no %q in\n%s", want, scr)
				}
			}
		})
	}
}

// The strip draws each bin's own state at its column, and says the
// window's state on the right.
func TestBreakerStripFollowsTheBins(t *testing.T) {
	// 180 columns: 155 for 30 bins, 5 columns a bin.
	scr := screen(t, breakerModel(t, Options{Charset: CharsetASCII}, 180, 50))
	var strip string
	for _, ln := range strings.Split(scr, "\n") {
		if strings.HasPrefix(ln, "breaker ") {
			strip = ln
		}
	}
	if strip == "" {
		t.Fatalf("no breaker strip in\n%s", scr)
	}
	var want strings.Builder
	want.WriteString("breaker         ")
	for i := range 30 {
		c := map[bool]string{true: ".", false: " "}[breakerStates(i).OK()]
		switch breakerStates(i).V() {
		case model.BreakerOpen:
			c = "#"
		case model.BreakerHalfOpen:
			c = "+"
		}
		want.WriteString(strings.Repeat(c, 5))
	}
	if got := strip[:16+150]; got != want.String() {
		t.Errorf("strip\n%q\nwant\n%q", got, want.String())
	}
	if !strings.HasSuffix(strings.TrimSpace(strip), " open") {
		t.Errorf("strip %q does not end with the window's state open", strip)
	}
}

// A row with no breaker, method, edge or setting has no section, and one
// with only a setting off shows "-" for what is unknown.
func TestBreakerSectionOnlyWhenTold(t *testing.T) {
	m := goldenModel(t, Options{}, 200, 60)
	send(m, keyMsg("enter"))
	m.View()
	send(m, keyMsg("G"))
	if scr := screen(t, m); strings.Contains(scr, "BREAKER") {
		t.Errorf("section on a row without breaker signals:\n%s", scr)
	}

	f := fixtureFrame(dataTime, time.Minute, 0)
	r := &f.Rows[0]
	r.BudgetBalance = model.Absent
	r.SettingsOff = []string{model.SettingEnvoyUsedOnly}
	tl := f.Timelines[r.Key()].Bins()
	for i := range tl {
		tl[i].BudgetBalance = model.Absent
	}
	f.Timelines[r.Key()] = model.NewTimeline(tl)
	m = newTestModel(t, Options{}, func(frameRequest) model.Frame { return f })
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, liveFrame(f), keyMsg("enter"))
	m.View()
	send(m, keyMsg("G"))
	scr := screen(t, m)
	for _, want := range []string{
		"breaker         -  no breaker state exported",
		"quota left      -  not exported, no model for the dialect",
		"setting off     usedonly: zero stats hidden: scrape /stats/prometheus without usedonly",
	} {
		if !strings.Contains(scr, want) {
			t.Errorf("no %q in\n%s", want, scr)
		}
	}
	for _, not := range []string{"POST/PATCH", "mesh edge", "  refused  ", ":00 "} {
		if strings.Contains(scr, not) {
			t.Errorf("%q shown without its signals", not)
		}
	}
}

func TestBreakerName(t *testing.T) {
	for v, want := range map[model.Value]string{
		model.Absent: "-", some(0): "closed", some(1): "half", some(2): "open",
	} {
		if got := breakerName(v); got != want {
			t.Errorf("breakerName(%v) = %q, want %q", v, got, want)
		}
	}
}

// Without an exported balance, the quota row is the one the dialect's
// model rebuilds (gRPC's tokens), named so.
func TestBreakerQuotaRebuilt(t *testing.T) {
	f := breakerFrame(dataTime, time.Minute)
	r := &f.Rows[0]
	r.BudgetBalance = model.Absent
	tl := f.Timelines[r.Key()].Bins()
	for i := range tl {
		tl[i].BudgetBalance = model.Absent
	}
	f.Timelines[r.Key()] = model.NewTimeline(tl)
	for i := range f.Targets {
		if f.Targets[i].Name == r.Target {
			f.Targets[i].Dialect = "grpc"
		}
	}
	m := newTestModel(t, Options{}, func(frameRequest) model.Frame { return f })
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, liveFrame(f), keyMsg("enter"))
	m.View()
	send(m, keyMsg("G"))
	scr := screen(t, m)
	if !strings.Contains(scr, "quota, rebuilt") || strings.Contains(scr, "quota left") {
		t.Errorf("no rebuilt quota row in\n%s", scr)
	}
	// The fixture's bins lack the status codes gRPC's model counts: the
	// balance is unknown, as BUDGET LEFT says, never 0.
	for _, ln := range strings.Split(scr, "\n") {
		if strings.HasPrefix(ln, "quota, rebuilt") && !strings.HasSuffix(ln, " -") {
			t.Errorf("quota row %q, want it to end in -", ln)
		}
	}
}
