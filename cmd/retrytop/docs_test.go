package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRunnableDocs: every command in a code block marked
// `sh runnable` in README.md and docs/*.md runs as written from the
// repository's root and exits as the docs say (0, or the code a
// "# exit N" comment names). Commands are retrytop's own, without shell
// syntax (no pipes, no quotes with spaces), so they run in-process.
func TestRunnableDocs(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	t.Chdir(root)
	ran := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in := false
		for i, line := range strings.Split(string(b), "\n") {
			switch trimmed := strings.TrimSpace(line); {
			case strings.HasPrefix(trimmed, "```sh runnable"):
				in = true
				continue
			case strings.HasPrefix(trimmed, "```"):
				in = false
				continue
			case !in || trimmed == "":
				continue
			}
			cmdline, comment, _ := strings.Cut(line, "#")
			want := 0
			if c := strings.TrimSpace(comment); strings.HasPrefix(c, "exit ") {
				want, _ = strconv.Atoi(strings.TrimPrefix(c, "exit "))
			}
			args := strings.Fields(cmdline)
			where := filepath.Base(f) + ":" + strconv.Itoa(i+1)
			if len(args) == 0 || args[0] != "retrytop" {
				t.Errorf("%s: %q is not a retrytop command", where, line)
				continue
			}
			cmd := newRootCmd()
			var out, errb bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errb)
			cmd.SetArgs(args[1:])
			got := 0
			if err := cmd.Execute(); err != nil {
				got = exitUsage
				var ee *exitError
				if errors.As(err, &ee) {
					got = ee.code
				}
			}
			ran++
			if got != want {
				t.Errorf("%s: %s exited %d, the docs say %d\n%s%s", where, strings.TrimSpace(cmdline), got, want, errb.String(), out.String())
			}
		}
	}
	if ran < 5 {
		t.Errorf("%d runnable commands found in the docs, want the blocks of docs/cli.md at least", ran)
	}
}
