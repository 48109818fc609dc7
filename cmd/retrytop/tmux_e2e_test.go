package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/internal/testpeer"
)

// buildRetrytop compiles the command once per test into a temp dir.
func buildRetrytop(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "retrytop")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// tmuxSession drives one detached tmux server private to the test.
type tmuxSession struct {
	t      *testing.T
	tmux   string
	socket string
}

// newTmux starts command in a detached tmux server private to the test;
// its first simple command is the program under test.
func newTmux(t *testing.T, width, height int, command string) *tmuxSession {
	tmux := testpeer.Require(t, "tmux", "tmux")
	s := &tmuxSession{t: t, tmux: tmux, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	// The program (command's first simple command) ends by the test
	// binary's deadline, plus a minute, even when the test does not:
	// go test's timeout kills the binary without running cleanups, and
	// a dashboard left open would keep taking a CPU through the packages
	// that follow. --foreground keeps it in the terminal's process group.
	life := 30 * time.Minute
	if d, ok := t.Deadline(); ok {
		life = time.Until(d)
	}
	command = "timeout --foreground -k 5 " + itoa(int((life+time.Minute)/time.Second)) + " " + command
	s.run("-f", "/dev/null", "new-session", "-d", "-x", itoa(width), "-y", itoa(height), "-s", "e2e",
		"env", "TERM=xterm-256color", "LANG=C.UTF-8", "sh", "-c", command)
	s.run("set-option", "-t", "e2e", "remain-on-exit", "on")
	t.Cleanup(func() { _ = exec.Command(s.tmux, "-S", s.socket, "kill-server").Run() })
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

func (s *tmuxSession) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command(s.tmux, append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (s *tmuxSession) screen() string { return s.run("capture-pane", "-p", "-t", "e2e") }

func (s *tmuxSession) keys(keys ...string) {
	s.run(append([]string{"send-keys", "-t", "e2e"}, keys...)...)
}

// waitFor polls the screen until cond holds or the deadline passes; the
// condition, not a fixed sleep, is what the test synchronises on.
func (s *tmuxSession) waitFor(what string, timeout time.Duration, cond func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var scr string
	for time.Now().Before(deadline) {
		scr = s.screen()
		if cond(scr) {
			return scr
		}
		if strings.Contains(scr, "Pane is dead") {
			s.t.Fatalf("the program exited while waiting for %s; screen:\n%s", what, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("timed out after %v waiting for %s; screen:\n%s", timeout, what, scr)
	return ""
}

// waitExit waits for the program's exit status, which the pane's shell
// writes to status as EXIT=N, and fails unless it is 0.
func (s *tmuxSession) waitExit(status string, timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(status)
		if err == nil {
			if got := strings.TrimSpace(string(b)); got != "EXIT=0" {
				s.t.Fatalf("the program exited with %s", got)
			}
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the program did not exit within %v after q; screen:\n%s", timeout, s.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTmuxDemoDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if runtime.GOOS != "linux" {
		t.Skip("tmux end-to-end test runs on linux only")
	}
	bin := buildRetrytop(t)
	status := filepath.Join(t.TempDir(), "status")
	s := newTmux(t, 160, 48, bin+" demo --duration 2m --listen-base 0; echo EXIT=$? > "+status)

	hops := []string{"browser", "app", "client"}
	s.waitFor("the header with the phase and a row per demo hop with numbers", 60*time.Second, func(scr string) bool {
		// The header tells the demo's story: "healthy, 12s left, then slow".
		if !strings.Contains(scr, "LIVE") || !strings.Contains(firstLine(scr), " left") {
			return false
		}
		for _, h := range hops {
			if !rowHasNumbers(scr, h) {
				return false
			}
		}
		return true
	})

	// The provider serves the client: it is a row of the SERVICES section.
	s.waitFor("the provider's service row with numbers", 30*time.Second, func(scr string) bool {
		return serviceRowHasNumbers(scr, "provider")
	})

	s.keys("Enter")
	s.waitFor("the detail view", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "DETAIL") && strings.Contains(scr, "LATENCY by result")
	})
	// Escape and the next key sent together read as alt+key: wait for the
	// overview before the next key.
	s.keys("Escape")
	// The detail gone, not only OVERVIEW on screen: were the Escape still
	// unread, the next key would join it as alt+key.
	s.waitFor("the overview again", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "OVERVIEW") && !strings.Contains(scr, "DETAIL")
	})
	// The last row is the service: G selects it, enter opens its detail.
	s.keys("G")
	s.waitFor("the service row selected", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "► provider")
	})
	s.keys("Enter")
	s.waitFor("the service detail with its charts", 10*time.Second, func(scr string) bool {
		// The charts' time axis ends in the newest data's wall-clock time.
		return strings.Contains(scr, "SERVICE  provider") && strings.Contains(scr, "QUEUE") &&
			strings.Contains(scr, "RESPONSES") && timeAxis.MatchString(scr)
	})
	s.keys("Escape")
	s.waitFor("the overview again", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "OVERVIEW") && !strings.Contains(scr, "RESPONSES") // the service detail's chart
	})
	s.keys("?")
	// The help's own title: the footer says "quit" and "pause" in every
	// view, so they alone would not show that ? was read.
	s.waitFor("the help view", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "esc or ? closes") && strings.Contains(scr, "quit") && strings.Contains(scr, "pause")
	})
	s.keys("q")
	s.waitExit(status, 20*time.Second)
	// The alternate screen is gone: the terminal shows the normal screen again.
	scr := s.screen()
	if strings.Contains(scr, "LIVE") {
		t.Errorf("terminal not restored after exit; screen:\n%s", scr)
	}
	// And it says where the demo's targets were, for analyze next time.
	if !strings.Contains(scr, "demo targets") || !strings.Contains(scr, "client=http://127.0.0.1:") {
		t.Errorf("the demo's targets are not printed on exit; screen:\n%s", scr)
	}
}

// rowHasNumbers reports whether some line naming the hop carries a digit
// in a column after the name (a rate, not only the name itself).
func rowHasNumbers(screen, hop string) bool {
	for _, line := range strings.Split(screen, "\n") {
		i := strings.Index(line, hop)
		if i < 0 {
			continue
		}
		if strings.ContainsAny(line[i+len(hop):], "123456789") {
			return true
		}
	}
	return false
}

// serviceRowHasNumbers reports whether the SERVICES section has a row for
// name carrying a digit after the name.
func serviceRowHasNumbers(screen, name string) bool {
	lines := strings.Split(screen, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "SERVICES") {
			continue
		}
		for _, row := range lines[i+1:] {
			rest, ok := strings.CutPrefix(strings.TrimLeft(row, " ►!"), name+" ")
			if ok && strings.ContainsAny(rest, "123456789") {
				return true
			}
		}
	}
	return false
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// timeAxis matches a chart's time axis: wall-clock labels at even steps,
// to the second or to the minute.
var timeAxis = regexp.MustCompile(`(?m)\d\d:\d\d(:\d\d)? +\d\d:\d\d(:\d\d)?`)

// During the baseline storm at 200x60, with no key
// pressed, the dashboard follows the incident (the chart panel names
// client → provider) and uses the screen (at most 3 blank lines between
// the header and the key bar); at 80x24 the compact layout keeps what it
// always showed.
func TestTmuxStormFillsTheScreenAndFollowsTheIncident(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if runtime.GOOS != "linux" {
		t.Skip("tmux end-to-end test runs on linux only")
	}
	bin := buildRetrytop(t)
	status := filepath.Join(t.TempDir(), "status")
	// 3m (the dashboard's default): healthy 36 s, slow 72 s, recovered
	// 72 s (docs/scenarios.md).
	s := newTmux(t, 200, 60, bin+" demo --duration 3m --listen-base 0; echo EXIT=$? > "+status)

	// The storm shows within the first 20 s of the slow phase once the
	// rate window holds enough of it; the deadline covers the healthy
	// phase, the whole slow one, and a busy machine's start-up.
	const title = "ORIGINALS vs ATTEMPTS client → provider"
	// The storm is on when the findings say the retries amplify (the
	// worst row may be client → provider before that, on a timeout).
	scr := s.waitFor("the storm followed on client → provider", 150*time.Second, func(scr string) bool {
		return strings.Contains(firstLine(scr), "slow") && strings.Contains(scr, "RETRY_AMPLIFICATION") && strings.Contains(scr, title)
	})
	lines := strings.Split(strings.TrimRight(scr, "\n"), "\n")
	if len(lines) != 60 {
		t.Fatalf("captured %d lines, want 60:\n%s", len(lines), scr)
	}
	blank := 0
	for _, ln := range lines[1:59] {
		if strings.TrimSpace(ln) == "" {
			blank++
		}
	}
	if blank > 3 {
		t.Errorf("%d blank lines between the header and the key bar, want at most 3:\n%s", blank, scr)
	}
	if !strings.Contains(firstLine(scr), "following client → provider") {
		t.Errorf("the header does not say which row is followed: %q", firstLine(scr))
	}
	for _, want := range []string{"CHAINS", "browser", "FINDINGS", "LATENCY by result"} {
		if !strings.Contains(scr, want) {
			t.Errorf("200x60 storm screen lacks %q:\n%s", want, scr)
		}
	}

	// The same dashboard at 80x24: the compact layout, nothing cut that
	// was not cut before (the rows with their numbers, the chart, the
	// key bar), and no story section squeezed in.
	s.run("resize-window", "-t", "e2e", "-x", "80", "-y", "24")
	scr = s.waitFor("the compact layout at 80x24", 20*time.Second, func(scr string) bool {
		ls := strings.Split(strings.TrimRight(scr, "\n"), "\n")
		return len(ls) == 24 && strings.Contains(scr, "OVERVIEW") && strings.Contains(ls[len(ls)-1], "q quit")
	})
	for _, h := range []string{"browser", "app", "client"} {
		if !rowHasNumbers(scr, h) {
			t.Errorf("80x24: no row with numbers for %s:\n%s", h, scr)
		}
	}
	for _, want := range []string{"TARGET", "DEPENDENCY", "ORIG/s", "ATT/s", "AMP", "ORIGINALS vs ATTEMPTS"} {
		if !strings.Contains(scr, want) {
			t.Errorf("80x24 lacks %q:\n%s", want, scr)
		}
	}
	if strings.Contains(scr, "FINDINGS") || strings.Contains(scr, "CHAINS") {
		t.Errorf("80x24 shows the tall layout's story:\n%s", scr)
	}
	s.keys("q")
	s.waitExit(status, 20*time.Second)
}

// The replay items, as a person sees them: a paused replay says
// PAUSED, raises no "target down" alarm at its first frame or at its
// end, and ? lists the player's keys.
func TestTmuxReplayPausedNoFalseAlarm(t *testing.T) {
	// 8 s of the demo, recorded in virtual time (every target up, a
	// frame every 500 ms, however busy the machine).
	s, status := tmuxReplay(t, 140, 40, "--paused")
	scr := s.waitFor("the paused replay's first frame", 30*time.Second, func(scr string) bool {
		_, _, ok := replayPosition(scr)
		return ok && strings.Contains(scr, "OVERVIEW")
	})
	if h := firstLine(scr); !strings.Contains(h, "REPLAY PAUSED") || strings.Contains(h, "down") {
		t.Errorf("first frame header %q: want REPLAY PAUSED and no target down", h)
	}
	s.keys("G")
	scr = s.waitFor("the end of the recording", 20*time.Second, func(scr string) bool {
		p, length, ok := replayPosition(scr)
		return ok && p == length && rowHasNumbers(scr, "client")
	})
	if h := firstLine(scr); strings.Contains(h, "down") {
		t.Errorf("end of recording header %q: a target reads down though every one was up", h)
	}
	s.keys("?")
	s.waitFor("the player's keys in the help", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "play/pause") && strings.Contains(scr, "step back")
	})
	s.keys("q")
	s.waitExit(status, 20*time.Second)
}
