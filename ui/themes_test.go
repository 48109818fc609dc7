package ui

import (
	"io"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

func TestThemes(t *testing.T) {
	for _, name := range append([]string{"", "TERMINAL", "colorblind"}, ThemeNames...) {
		th, err := ParseTheme(name)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		// Protection never shares a colour with provider failures, and
		// every outcome has its own colour.
		seen := map[lipgloss.TerminalColor]string{}
		for n, c := range map[string]lipgloss.TerminalColor{
			"success": th.Success, "rescued": th.Rescued, "admission": th.AdmissionRejected, "budget": th.BudgetDenied,
			"deadline": th.DeadlineExhausted, "provider error": th.ProviderError, "timeout": th.Timeout,
		} {
			if c == nil {
				t.Errorf("%q: no colour for %s", name, n)
				continue
			}
			if other, dup := seen[c]; dup {
				t.Errorf("%q: %s and %s share a colour", name, n, other)
			}
			seen[c] = n
		}
	}
	if _, err := ParseTheme("solarized"); err == nil || !strings.Contains(err.Error(), "rg-safe") {
		t.Errorf("unknown theme: %v, want an error naming the themes", err)
	}
	// rg-safe: success and failure are not told apart by green vs red.
	rg, _ := ParseTheme("rg-safe")
	for _, c := range []lipgloss.TerminalColor{rg.Success, rg.ProviderError, rg.Failure} {
		if c == lipgloss.ANSIColor(1) || c == lipgloss.ANSIColor(2) || c == lipgloss.ANSIColor(9) || c == lipgloss.ANSIColor(10) {
			t.Errorf("rg-safe uses ANSI red or green: %v", c)
		}
	}
}

// A theme changes colours only: the screen reads the same once stripped.
func TestThemesMoveNothing(t *testing.T) {
	plain := ansi.Strip(goldenModel(t, Options{}, 120, 40).View())
	for _, name := range ThemeNames {
		th, _ := ParseTheme(name)
		r := lipgloss.NewRenderer(io.Discard)
		r.SetColorProfile(termenv.ANSI256)
		v := goldenModel(t, Options{Theme: &th, Renderer: r}, 120, 40).View()
		if !strings.Contains(v, "\x1b[") {
			t.Errorf("%s: no colour at all", name)
		}
		if ansi.Strip(v) != plain {
			t.Errorf("%s: the coloured screen differs once stripped", name)
		}
	}
}
