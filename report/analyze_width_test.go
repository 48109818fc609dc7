package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestReportTextFitsItsWidth: analyze's text table fits the
// width it is given: columns no row has a value in go first, then the
// least telling ones, never the target, dependency or amplification, and
// a line says what was left out; width 0 (--wide, a pipe) keeps them all.
func TestReportTextFitsItsWidth(t *testing.T) {
	rep := reportFixture()
	table := func(width int) (head string, note string) {
		var b bytes.Buffer
		if err := WriteAnalysis(&b, rep, "text", width); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		for i, l := range lines {
			if strings.Contains(l, "DEPENDENCY") {
				head = l
			}
			if strings.HasPrefix(l, "(") && strings.Contains(l, "columns left out") && note == "" {
				// the note is wrapped to the width: its lines up to ")"
				note = l
				for j := i + 1; j < len(lines) && !strings.HasSuffix(note, ")"); j++ {
					if w := len(lines[j]); width > 0 && w > width {
						t.Errorf("width %d: the note's line is %d wide: %q", width, w, lines[j])
					}
					note += " " + strings.TrimSpace(lines[j])
				}
			}
		}
		return head, note
	}
	all, note := table(0)
	if note != "" || !strings.Contains(all, "FAST-FAIL-p99") || !strings.Contains(all, "BUDGET-DENIED/s") {
		t.Errorf("width 0: head %q, note %q", all, note)
	}
	for _, width := range []int{80, 120} {
		head, note := table(width)
		if w := len(head); w > width {
			t.Errorf("width %d: the table is %d wide: %q", width, w, head)
		}
		for _, must := range []string{"TARGET", "DEPENDENCY", "AMP"} {
			if !strings.Contains(head, must) {
				t.Errorf("width %d: %s left out: %q", width, must, head)
			}
		}
		if note == "" || !strings.Contains(note, "--wide shows all") {
			t.Errorf("width %d: no note of what was left out (head %q)", width, head)
		}
	}
	// A narrower table keeps a subset of a wider one's columns.
	h80, _ := table(80)
	h120, _ := table(120)
	for _, c := range strings.Fields(h80) {
		if !strings.Contains(h120, c) {
			t.Errorf("%s kept at 80 columns but not at 120", c)
		}
	}
}

// TestWrapLine: a line wider than the width breaks at spaces into lines
// no wider, each after the first indented by the line's indent and two
// more, with no trailing space, the spacing inside a line kept and every
// word whole but one longer than a line, which is cut.
func TestWrapLine(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"short line", 20, "short line"},
		{"  aa  bb cc dd", 10, "  aa  bb\n    cc dd"},
		{"  aa bb cc", 8, "  aa bb\n  cc"}, // an indent too deep for the width is not repeated
		{"one two three four", 9, "one two\n  three\n  four"},
		{"x abcdefghijkl", 6, "x\n  abcd\n  efgh\n  ijkl"},
		{"日本語 日本語", 8, "日本語\n  日本語"},
		{"日本語 日本語", 7, "日本語\n  日本\n  語"},
		{"no width", 0, "no width"},
	} {
		got := wrapLine(c.in, c.width)
		if got != c.want {
			t.Errorf("wrapLine(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}
