package ui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/retrytop/retrytop/model"
)

// Targets that named themselves (target_info) or were named by their job
// are shown by their service, with the address when replicas share it; a
// name the user gave is shown as given.
func TestOverviewShowsServiceNames(t *testing.T) {
	f := model.Frame{Time: dataTime, Window: time.Minute, Bin: 10 * time.Second}
	add := func(name, service, source, dep string) {
		f.Targets = append(f.Targets, model.TargetStatus{Name: name, Service: service, NameSource: source, Up: true, LastScrape: dataTime})
		f.Rows = append(f.Rows, row(name, dep, 50, 1.5, 0.1))
	}
	add("127.0.0.1:4101", "browser", "target_info", "app")
	add("127.0.0.1:4102", "app", "job", "client")
	add("127.0.0.1:4103", "app", "job", "client")
	add("mine", "mine", "user", "provider")
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 160, Height: 40}, liveFrame(f))
	v := ansi.Strip(m.View())
	for _, want := range []string{"browser ", "app 127.0.0.1:4102", "app 127.0.0.1:4103", "mine "} {
		if !strings.Contains(v, want) {
			t.Errorf("overview lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "127.0.0.1:4101") {
		t.Errorf("a target that named itself is still shown by its address:\n%s", v)
	}
}
