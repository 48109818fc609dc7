package ui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/retrytop/retrytop/model"
)

// fatesFrame is the fixture frame whose checkout → payments reports its
// final results: 70 originals a second ended 40 at the first try (52
// successes less 12 rescued), 12 after retries, 9 with every attempt
// used, 5 refused a retry by the budget, 3 by the limiter, 1 out of time;
// the breaker and cancellations are not told (absent).
func fatesFrame(t time.Time, window time.Duration) model.Frame {
	f := fixtureFrame(t, window, 0)
	r := &f.Rows[0]
	r.RescuedPerS = some(12)
	r.ResultsPerS = map[string]model.Value{
		model.ResultSuccess:           some(52),
		model.ResultProviderError:     some(9),
		model.ResultBudgetExhausted:   some(5),
		model.ResultCapacityRejected:  some(3),
		model.ResultDeadlineExhausted: some(1),
		model.ResultPermanentError:    some(0),
		model.ResultNotRetryable:      some(0),
	}
	return f
}

// fatesModel opens checkout → payments of fatesFrame in the detail view
// and scrolls to the end, where FATES and BUDGET LEFT are.
func fatesModel(t *testing.T, opts Options, w, h int) *Model {
	m := newTestModel(t, opts, func(req frameRequest) model.Frame { return fatesFrame(dataTime, req.Window) })
	send(m, tea.WindowSizeMsg{Width: w, Height: h}, liveFrame(fatesFrame(dataTime, time.Minute)), keyMsg("enter"))
	m.View()
	send(m, keyMsg("G"))
	return m
}

func TestGoldenFates(t *testing.T) {
	for _, c := range []struct {
		name string
		w, h int
	}{
		{"fates_80x24", 80, 24},
		{"fates_200x60", 200, 60},
	} {
		t.Run(c.name, func(t *testing.T) {
			scr := screen(t, fatesModel(t, Options{}, c.w, c.h))
			golden(t, c.name, scr)
			// 40+12+9+5+3+1 = 70 fates told: each line's share of them.
			for _, want := range []string{
				"FATES how originals ended, per second",
				"first try                 40.0  ", "57.1%",
				"after retry               12.0  ", "17.1%",
				"failed, attempts used     9.00  ", "12.8%",
				"not retried: budget       5.00  ", "7.1%",
				"not retried: limiter      3.00  ",
				"not retried: deadline     1.00  ",
				"not retried: breaker         -\n",
				"not retryable                0  ",
				"cancelled                    -\n",
			} {
				if !strings.Contains(scr, want) {
					t.Errorf("no %q in\n%s", want, scr)
				}
			}
		})
	}
}

// A row that tells no fate (no final results, no rescues) has no FATES
// section rather than ten dashes.
func TestFatesSkippedWithoutResults(t *testing.T) {
	f := fixtureFrame(dataTime, time.Minute, 0)
	r := &f.Rows[0]
	r.RescuedPerS, r.BudgetDeniedPerS, r.RetryLimitExceededPerS = model.Absent, model.Absent, model.Absent
	r.RequestTimeoutsPerS, r.BreakerRejectedPerS = model.Absent, model.Absent
	r.ResultsPerS = nil
	m := newTestModel(t, Options{}, func(req frameRequest) model.Frame { return f })
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, liveFrame(f), keyMsg("enter"))
	m.View()
	send(m, keyMsg("G"))
	if scr := screen(t, m); strings.Contains(scr, "FATES") {
		t.Errorf("a FATES section without fates:\n%s", scr)
	}
}

// Hedges have a column of their own beside retries, never folded into
// them, and it is the first to go when the table narrows: at 120 columns
// RETR/s stays and HDG/s is hidden.
func TestHedgeColumn(t *testing.T) {
	f := fixtureFrame(dataTime, time.Minute, 0)
	for i := range f.Rows {
		f.Rows[i].HedgesPerS = some(float64(i) + 0.5)
	}
	wide := newTestModel(t, Options{}, nil)
	send(wide, tea.WindowSizeMsg{Width: 200, Height: 60}, liveFrame(f))
	scr := screen(t, wide)
	head := lineWith(scr, "TARGET")
	if !strings.Contains(head, "RETR/s  HDG/s ") {
		t.Fatalf("no HDG/s after RETR/s: %q", head)
	}
	row := lineWith(scr, "payments                  120")
	if !strings.Contains(row, "    169   0.50    102") {
		t.Errorf("checkout → payments: retries 169, hedges 0.50, rescued 102 in %q", row)
	}
	narrow := newTestModel(t, Options{}, nil)
	send(narrow, tea.WindowSizeMsg{Width: 120, Height: 40}, liveFrame(f))
	head = lineWith(screen(t, narrow), "TARGET")
	if !strings.Contains(head, "RETR/s") || strings.Contains(head, "HDG/s") {
		t.Errorf("at 120 columns: %q, want RETR/s without HDG/s", head)
	}
}

// Where the emitter counts them, the detail view says how many hedges won
// and how many were abandoned, under the hedges; where it does not, the
// two lines are absent rather than zero.
func TestHedgesWonAndAbandoned(t *testing.T) {
	f := fixtureFrame(dataTime, time.Minute, 0)
	for i := range f.Rows {
		f.Rows[i].HedgesPerS = some(3)
		f.Rows[i].HedgesWonPerS = some(2)
		f.Rows[i].HedgesAbandonedPerS = some(0.5)
	}
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, liveFrame(f), keyMsg("enter"))
	scr := screen(t, m)
	for _, want := range []string{"of them hedges", "hedges won", "hedges abandoned"} {
		if !strings.Contains(scr, want) {
			t.Fatalf("no %q in the detail view:\n%s", want, scr)
		}
	}
	if won := lineWith(scr, "hedges won"); !strings.Contains(won, "2.00") {
		t.Errorf("hedges won line %q, want 2.00/s", won)
	}
	if lost := lineWith(scr, "hedges abandoned"); !strings.Contains(lost, "0.50") {
		t.Errorf("hedges abandoned line %q, want 0.50/s", lost)
	}
	plain := newTestModel(t, Options{}, nil)
	g := fixtureFrame(dataTime, time.Minute, 0)
	send(plain, tea.WindowSizeMsg{Width: 200, Height: 60}, liveFrame(g), keyMsg("enter"))
	if scr := screen(t, plain); strings.Contains(scr, "hedges won") {
		t.Errorf("hedges won shown for an emitter that does not count them:\n%s", scr)
	}
}
