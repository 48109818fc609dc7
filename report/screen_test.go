package report

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -run %s -update to create it)", err, t.Name())
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (go test ./report -run %s -update rewrites it):\n--- got\n%s\n--- want\n%s", path, t.Name(), got, want)
	}
}

// screenViews are rendered views as bubbletea hands them over: lipgloss
// SGR (16, 256 and true colours, bold, faint, reverse), a wide rune, and
// what a hostile target could smuggle into a label if the dashboard let
// it through (markup, an OSC title, a cursor move, bidi and C1 controls).
var screenViews = map[string]string{
	"colours": "\x1b[1;38;5;212mretrytop\x1b[0m \x1b[32m● 4 up\x1b[0m  \x1b[2mwindow 30s\x1b[22m\n" +
		"\x1b[7m TARGET \x1b[27m \x1b[38;2;255;135;0mAMP 3.02x\x1b[39m \x1b[41;97mCRIT\x1b[m\n" +
		"\x1b[90mhop\x1b[0m\t表 \x1b[4munder\x1b[24m \x1b[3mit\x1b[23m\n",
	"hostile": "app <script>alert(\"x\")</script> & 'q'\n" +
		"\x1b]0;owned\x07title\x1b[2Jcleared\x1b[10;5Hmoved\n" +
		"bidi\u202eevil\u202c zero\u200bwidth c1\u009b31mred\x01bell\n" +
		"\x1b[38;5;999mbad\x1b[38;9mworse\x1b[0m ok",
}

func TestScreenGolden(t *testing.T) {
	for name, view := range screenViews {
		t.Run(name, func(t *testing.T) {
			golden(t, "screen/"+name+".txt", []byte(ScreenText(view)))
			golden(t, "screen/"+name+".svg", ScreenSVG(view))
		})
	}
}

// TestScreenText checks the plain text by hand, beside the golden files:
// no escape byte, no control character, and the words in their columns.
func TestScreenText(t *testing.T) {
	got := ScreenText(screenViews["colours"])
	want := "retrytop ● 4 up  window 30s\n TARGET  AMP 3.02x CRIT\nhop     表 under it\n"
	if got != want {
		t.Errorf("ScreenText:\n%q\nwant\n%q", got, want)
	}
	hostile := ScreenText(screenViews["hostile"])
	for _, bad := range []string{"\x1b", "\u202e", "\u200b", "\u009b", "\x01", "\x07"} {
		if strings.Contains(hostile, bad) {
			t.Errorf("plain text keeps %q: %q", bad, hostile)
		}
	}
	if !strings.Contains(hostile, "titleclearedmoved") || !strings.Contains(hostile, "<script>") {
		t.Errorf("plain text lost the visible text: %q", hostile)
	}
}

// TestScreenSVGEscapes: markup from the view is text in the SVG, and the
// SGR colours land on the cells they were set for.
func TestScreenSVGEscapes(t *testing.T) {
	svg := string(ScreenSVG(screenViews["hostile"]))
	if strings.Contains(svg, "<script") || !strings.Contains(svg, "&lt;script&gt;alert(&quot;x&quot;)") {
		t.Errorf("markup not escaped:\n%s", svg)
	}
	svg = string(ScreenSVG(screenViews["colours"]))
	for _, want := range []string{
		`fill="#ff87d7" textLength="67.2" lengthAdjust="spacingAndGlyphs" xml:space="preserve" font-weight="bold">retrytop<`, // 38;5;212, 8 cells
		`fill="#ff8700"`,                   // 38;2;255;135;0
		`fill="#cd0000"/>`,                 // 41 background
		`fill="#1c1c1c" textLength="67.2"`, // reverse: default background as text colour
		`>表<`,
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %s:\n%s", want, svg)
		}
	}
}

func TestSaveScreen(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 1, 17, 13, 10, 123e6, time.FixedZone("X", 3600))
	paths, err := SaveScreen(dir, now, screenViews["colours"])
	if err != nil {
		t.Fatal(err)
	}
	stem := filepath.Join(dir, "retrytop-20261201-161310.123")
	want := []string{stem + ".txt", stem + ".ansi", stem + ".svg"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("paths %v, want %v", paths, want)
	}
	for i, body := range []string{ScreenText(screenViews["colours"]), screenViews["colours"], string(ScreenSVG(screenViews["colours"]))} {
		got, err := os.ReadFile(paths[i])
		if err != nil || string(got) != body {
			t.Errorf("%s: %v, content %q", paths[i], err, got)
		}
	}
	// The same moment again must not overwrite the first save.
	if _, err := SaveScreen(dir, now, "other"); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("second save at the same time: %v, want an 'exists' error", err)
	}
	if _, err := SaveScreen(filepath.Join(dir, "missing"), now, "x"); err == nil {
		t.Error("save into a missing directory succeeded")
	}
}
