package ui

import (
	"reflect"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/retrytop/retrytop/model"
)

// memoryRefused is a target whose newest body --memory-limit refused:
// 120,000 series needing 300 MiB against a budget of 256 MiB.
func memoryRefused(name string) model.TargetStatus {
	return model.TargetStatus{Name: name, Up: false, Scrapes: 3, Failures: 1,
		LastError: "parsing 120000 series: needs 300 MiB, more than the scrapes' memory budget of 256 MiB leaves (--memory-limit)",
		MemoryCap: &model.MemoryCap{ByMemory: 120000, Needed: 300 << 20, Budget: 256 << 20}}
}

// The banner says what the memory limit refused, with the bytes needed
// against the budget; several such targets fold into one line.
func TestMemoryCapBanner(t *testing.T) {
	targets := []model.TargetStatus{{Name: "ok", Up: true}, memoryRefused("huge")}
	want := []string{"WARNING SERIES_CAP huge: parse of 120000 series refused by --memory-limit: needs 300 MiB, budget 256 MiB; its signals are missing until it fits"}
	if got := seriesCapLines(targets); !reflect.DeepEqual(got, want) {
		t.Errorf("banner:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := findingLines(model.Frame{Targets: targets}, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("findings strip = %q, want the banner", got)
	}
	targets = append(targets, memoryRefused("huge2"), memoryRefused("huge3"), memoryRefused("huge4"), memoryRefused("huge5"))
	want = []string{"WARNING SERIES_CAP 5 targets' bodies refused by --memory-limit (huge, huge2, huge3 +2 more): their signals are missing (retrytop analyze: targets[].series_cap)"}
	if got := seriesCapLines(targets); !reflect.DeepEqual(got, want) {
		t.Errorf("banner:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := seriesCapLines(targets[:1]); got != nil {
		t.Errorf("banner %q for a target nothing refused", got)
	}
}

// The info pane names the refusal under the target, with the bytes.
func TestMemoryCapInInfo(t *testing.T) {
	f := fixtureFrame(dataTime, time.Minute, 0)
	f.Targets = append(f.Targets, memoryRefused("huge"))
	m := newTestModel(t, Options{}, func(frameRequest) model.Frame { return f })
	send(m, tea.WindowSizeMsg{Width: 200, Height: 40}, liveFrame(f), keyMsg("i"))
	scr := screen(t, m)
	want := "memory: parse of 120000 series refused by --memory-limit: needs 300 MiB, budget 256 MiB"
	if !strings.Contains(scr, want) {
		t.Errorf("no %q in\n%s", want, scr)
	}
}
