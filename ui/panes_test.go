package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/model"
)

// f shows every finding whole: message, evidence, advice; esc and f go
// back. The overview's strip cuts them; the pane never does.
func TestFindingsPane(t *testing.T) {
	m := storyModel(t, Options{}, 120, 40)
	n := len(m.shownDerived.found)
	if n < 5 {
		t.Fatalf("fixture has %d findings, want more than the overview shows", n)
	}
	send(m, keyMsg("f"))
	if m.view != viewFindings {
		t.Fatalf("f: view %v", m.view)
	}
	scr := screen(t, m)
	golden(t, "findings_120x40", scr)
	for _, want := range []string{"FINDINGS", "CRITICAL RETRY_AMPLIFICATION  checkout → payments", "evidence amplification=2.41",
		"do       cap retries with a shared retry budget"} {
		if !strings.Contains(scr, want) {
			t.Errorf("findings pane lacks %q:\n%s", want, scr)
		}
	}
	// The message is whole, wrapped, never cut with an ellipsis.
	if strings.Contains(scr, "…\n") {
		t.Errorf("a finding is cut:\n%s", scr)
	}
	// It scrolls to the last finding.
	send(m, keyMsg("G"))
	last := m.shownDerived.found[n-1]
	if scr := ansi.Strip(m.View()); !strings.Contains(scr, last.Code) {
		t.Errorf("G does not reach the last finding %s:\n%s", last.Code, scr)
	}
	send(m, keyMsg("f"))
	if m.view != viewOverview {
		t.Errorf("f again: view %v, want the overview", m.view)
	}
	send(m, keyMsg("f"), keyMsg("esc"))
	if m.view != viewOverview {
		t.Errorf("esc: view %v, want the overview", m.view)
	}
}

// i says what is watched: source, window, version, and each target with
// its URL and health (sanitised: target text is untrusted).
func TestInfoPane(t *testing.T) {
	m := storyModel(t, Options{Source: "scrape of 4 targets every 1s", Version: "v0.3.0\x1b[2J"}, 120, 40)
	f := fixtureFrame(dataTime, m.c.window, 0)
	f.Targets[0].URL = "http://10.0.0.1:9100/metrics"
	f.Targets[0].Dialect = "native"
	msg := liveFrame(f)
	msg.derived = fixtureDerived(f)
	send(m, msg, keyMsg("i"))
	if m.view != viewInfo {
		t.Fatalf("i: view %v", m.view)
	}
	scr := screen(t, m)
	golden(t, "info_120x40", scr)
	for _, want := range []string{"live · scrape of 4 targets every 1s", "1m (rates), charts: range 5m, 10s bins", "v0.3.0",
		"checkout", "http://10.0.0.1:9100/metrics", "dialect native", "legacy", "down", "error: dial tcp 10.1.2.3:9100"} {
		if !strings.Contains(scr, want) {
			t.Errorf("info pane lacks %q:\n%s", want, scr)
		}
	}
	if strings.Contains(m.View(), "\x1b[2J") {
		t.Error("the version reached the terminal unescaped")
	}
}

func TestWrapAt(t *testing.T) {
	tests := []struct {
		text  string
		width int
		want  string // the first line
	}{
		{"short", 10, "short"},
		{"two words here", 9, "two words"},
		{"abcdefghijklmno", 5, "abcde"}, // no space: cut at the width
		{"a → b → c → d", 7, "a → b →"}, // columns, not bytes
		{"naïve text goes", 6, "naïve"},
	}
	for _, tt := range tests {
		if got := strings.TrimRight(tt.text[:wrapAt(tt.text, tt.width)], " "); got != tt.want {
			t.Errorf("wrapAt(%q, %d): first line %q, want %q", tt.text, tt.width, got, tt.want)
		}
	}
}

// At 80 columns the columns that carry the incident stay: a storm's
// non-zero timeouts and retries before protection that did nothing.
func TestColumnPriorityKeepsTheIncident(t *testing.T) {
	storm := []model.Signals{bareRow("client", "provider"), bareRow("app", "client")}
	storm[0].AttemptsPerS, storm[0].Amplification = some(146), some(2.97)
	storm[0].EffectiveSuccess, storm[0].AttemptSuccess = some(0.013), some(0.004)
	storm[0].TimeoutsPerS, storm[0].RetriesPerS = some(145), some(97.5)
	storm[0].BudgetDeniedPerS, storm[0].AdmissionRejectedPerS = some(0), some(0)
	storm[1].BudgetDeniedPerS, storm[1].AdmissionRejectedPerS = model.Absent, model.Absent
	lay := computeLayout(80, 8, 10, emptyCols(storm))
	for _, id := range []colID{colAmp, colOrig, colAtt, colEff, colTimeouts, colRetry} {
		if !lay.show[id] {
			t.Errorf("80 columns hide %s in a storm", colSpecs[id].head)
		}
	}
	for _, id := range []colID{colBudget, colAdmission} {
		if lay.show[id] {
			t.Errorf("80 columns show %s, zero in every row, before the storm's columns", colSpecs[id].head)
		}
	}
	// With protection at work, it keeps its place.
	storm[0].BudgetDeniedPerS = some(12)
	if lay := computeLayout(80, 8, 10, emptyCols(storm)); !lay.show[colBudget] {
		t.Error("a non-zero budget column is hidden at 80 columns")
	}
}

// The info pane says which dialect a custom mapping set aside on a target
// and which backend a Prometheus source reads.
func TestInfoPaneSetAsideAndBackend(t *testing.T) {
	m := storyModel(t, Options{}, 160, 40)
	f := fixtureFrame(dataTime, m.c.window, 0)
	f.Targets[0].Dialect = "mine"
	f.Targets[0].DialectsSetAside = []string{`traefik: mine reads the same families ("traefik_router_requests_total")`}
	f.Targets[1].Backend = "victoriametrics 1.79.5"
	msg := liveFrame(f)
	msg.derived = fixtureDerived(f)
	send(m, msg, keyMsg("i"))
	scr := screen(t, m)
	for _, want := range []string{"dialect mine", `set aside: traefik: mine reads the same families`, "backend victoriametrics 1.79.5"} {
		if !strings.Contains(scr, want) {
			t.Errorf("info pane lacks %q:\n%s", want, scr)
		}
	}
}
