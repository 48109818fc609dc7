package ui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

func TestWorstRow(t *testing.T) {
	calm := row("app", "client", 100, 1.0, 0.001)    // 1.0 × 0.125/s failing
	storm := row("client", "provider", 80, 2.5, 0.8) // 2.5 × 500/s failing
	mild := row("browser", "app", 100, 1.2, 0.1)
	bare := bareRow("legacy", "db") // amplification 1, no failures known
	finding := func(sev analysis.Severity, target, dep string) analysis.Finding {
		return analysis.Finding{Code: "X", Severity: sev, Target: target, Dependency: dep}
	}
	tests := []struct {
		name    string
		rows    []model.Signals
		targets []model.TargetStatus
		fs      []analysis.Finding
		want    model.Key
		ok      bool
	}{
		{"no rows", nil, nil, nil, model.Key{}, false},
		{"nothing stands out", []model.Signals{bare}, nil, nil, model.Key{}, false},
		{"amplification x failing attempts", []model.Signals{calm, mild, storm}, nil, nil, storm.Key(), true},
		{"a finding beats load", []model.Signals{calm, mild, storm}, nil,
			[]analysis.Finding{finding(analysis.SeverityWarning, "app", "client")}, calm.Key(), true},
		{"the most severe finding wins", []model.Signals{calm, mild, storm}, nil,
			[]analysis.Finding{finding(analysis.SeverityWarning, "client", "provider"), finding(analysis.SeverityCritical, "browser", "app")}, mild.Key(), true},
		{"equal severity: load decides", []model.Signals{calm, mild, storm}, nil,
			[]analysis.Finding{finding(analysis.SeverityWarning, "app", "client"), finding(analysis.SeverityWarning, "client", "provider")}, storm.Key(), true},
		{"a finding names the target's service", []model.Signals{calm, storm},
			[]model.TargetStatus{{Name: "10.0.0.7:9100", Service: "app"}},
			[]analysis.Finding{finding(analysis.SeverityCritical, "app", "client")},
			model.Key{Target: "10.0.0.7:9100", Dependency: "client"}, true},
		{"chain findings name no row", []model.Signals{calm, storm}, nil,
			[]analysis.Finding{{Code: "MULTIPLE_RETRY_LAYERS", Severity: analysis.SeverityCritical, Target: "app", Dependency: "client", Chain: "c"}}, storm.Key(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := tt.rows
			if len(tt.targets) > 0 {
				// The row of the target named by address.
				rows = append([]model.Signals(nil), rows...)
				rows[0].Target = tt.targets[0].Name
			}
			f := model.Frame{Rows: rows, Targets: tt.targets}
			got, ok := worstRow(&f, tt.fs)
			if ok != tt.ok || got != tt.want {
				t.Errorf("worstRow = %v %v, want %v %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// followFrame is the fixture frame whose worst row (by the derived
// findings) is not the first in the amplification sort: the storm is on
// payments → bank-api.
func followMsg(worst model.Key) frameMsg {
	msg := liveFrame(fixtureFrame(dataTime, time.Minute, 0))
	msg.derived = derived{worst: worst, hasWorst: true}
	return msg
}

func TestFollowTheWorstRowUntilTheCursorMoves(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	bank := model.Key{Target: "payments", Dependency: "bank-api"}
	fraud := model.Key{Target: "payments", Dependency: "fraud"}
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, followMsg(bank))
	if k, _ := m.overview.selectedKey(); k != bank {
		t.Fatalf("cursor on %v, want the worst row %v", k, bank)
	}
	scr := ansi.Strip(m.View())
	if h := firstLine(scr); !strings.Contains(h, "following payments → bank-api") {
		t.Errorf("header does not name the followed row: %q", h)
	}
	if !strings.Contains(scr, "ORIGINALS vs ATTEMPTS payments → bank-api") {
		t.Errorf("the chart title does not name the followed row:\n%s", scr)
	}

	// The worst row changes: the cursor follows, and so does an open detail.
	send(m, keyMsg("enter"), followMsg(fraud))
	if m.view != viewDetail || m.detail.key != fraud {
		t.Fatalf("detail shows %v (view %v), want the new worst row %v", m.detail.key, m.view, fraud)
	}
	send(m, keyMsg("esc"))

	// A cursor move pins the row: new frames no longer move it.
	send(m, keyMsg("j"))
	pinned, _ := m.overview.selectedKey()
	send(m, followMsg(bank))
	if k, _ := m.overview.selectedKey(); k != pinned {
		t.Errorf("after a cursor move the cursor went to %v, want it pinned on %v", k, pinned)
	}
	if h := firstLine(ansi.Strip(m.View())); strings.Contains(h, "following") {
		t.Errorf("header still says following after a cursor move: %q", h)
	}

	// F follows again, at once.
	send(m, keyMsg("F"))
	if k, _ := m.overview.selectedKey(); k != bank {
		t.Errorf("after F the cursor is on %v, want %v", k, bank)
	}
}

// A filter that hides the worst row: the header does not claim to follow
// what is not on screen.
func TestFollowedRowFilteredOut(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	bank := model.Key{Target: "payments", Dependency: "bank-api"}
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, followMsg(bank))
	send(m, keyMsg("/"), keyMsg("inventory"), keyMsg("enter"))
	if h := firstLine(ansi.Strip(m.View())); strings.Contains(h, "following") {
		t.Errorf("header %q follows a row the filter hides", h)
	}
	send(m, keyMsg("esc"))
	if h := firstLine(ansi.Strip(m.View())); !strings.Contains(h, "following payments → bank-api") {
		t.Errorf("filter cleared: header %q, want the worst row followed again", h)
	}
}

// The help lists the follow key, from the keymap.
func TestHelpListsFollow(t *testing.T) {
	m := goldenModel(t, Options{}, 120, 40)
	send(m, keyMsg("?"))
	if scr := ansi.Strip(m.View()); !strings.Contains(scr, "follow the worst row") {
		t.Errorf("help lacks the follow key:\n%s", scr)
	}
}
