package ui

import (
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"github.com/retrytop/retrytop/model"
)

// cursorAt names the row under the cursor: "target/dependency" for a
// caller row, "svc:target" for a service row.
func cursorAt(m *Model) string {
	if s, ok := m.overview.selectedService(); ok {
		return "svc:" + s.Target
	}
	return selected(m)
}

// svcNamesShown are the service rows that pass the filter, in order.
func svcNamesShown(m *Model) []string {
	var out []string
	for _, i := range m.overview.svcOrder {
		out = append(out, m.overview.services[i].Target)
	}
	return out
}

// svcFrame is a live frame carrying the fixture's services of variant.
func svcFrame(at time.Time, variant int) frameMsg {
	f := liveFrame(fixtureFrame(at, time.Minute, variant))
	f.derived = svcDerived(f.req, variant)
	return f
}

func TestServiceSelectionCrossesFromCallers(t *testing.T) {
	m := svcModel(t, Options{}, 120, 40, nil)
	keys(m, "G")
	if got := cursorAt(m); got != "svc:svc\x1b]0;pwned\x07\u202eevil" {
		t.Fatalf("G: cursor on %q, want the last service", got)
	}
	keys(m, "g")
	for range 6 {
		keys(m, "j")
	}
	if got := cursorAt(m); got != "legacy/mainframe" {
		t.Fatalf("6×j: %q, want the last caller row", got)
	}
	keys(m, "down")
	if got := cursorAt(m); got != "svc:bank-api" {
		t.Fatalf("down from the last caller: %q, want the first service", got)
	}
	if _, ok := m.overview.selectedKey(); ok {
		t.Error("a service row also reads as a caller row")
	}
	v := ansi.Strip(m.View())
	if r := lineWith(v, "bank-api     160"); !strings.HasPrefix(r, "► bank-api") {
		t.Errorf("selected service row not marked: %q\n%s", r, v)
	}
	if strings.Contains(lineWith(v, "checkout payments"), "►") {
		t.Error("a caller row is still marked")
	}
	// Its signals preview under the tables.
	if !strings.Contains(v, "SERVICE bank-api window 1m") || !strings.Contains(lineWith(v, "received "), "160/s") {
		t.Errorf("no preview of the selected service:\n%s", v)
	}
	keys(m, "up")
	if got := cursorAt(m); got != "legacy/mainframe" {
		t.Errorf("up from the first service: %q", got)
	}
}

// TestFirstCallerRowAfterServicesOnly: a first frame with service rows
// only (a fleet's first scrapes can bring a service before its callers)
// puts the cursor on the first without holding to it: the first caller
// row to come is the selection, as when the callers came first. A
// service the user chose is held.
func TestFirstCallerRowAfterServicesOnly(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	only := svcFrame(dataTime, 0)
	only.frame.Rows, only.frame.Timelines = nil, nil
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, only)
	if got := cursorAt(m); got != "svc:bank-api" {
		t.Fatalf("services only: cursor on %q, want the first service", got)
	}
	send(m, svcFrame(dataTime.Add(time.Second), 0))
	want := m.overview.frame.Rows[m.overview.order[0]].Key()
	if got := cursorAt(m); got != want.Target+"/"+want.Dependency {
		t.Fatalf("with the callers: cursor on %q, want the first caller row %s/%s", got, want.Target, want.Dependency)
	}
	// Chosen, a service is held as the callers come.
	m = newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, only)
	keys(m, "j")
	send(m, svcFrame(dataTime.Add(time.Second), 0))
	if got := cursorAt(m); got != "svc:inventory" {
		t.Fatalf("a chosen service: cursor on %q after the callers came, want svc:inventory", got)
	}
}

// The selected service stays selected when the caller rows reorder, the
// sort changes or other services come and go.
func TestServiceSelectionStableAcrossRefresh(t *testing.T) {
	m := svcModel(t, Options{}, 120, 40, nil)
	selectService(t, m, "inventory")
	send(m, svcFrame(dataTime.Add(time.Second), 1)) // callers reorder
	if got := cursorAt(m); got != "svc:inventory" {
		t.Fatalf("after a refresh: %q", got)
	}
	keys(m, "s")
	if got := cursorAt(m); got != "svc:inventory" || m.overview.sortBy != colEff {
		t.Fatalf("after a sort: %q (sort %v)", got, m.overview.sortBy)
	}
	if got := svcNamesShown(m); got[0] != "bank-api" || got[1] != "inventory" {
		t.Errorf("services not by name under another sort: %q", got)
	}
	f := svcFrame(dataTime.Add(2*time.Second), 1)
	f.services = f.services[1:] // bank-api is gone
	f.frame.Rows = f.frame.Rows[:3]
	send(m, f)
	if got := cursorAt(m); got != "svc:inventory" || m.overview.cursor != 3 {
		t.Errorf("with rows gone: %q at %d, want svc:inventory at 3", got, m.overview.cursor)
	}
}

func TestServiceEnterOpensDetailEscGoesBack(t *testing.T) {
	var reqs []frameRequest
	m := svcModel(t, Options{}, 120, 40, &reqs)
	selectService(t, m, "inventory")
	cmd := keys(m, "enter")
	if m.view != viewService || cmd == nil {
		t.Fatalf("enter on a service: view %v, cmd %v", m.view, cmd)
	}
	run(t, m, cmd)
	if len(reqs) != 1 || reqs[0].Service != "inventory" || reqs[0].EndMs != 0 {
		t.Fatalf("requests after enter: %+v, want one for inventory's bins", reqs)
	}
	if m.request(0).Service != "inventory" {
		t.Error("the wait loop's next request does not ask for the bins")
	}
	v := ansi.Strip(m.View())
	for _, s := range []string{"SERVICE  inventory  source sim", "QUEUE range 5m, 10s bins", "37/∞", "RESPONSES", "Ø 503 w/o RA", "18.4/s",
		"← 503 w/ RA", "55.0/s", "CAPACITY", "58/64", "CANCELLATION", "44.0/s", "SERVICE TIME", "SIGNALS", "unbounded"} {
		if !strings.Contains(v, s) {
			t.Errorf("service detail lacks %q", s)
		}
	}
	if !strings.Contains(lastLine(v), "esc back") {
		t.Errorf("footer: %q", lastLine(v))
	}
	// A frame from a request made before enter (no bins) keeps the bins
	// on screen rather than blanking the charts.
	send(m, svcFrame(dataTime.Add(time.Second), 1))
	if m.shownDerived.svcTarget != "inventory" || len(m.shownDerived.svcTimeline) != 30 {
		t.Errorf("bins lost on a frame without them: %q, %d bins", m.shownDerived.svcTarget, len(m.shownDerived.svcTimeline))
	}
	keys(m, "j", "j")
	if m.svcDetail.scroll != 2 {
		t.Errorf("scroll %d", m.svcDetail.scroll)
	}
	keys(m, "esc")
	if m.view != viewOverview || cursorAt(m) != "svc:inventory" {
		t.Errorf("esc: view %v, cursor %q", m.view, cursorAt(m))
	}
	if m.request(0).Service != "" {
		t.Error("bins still asked for after leaving the service detail")
	}
	// tab from a service row opens its detail too; tab again goes on to
	// the chains.
	run(t, m, keys(m, "tab"))
	if m.view != viewService {
		t.Errorf("tab on a service row: view %v", m.view)
	}
	keys(m, "tab")
	if m.view != viewChains {
		t.Errorf("tab from the service detail: view %v", m.view)
	}
}

func TestFilterAppliesToServices(t *testing.T) {
	m := svcModel(t, Options{}, 120, 40, nil)
	keys(m, "/", "b", "a", "n", "k", "enter")
	if o, s := order(m), svcNamesShown(m); len(o) != 1 || o[0] != "payments/bank-api" || len(s) != 1 || s[0] != "bank-api" {
		t.Fatalf("filter bank: callers %q services %q", o, s)
	}
	keys(m, "/")
	m.Update(tea.KeyMsg{Type: tea.KeyBackspace})
	m.Update(tea.KeyMsg{Type: tea.KeyBackspace})
	m.Update(tea.KeyMsg{Type: tea.KeyBackspace})
	m.Update(tea.KeyMsg{Type: tea.KeyBackspace})
	keys(m, "i", "n", "v", "enter")
	// Only the caller row to inventory and the inventory service are left:
	// j crosses straight from one to the other.
	keys(m, "j")
	if got := cursorAt(m); got != "svc:inventory" {
		t.Errorf("j under filter inv: %q", got)
	}
	// The filter reads the sanitised name and the source shape.
	keys(m, "esc", "/", "p", "r", "o", "m", "h", "t", "t", "p", "enter")
	if s := svcNamesShown(m); len(s) != 1 || s[0] != "bank-api" {
		t.Errorf("filter promhttp: %q", s)
	}
	keys(m, "/", "z", "z", "enter")
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "no service matches the filter") || !strings.Contains(lineWith(v, "SERVICES"), `filter "promhttpzz"`) {
		t.Errorf("services filtered out not explained:\n%s", v)
	}
	keys(m, "esc")
	if len(svcNamesShown(m)) != 4 {
		t.Errorf("esc did not bring the services back: %q", svcNamesShown(m))
	}
}

func TestPauseFreezesServices(t *testing.T) {
	var reqs []frameRequest
	m := svcModel(t, Options{}, 120, 40, &reqs)
	keys(m, "space")
	before := lineWith(ansi.Strip(m.View()), "inventory    367")
	if before == "" {
		t.Fatal("no inventory service row")
	}
	send(m, svcFrame(dataTime.Add(5*time.Second), 1))
	if got := lineWith(ansi.Strip(m.View()), "37/∞"); got != before {
		t.Errorf("paused service row changed:\n%s\n%s", before, got)
	}
	if m.liveDerived.services[1].ReceivedPerS.V() != 387 {
		t.Errorf("the newest services were not kept while paused: %+v", m.liveDerived.services[1].ReceivedPerS)
	}
	// Opening a service while paused asks for the frozen moment's bins;
	// the newest data is rebuilt too (variant 1, 5 s later).
	m.build = func(_ Source, req frameRequest) (model.Frame, derived) {
		reqs = append(reqs, req)
		if req.EndMs == 0 {
			return fixtureFrame(dataTime.Add(5*time.Second), req.Window, 1), svcDerived(req, 1)
		}
		return fixtureFrame(time.UnixMilli(req.EndMs), req.Window, 0), svcDerived(req, 0)
	}
	selectService(t, m, "inventory")
	run(t, m, keys(m, "enter"))
	var frozen bool
	for _, r := range reqs {
		frozen = frozen || (r.Service == "inventory" && r.EndMs == dataTime.UnixMilli())
	}
	if !frozen || !m.Paused() || !m.shown.Time.Equal(dataTime) || m.shownDerived.svcTarget != "inventory" {
		t.Errorf("paused service detail: requests %+v, shown at %v", reqs, m.shown.Time)
	}
	keys(m, "esc", "space")
	if got := lineWith(ansi.Strip(m.View()), "37/∞"); !strings.Contains(got, "387") {
		t.Errorf("resume did not show the newest services: %q", got)
	}
}

// A short screen keeps the caller rows but still says the services exist;
// moving the cursor there shows the selected one.
func TestServicesOnAShortScreen(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	f := liveFrame(bigFrame(dataTime, 40, 0))
	f.services = fixtureServices(0)
	send(m, tea.WindowSizeMsg{Width: 80, Height: 24}, f)
	v := screen(t, m)
	if !strings.Contains(v, "SERVICES 4 services") || !strings.Contains(v, "↓ 4 services hidden: enlarge the terminal") {
		t.Errorf("hidden services not announced:\n%s", v)
	}
	if !strings.Contains(v, "rows 1-18 of 40") {
		t.Errorf("callers lost their room:\n%s", v)
	}
	keys(m, "G")
	v = screen(t, m)
	if !strings.Contains(v, `► svc\x1b]0;`) || !strings.Contains(v, "services 4-4 of 4") {
		t.Errorf("the selected service is not on screen:\n%s", v)
	}
}

func TestServiceRowsAbsentShowDash(t *testing.T) {
	m := svcModel(t, Options{}, 200, 60, nil)
	row := lineWith(ansi.Strip(m.View()), "!legacy         -")
	fields := strings.Fields(row)
	if len(fields) != 1+int(numSvcCols) {
		t.Fatalf("legacy service row has %d fields: %q", len(fields), row)
	}
	for i, f := range fields[1:] {
		if f != "-" {
			t.Errorf("absent %s reads %q", svcColSpecs[i].head, f)
		}
	}
	// A real 0 is a 0: inventory answers no 429.
	inv := strings.Fields(lineWith(ansi.Strip(m.View()), "inventory    367"))
	if inv[1+int(svc429)] != "0" || inv[1+int(svc5xx)] != "-" || inv[1+int(svcQueue)] != "37/∞" || inv[1+int(svc503)] != "73.4(55.0)" {
		t.Errorf("inventory row: %q", inv)
	}
}

func TestServicesNoColourNoLeaks(t *testing.T) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI)
	for _, view := range []string{"overview", "detail"} {
		col := svcModel(t, Options{Renderer: r}, 120, 40, nil)
		plain := svcModel(t, Options{}, 120, 40, nil)
		if view == "detail" {
			openService(t, col, "svc\x1b]0;pwned\x07\u202eevil")
			openService(t, plain, "svc\x1b]0;pwned\x07\u202eevil")
		}
		v := col.View()
		// Shown as text (\x1b]0;pwned\x07\u202e), never written raw.
		if strings.Contains(v, "\u202e") || strings.Contains(v, "\x07") || strings.Contains(v, "\x1b[2J") || strings.Contains(v, "\x1b]") {
			t.Errorf("%s: untrusted service text leaked", view)
		}
		if got, want := ansi.Strip(v), plain.View(); got != want {
			t.Errorf("%s: coloured screen differs once stripped\n%s\n---\n%s", view, got, want)
		}
	}
	// Without colour, the response classes keep their glyphs.
	m := svcModel(t, Options{Renderer: r, NoColor: true}, 200, 60, nil)
	v := m.View()
	for _, s := range []string{"√2xx/s", "¬429/s", "Ø503/s(RA)", "×5xx/s"} {
		if !strings.Contains(v, s) {
			t.Errorf("no-colour services header lacks %q", s)
		}
	}
}

// A frame without services (the caller-only fixture) has no SERVICES
// section at all.
func TestNoServicesNoSection(t *testing.T) {
	m := goldenModel(t, Options{}, 120, 40)
	if v := ansi.Strip(m.View()); strings.Contains(v, "SERVICES") {
		t.Errorf("empty services section:\n%s", v)
	}
	keys(m, "G", "enter")
	if m.view != viewDetail {
		t.Errorf("enter on the last caller row: view %v", m.view)
	}
}

// Every size, overview and service detail: no line wider than the screen,
// exactly one screen of lines.
func TestServicesFitEverySize(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{80, 24}, {99, 30}, {100, 30}, {160, 48}, {250, 80}} {
		m := svcModel(t, Options{}, sz.w, sz.h, nil)
		screen(t, m)
		selectService(t, m, "inventory")
		screen(t, m)
		run(t, m, keys(m, "enter"))
		screen(t, m)
		keys(m, "G")
		screen(t, m)
	}
}

// An emitter counting responses only by class (HAProxy, Envoy) knows its
// 5xx but not its 503s: the 5xx column shows all of them; with 503s known
// it shows the other 5xx only.
func TestOther5xx(t *testing.T) {
	byClass := model.ServiceSignals{Responses5xxPerS: some(16.8)}
	if got := other5xx(&byClass); got != some(16.8) {
		t.Errorf("class-only emitter: %v, want all 5xx", got)
	}
	exact := model.ServiceSignals{Responses503PerS: some(20), ResponsesOther5xxPerS: some(1), Responses5xxPerS: some(21)}
	if got := other5xx(&exact); got != some(1) {
		t.Errorf("exact codes: %v, want the other 5xx", got)
	}
	only503 := model.ServiceSignals{Responses503PerS: some(20), Responses5xxPerS: some(21)}
	if got := other5xx(&only503); got.OK() {
		t.Errorf("503 known, other 5xx unknown: %v, want absent", got)
	}
}
