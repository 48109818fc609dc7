package main

import (
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/internal/testpeer"
)

// overviewCursor is the cursor's place among the overview's rows (0 the
// first) and the number of rows, read from a screen: the rows are the
// lines between the column header (TARGET …) and the next section.
func overviewCursor(screen string) (at, rows int, ok bool) {
	lines := strings.Split(screen, "\n")
	for i, ln := range lines {
		if !strings.HasPrefix(strings.TrimSpace(ln), "TARGET ") {
			continue
		}
		at = -1
		for _, row := range lines[i+1:] {
			if strings.TrimSpace(row) == "" || !strings.HasPrefix(row, " ") && !strings.HasPrefix(row, "►") {
				break
			}
			if strings.HasPrefix(row, "►") {
				at = rows
			}
			rows++
		}
		return at, rows, at >= 0
	}
	return 0, 0, false
}

var headerWindow = regexp.MustCompile(`window (\S+)`)

// Keys that reach the program in one read each act: tmux send-keys with
// several keys writes them to the terminal together, as key repeat and
// fast typing over SSH do.
func TestTmuxRepeatedKeysEachAct(t *testing.T) {
	// A paused replay: nothing on screen moves but what the keys move.
	s, status := tmuxReplay(t, 200, 60, "--paused --window 30s")
	scr := s.waitFor("the paused replay with its rows", 30*time.Second, func(scr string) bool {
		_, rows, ok := overviewCursor(scr)
		return ok && rows >= 3 && strings.Contains(firstLine(scr), "window 30s")
	})
	at, rows, _ := overviewCursor(scr)
	if at+2 >= rows {
		t.Fatalf("cursor on row %d of %d: no room for two moves down:\n%s", at, rows, scr)
	}

	// j j: two rows down.
	s.keys("j", "j")
	s.waitFor("the cursor two rows down", 10*time.Second, func(scr string) bool {
		got, _, ok := overviewCursor(scr)
		return ok && got == at+2
	})

	// ] ]: two windows longer (30s → 1m → 5m).
	s.keys("]", "]")
	s.waitFor("the window two steps longer", 10*time.Second, func(scr string) bool {
		m := headerWindow.FindStringSubmatch(firstLine(scr))
		return m != nil && m[1] == "5m"
	})

	// s s: the sort two columns on (AMP → EFF% → ATT%).
	if !strings.Contains(s.screen(), "sort AMP") {
		t.Fatalf("the overview does not start sorted by AMP:\n%s", s.screen())
	}
	s.keys("s", "s")
	s.waitFor("the sort two columns on", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "sort ATT%")
	})

	s.keys("q")
	s.waitExit(status, 20*time.Second)
}

// tmuxReplay runs `retrytop replay FLAGS` of a few seconds of the demo
// (recordDemo) in a private tmux of w×h, where the end-to-end tests run;
// the exit status goes to the file status names.
func tmuxReplay(t *testing.T, w, h int, flags string) (s *tmuxSession, status string) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if runtime.GOOS != "linux" {
		t.Skip("tmux end-to-end test runs on linux only")
	}
	testpeer.Require(t, "tmux", "tmux")
	bin := buildRetrytop(t)
	path := recordDemo(t)
	status = filepath.Join(t.TempDir(), "status")
	return newTmux(t, w, h, bin+" replay "+flags+" "+path+"; echo EXIT=$? > "+status), status
}
