package ui

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./ui -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (go test ./ui -update rewrites it)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

// screen is View() with escape sequences stripped, checked for size.
func screen(t *testing.T, m *Model) string {
	t.Helper()
	before := m.overflows
	v := ansi.Strip(m.View())
	if m.overflows != before {
		t.Errorf("%dx%d: %d lines were wider than the screen and cut", m.c.width, m.c.height, m.overflows-before)
	}
	lines := strings.Split(v, "\n")
	if w, h := m.c.width, m.c.height; w >= MinWidth && h >= MinHeight {
		if len(lines) != h {
			t.Errorf("%dx%d: view has %d lines", w, h, len(lines))
		}
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw > m.c.width {
			t.Errorf("%dx%d: line %d is %d columns wide: %q", m.c.width, m.c.height, i, lw, l)
		}
	}
	return v + "\n"
}

var goldenSizes = []struct{ w, h int }{{80, 24}, {120, 40}, {180, 50}, {200, 60}}

func sizeName(w, h int) string { return itoa(w) + "x" + itoa(h) }

func itoa(i int) string { return string(appendCount(nil, float64(i))) }

func goldenModel(t *testing.T, opts Options, w, h int) *Model {
	m := newTestModel(t, opts, func(req frameRequest) model.Frame { return fixtureFrame(dataTime, req.Window, 0) })
	send(m, tea.WindowSizeMsg{Width: w, Height: h}, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	return m
}

func TestGoldenOverview(t *testing.T) {
	for _, sz := range goldenSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			m := goldenModel(t, Options{}, sz.w, sz.h)
			golden(t, "overview_"+sizeName(sz.w, sz.h), screen(t, m))
		})
	}
}

// fixtureDerived is what the build Cmd derives from the fixture frame:
// its inferred chains (gateway → checkout → payments → bank-api), the
// findings over them, the strip and the worst row.
func fixtureDerived(f model.Frame) derived {
	th := analysis.DefaultThresholds()
	chains := analysis.EvaluateChains(f.Rows, analysis.ResolveChains(nil, nil, f.Rows), th.Gap)
	d := derived{chains: chains, found: analysis.Evaluate(f, chains, th)}
	d.findings = findingLines(f, d.found)
	d.worst, d.hasWorst = worstRow(&f, d.found)
	return d
}

// storyModel is goldenModel whose frames carry what the build Cmd derives:
// the strip, the chains, the findings and the worst row.
func storyModel(t *testing.T, opts Options, w, h int) *Model {
	m := newTestModel(t, opts, nil)
	m.build = func(_ Source, req frameRequest) (model.Frame, derived) {
		f := fixtureFrame(dataTime, req.Window, 0)
		return f, fixtureDerived(f)
	}
	msg := liveFrame(fixtureFrame(dataTime, time.Minute, 0))
	msg.derived = fixtureDerived(msg.frame)
	send(m, tea.WindowSizeMsg{Width: w, Height: h}, msg)
	return m
}

// The overview as a real frame shows it: the strip on short screens; from
// 45 rows the chains, the findings with their advice, and charts that
// take the rest of the screen.
func TestGoldenStory(t *testing.T) {
	for _, sz := range goldenSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			m := storyModel(t, Options{}, sz.w, sz.h)
			scr := screen(t, m)
			golden(t, "story_"+sizeName(sz.w, sz.h), scr)
			if sz.h >= tallHeight {
				for _, want := range []string{"CHAINS", "gateway 1.0× → checkout 2.4× → payments 1.7× → bank-api", "FINDINGS", "RETRY_AMPLIFICATION"} {
					if !strings.Contains(scr, want) {
						t.Errorf("%s: no %q", sizeName(sz.w, sz.h), want)
					}
				}
				if n := blankLines(scr); n > 3 {
					t.Errorf("%s: %d blank lines above the key bar, want at most 3:\n%s", sizeName(sz.w, sz.h), n, scr)
				}
			}
		})
	}
}

// blankLines counts the blank lines between the header and the key bar.
func blankLines(scr string) int {
	lines := strings.Split(strings.TrimSuffix(scr, "\n"), "\n")
	n := 0
	for _, ln := range lines[1 : len(lines)-1] {
		if strings.TrimSpace(ln) == "" {
			n++
		}
	}
	return n
}

func TestGoldenDetail(t *testing.T) {
	for _, sz := range goldenSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			m := goldenModel(t, Options{}, sz.w, sz.h)
			send(m, keyMsg("enter"))
			golden(t, "detail_"+sizeName(sz.w, sz.h), screen(t, m))
		})
	}
}

func TestGoldenVariants(t *testing.T) {
	t.Run("detail_ascii_120x40", func(t *testing.T) {
		m := goldenModel(t, Options{Charset: CharsetASCII}, 120, 40)
		send(m, keyMsg("enter"))
		golden(t, "detail_ascii_120x40", screen(t, m))
	})
	t.Run("overview_ascii_paused_80x24", func(t *testing.T) {
		m := goldenModel(t, Options{Charset: CharsetASCII}, 80, 24)
		send(m, keyMsg("space"), liveFrame(fixtureFrame(dataTime.Add(7*time.Second), time.Minute, 1)))
		golden(t, "overview_ascii_paused_80x24", screen(t, m))
	})
	t.Run("detail_braille_200x60", func(t *testing.T) {
		m := goldenModel(t, Options{Charset: CharsetBraille}, 200, 60)
		send(m, keyMsg("enter"))
		golden(t, "detail_braille_200x60", screen(t, m))
	})
	t.Run("help_120x40", func(t *testing.T) {
		m := goldenModel(t, Options{}, 120, 40)
		send(m, keyMsg("?"))
		golden(t, "help_120x40", screen(t, m))
	})
	t.Run("detail_absent_120x40", func(t *testing.T) {
		// The row whose endpoint exposes only originals and attempts, and
		// whose target is down: every other signal reads "-".
		m := goldenModel(t, Options{}, 120, 40)
		send(m, keyMsg("G"), keyMsg("enter"))
		golden(t, "detail_absent_120x40", screen(t, m))
	})
	t.Run("too_small_79x24", func(t *testing.T) {
		m := goldenModel(t, Options{}, 79, 24)
		golden(t, "too_small_79x24", screen(t, m))
	})
	t.Run("replay_rec_filter_120x40", func(t *testing.T) {
		m := goldenModel(t, Options{Mode: ModeReplay, Badges: []string{"● REC"}}, 120, 40)
		send(m, keyMsg("/"), keyMsg("pay"))
		golden(t, "replay_rec_filter_120x40", screen(t, m))
	})
}

// selectService moves the cursor to the service row named target.
func selectService(t *testing.T, m *Model, target string) {
	t.Helper()
	for range m.overview.total() {
		if s, ok := m.overview.selectedService(); ok && s.Target == target {
			return
		}
		m.Update(keyMsg("j"))
	}
	t.Fatalf("no service row %q", target)
}

// openService selects a service row, presses enter and runs the build
// command that brings its bins.
func openService(t *testing.T, m *Model, target string) {
	t.Helper()
	selectService(t, m, target)
	run(t, m, keys(m, "enter"))
	if m.view != viewService || m.shownDerived.svcTarget != target {
		t.Fatalf("enter on %q: view %v, bins of %q", target, m.view, m.shownDerived.svcTarget)
	}
}

func TestGoldenServices(t *testing.T) {
	for _, sz := range goldenSizes {
		t.Run("overview_services_"+sizeName(sz.w, sz.h), func(t *testing.T) {
			m := svcModel(t, Options{}, sz.w, sz.h, nil)
			golden(t, "overview_services_"+sizeName(sz.w, sz.h), screen(t, m))
		})
	}
	for _, sz := range goldenSizes[:2] {
		t.Run("service_detail_"+sizeName(sz.w, sz.h), func(t *testing.T) {
			m := svcModel(t, Options{}, sz.w, sz.h, nil)
			openService(t, m, "inventory")
			golden(t, "service_detail_"+sizeName(sz.w, sz.h), screen(t, m))
		})
	}
	t.Run("service_detail_absent_120x40", func(t *testing.T) {
		// The down target that exports no service signal at all: every
		// value reads "-".
		m := svcModel(t, Options{}, 120, 40, nil)
		openService(t, m, "legacy")
		golden(t, "service_detail_absent_120x40", screen(t, m))
	})
	t.Run("overview_services_selected_ascii_80x24", func(t *testing.T) {
		m := svcModel(t, Options{Charset: CharsetASCII}, 80, 24, nil)
		selectService(t, m, "bank-api")
		golden(t, "overview_services_selected_ascii_80x24", screen(t, m))
	})
}
