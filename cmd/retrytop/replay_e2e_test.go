package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/sim"
)

var barPos = regexp.MustCompile(`(\d+):(\d\d) / (\d+):(\d\d)`)

// replayPosition reads the playhead and the length, in seconds, from the
// timeline bar.
func replayPosition(screen string) (pos, length int, ok bool) {
	m := barPos.FindStringSubmatch(screen)
	if m == nil {
		return 0, 0, false
	}
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[2])
	c, _ := strconv.Atoi(m[3])
	d, _ := strconv.Atoi(m[4])
	return a*60 + b, c*60 + d, true
}

// recordDemo records 8 s of the demo's baseline (2 s healthy, 4 s slow,
// 2 s recovered) in virtual time, a body a second as record writes them
// by default (recordScenarioEvery); `retrytop record` itself is tested on
// loopback in recording_test.go.
func recordDemo(t *testing.T) string {
	t.Helper()
	return recordScenarioEvery(t, "baseline", sim.Options{Healthy: 2 * time.Second, Slow: 4 * time.Second, Recovered: 2 * time.Second, Seed: 7}, time.Second)
}

// TestTmuxReplayDemo replays a few seconds of the demo in tmux: step,
// jump, change speed, quit.
func TestTmuxReplayDemo(t *testing.T) {
	// 8 s of the demo, recorded in virtual time (every target up, a
	// frame every 500 ms, however busy the machine).
	s, status := tmuxReplay(t, 140, 40, "--paused")
	scr := s.waitFor("the replay dashboard with rows", 30*time.Second, func(scr string) bool {
		_, _, ok := replayPosition(scr)
		return ok && strings.Contains(scr, "REPLAY") && rowHasNumbers(scr, "client") && strings.Contains(scr, "1x")
	})
	pos0, length, _ := replayPosition(scr)
	if length < 5 || length > 9 {
		t.Fatalf("recording of %ds, want about 7s:\n%s", length, scr)
	}
	position := func(what string, want func(pos int) bool) {
		t.Helper()
		s.waitFor(what, 10*time.Second, func(scr string) bool {
			p, _, ok := replayPosition(scr)
			return ok && want(p)
		})
	}
	s.keys("Right")
	position("a step forward", func(p int) bool { return p == pos0+1 })
	s.keys("Left")
	position("a step back", func(p int) bool { return p == pos0 })
	s.keys("S-Right")
	position("a jump to the end (1m is past it)", func(p int) bool { return p == length })
	s.keys("S-Left")
	position("a jump back to the start", func(p int) bool { return p == 0 })
	s.keys("+")
	s.waitFor("2x", 10*time.Second, func(scr string) bool { return strings.Contains(scr, " 2x ") })
	// '-' is sent literally (a lone "-" argument is no key to tmux), one
	// at a time (keys typed together reach the program as one string).
	s.run("send-keys", "-t", "e2e", "-l", "--", "-")
	s.waitFor("1x", 10*time.Second, func(scr string) bool { return strings.Contains(scr, " 1x ") })
	s.run("send-keys", "-t", "e2e", "-l", "--", "-")
	s.waitFor("0.5x", 10*time.Second, func(scr string) bool { return strings.Contains(scr, " 0.5x ") })
	s.keys("G")
	position("the end", func(p int) bool { return p == length })
	s.keys("g")
	position("the start", func(p int) bool { return p == 0 })
	s.keys("q")
	s.waitExit(status, 20*time.Second)
}
