package main

import (
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// skipTmux skips the end-to-end tests where they do not run.
func skipTmux(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if runtime.GOOS != "linux" {
		t.Skip("tmux end-to-end test runs on linux only")
	}
}

// trafficChart measures the ORIGINALS vs ATTEMPTS chart on a screen: its
// area (the columns between the 16-column gutter and the 9-column value
// column, left of the OUTCOMES when side by side) and how many of them
// show attempts above the originals (the storm's ░) in any row.
func trafficChart(screen string) (area, storm int, ok bool) {
	const gutterW, valueW = 16, 9
	lines := strings.Split(screen, "\n")
	for i, ln := range lines {
		if !strings.HasPrefix(ln, "ORIGINALS vs ATTEMPTS") {
			continue
		}
		secW := len([]rune(ln))
		if j := strings.Index(ln, "   OUTCOMES"); j >= 0 {
			secW = len([]rune(ln[:j]))
		}
		area = secW - gutterW - valueW
		has := make([]bool, area)
		for _, row := range lines[i+2:] {
			if strings.HasPrefix(row, "amplification") {
				break
			}
			r := []rune(row)
			for c := 0; c < area && gutterW+c < len(r); c++ {
				if r[gutterW+c] == '░' {
					has[c] = true
				}
			}
		}
		for _, h := range has {
			if h {
				storm++
			}
		}
		return area, storm, area > 0
	}
	return 0, 0, false
}

// The charts span the data held: in a 50 s demo (healthy 10 s, slow
// 20 s, recovered 20 s), as the slow phase ends the storm of its 20 s
// fills more than half of the chart at 80x24 and 200x60 (it sat in a
// fifth of a 5-minute chart before). The demo's target URLs are on
// screen while it runs (i), and the recovered load goes on after the
// schedule ends.
func TestTmuxDemoStormFillsTheChart(t *testing.T) {
	skipTmux(t)
	bin := buildRetrytop(t)
	for _, sz := range []struct{ w, h int }{{80, 24}, {200, 60}} {
		// Both sizes watch a 50 s demo of their own side by side.
		t.Run(itoa(sz.w)+"x"+itoa(sz.h), func(t *testing.T) {
			t.Parallel()
			status := filepath.Join(t.TempDir(), "status")
			s := newTmux(t, sz.w, sz.h, bin+" demo --duration 50s --listen-base 0; echo EXIT=$? > "+status)
			scr := s.waitFor("the slow phase's end with client → provider charted", 120*time.Second, func(scr string) bool {
				// "recovered, 19s left": not "slow, 18s left, then recovered".
				return strings.Contains(firstLine(scr), "recovered, ") && strings.Contains(scr, "ORIGINALS vs ATTEMPTS client → provider")
			})
			area, storm, ok := trafficChart(scr)
			t.Logf("%dx%d at the slow phase's end: storm in %d of %d chart columns", sz.w, sz.h, storm, area)
			if !ok || storm*2 < area {
				t.Errorf("%dx%d: storm in %d of %d chart columns, want at least half:\n%s", sz.w, sz.h, storm, area, scr)
			}
			s.keys("i")
			scr = s.waitFor("the info pane with the targets' URLs", 20*time.Second, func(scr string) bool {
				return strings.Contains(scr, "INFO") && strings.Count(scr, "http://127.0.0.1:") >= 4
			})
			for _, hop := range []string{"browser", "app", "client", "provider"} {
				if !rowWithURL(scr, hop) {
					t.Errorf("%dx%d: no URL for %s in the info pane:\n%s", sz.w, sz.h, hop, scr)
				}
			}
			s.keys("i")
			// After the schedule the load goes on: over a 10 s window
			// that starts after the end, the browser still sends its 50
			// originals/s (without the load it would read 0).
			scr = s.waitFor("the end of the schedule", 60*time.Second, func(scr string) bool {
				return strings.Contains(firstLine(scr), "scenario ended")
			})
			ended := time.Now()
			if h := firstLine(scr); sz.w >= 200 && !strings.Contains(h, "load goes on") {
				t.Errorf("%dx%d: header %q, want the load to go on", sz.w, sz.h, h)
			}
			s.keys("[")
			scr = s.waitFor("a 10 s window 12 s after the end", 60*time.Second, func(scr string) bool {
				return strings.Contains(firstLine(scr), "window 10") && time.Since(ended) > 12*time.Second // "10s" cut at 80
			})
			if v, ok := origPerS(scr, "browser"); !ok || v < 40 {
				t.Errorf("%dx%d: browser ORIG/s %v after the end, want the 50/s load going on:\n%s", sz.w, sz.h, v, scr)
			}
			s.keys("q")
			s.waitExit(status, 20*time.Second)
		})
	}
}

// origPerS is the ORIG/s of target's row: the first number after its
// name and dependency.
func origPerS(screen, target string) (float64, bool) {
	for _, ln := range strings.Split(screen, "\n") {
		f := strings.Fields(strings.TrimLeft(ln, " ►!"))
		if len(f) >= 3 && f[0] == target {
			v, err := strconv.ParseFloat(f[2], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// rowWithURL: a line of the screen names hop and a loopback URL.
func rowWithURL(screen, hop string) bool {
	for _, ln := range strings.Split(screen, "\n") {
		if strings.Contains(ln, hop) && strings.Contains(ln, "http://127.0.0.1:") {
			return true
		}
	}
	return false
}

// lineWith is the first line of s containing sub ("" when none).
func lineWith(s, sub string) string {
	for _, ln := range strings.Split(s, "\n") {
		if strings.Contains(ln, sub) {
			return ln
		}
	}
	return ""
}

// hangingTarget accepts connections and never answers, until the test
// ends: a scrape of it takes its whole timeout.
func hangingTarget(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/metrics"
}

// Before the first scrapes end the dashboard says it is connecting and
// lists the targets, none down; once every scrape failed the overview
// says every target is down, each with its error, and TARGET_DOWN
// findings show; a key that does nothing says so.
func TestTmuxConnectingThenAllDown(t *testing.T) {
	skipTmux(t)
	bin := buildRetrytop(t)
	a, b := hangingTarget(t), hangingTarget(t)
	status := filepath.Join(t.TempDir(), "status")
	// A 5 s interval is each scrape's timeout: 5 s of connecting.
	s := newTmux(t, 120, 40, bin+" --interval 5s alpha="+a+" beta="+b+"; echo EXIT=$? > "+status)
	scr := s.waitFor("the connecting state", 20*time.Second, func(scr string) bool {
		return strings.Contains(firstLine(scr), "connecting to 2 targets")
	})
	if h := firstLine(scr); strings.Contains(h, "down") || strings.Contains(h, "0/2") {
		t.Errorf("first frames' header %q: targets down before any scrape ended", h)
	}
	if !rowWithURL(scr, "alpha") || !rowWithURL(scr, "beta") {
		t.Errorf("the connecting overview does not list the targets with their URLs:\n%s", scr)
	}
	scr = s.waitFor("every target down", 30*time.Second, func(scr string) bool {
		return strings.Contains(scr, "every target is down")
	})
	if h := firstLine(scr); !strings.Contains(h, "targets 0/2 up") {
		t.Errorf("all-down header %q", h)
	}
	for _, n := range []string{"alpha", "beta"} {
		if l := lineWith(scr, "  "+n+" "); !strings.Contains(l, "down") || !strings.Contains(l, "timed out") {
			t.Errorf("%s's line %q, want it down with its error:\n%s", n, l, scr)
		}
	}
	if !strings.Contains(scr, "TARGET_DOWN") {
		t.Errorf("no TARGET_DOWN finding on screen:\n%s", scr)
	}
	s.keys("a")
	s.waitFor("a's hint in the footer", 10*time.Second, func(scr string) bool {
		ls := strings.Split(strings.TrimRight(scr, "\n"), "\n")
		return strings.Contains(ls[len(ls)-1], "a: no replicas to fold")
	})
	s.keys("Space")
	s.waitFor("the paused footer offering resume", 10*time.Second, func(scr string) bool {
		ls := strings.Split(strings.TrimRight(scr, "\n"), "\n")
		return strings.Contains(ls[len(ls)-1], "space resume")
	})
	s.keys("q")
	s.waitExit(status, 20*time.Second)
}
