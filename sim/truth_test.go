package sim

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRecoveryFrom(t *testing.T) {
	sched := Schedule{Phases: []Phase{
		{Name: PhaseHealthy, Duration: 2 * time.Second},
		{Name: PhaseSlow, Duration: 2 * time.Second},
		{Name: PhaseRecovered, Duration: 4 * time.Second},
	}}
	mk := func(success ...int64) []bin {
		var bs []bin
		for _, s := range success {
			bs = append(bs, bin{sent: 10, success: s})
		}
		return bs
	}
	for _, c := range []struct {
		name      string
		bins      []bin
		recovered bool
		after     time.Duration
	}{
		{"at once", mk(10, 10, 0, 0, 10, 10, 10, 10), true, 0},
		{"after two seconds", mk(10, 10, 0, 0, 2, 9, 10, 10), true, 2 * time.Second},
		{"relapse counts", mk(10, 10, 0, 0, 10, 10, 3, 10), true, 3 * time.Second},
		{"never", mk(10, 10, 0, 0, 10, 10, 10, 0), false, 0},
		// A healthy phase at 80% sets the bar at 76%.
		{"relative to healthy", mk(8, 8, 0, 0, 8, 8, 8, 8), true, 0},
	} {
		r := recoveryFrom(sched, 10, c.bins, false, 0)
		if !r.Measured || r.SlowEnd != 4*time.Second || r.Recovered != c.recovered || r.UserRecovery != c.after {
			t.Errorf("%s: %+v; want recovered %v after %v", c.name, r, c.recovered, c.after)
		}
	}
	// The last partial second is too thin to judge.
	bins := append(mk(10, 10, 0, 0, 10, 10, 10, 10), bin{sent: 1})
	if r := recoveryFrom(sched, 10, bins, false, 0); !r.Recovered {
		t.Errorf("a thin last bin blocked recovery: %+v", r)
	}
	if r := recoveryFrom(sched, 10, mk(10, 10, 0, 0, 10, 10, 10, 10), true, 5500*time.Millisecond); !r.Drained || r.BacklogDrained != 1600*time.Millisecond {
		t.Errorf("backlog last seen at 5.5s: %+v; want drained 1.6s after the slowdown", r)
	}
	if r := recoveryFrom(sched, 10, mk(10, 10, 0, 0, 10, 10, 10, 10), true, 7900*time.Millisecond); r.Drained {
		t.Errorf("backlog at the end of traffic counted as drained: %+v", r)
	}
	if r := recoveryFrom(Schedule{Phases: []Phase{{Name: PhaseHealthy, Duration: time.Second}}}, 10, mk(10), false, 0); r.Measured {
		t.Errorf("no slow phase, yet measured: %+v", r)
	}
}

func TestCompareTable(t *testing.T) {
	mk := func(name string, success, rejected, timeouts int64) Truth {
		return Truth{
			Scenario: name, Done: true,
			User:     UserTruth{Sent: 100, Success: success, Rejected: rejected, Timeout: timeouts},
			Hops:     []HopTruth{{Name: NameClient, PeakInFlight: 4, Limit: 4}},
			Provider: ProviderTruth{Slots: 4, PeakInFlight: 4, PeakQueueDepth: 7},
			Phases:   []PhaseTruth{{Name: PhaseHealthy}, {Name: PhaseSlow, Sent: 40, ProviderReceived: 100, Amplification: 2.5, Due: 40, Succeeded: 10}},
			Recovery: Recovery{Measured: true, Recovered: true, UserRecovery: 2 * time.Second, Drained: true},
		}
	}
	var buf bytes.Buffer
	CompareResult{Baseline: mk("baseline", 60, 0, 40), Bounded: mk("bounded", 80, 20, 0)}.WriteTable(&buf)
	out := buf.String()
	for _, want := range []string{
		"baseline", "bounded", "successful within deadline", "60 (60%)", "80 (80%)",
		"10 (25%) of 40 due", "local rejections", "20 (20%)", "peak provider queue depth",
		"2.50 provider requests per original", "after 2s", "fast-failure latency",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// A phase's queue wait is the grants and total wait between its two
// snapshots; no grant, no mean (0).
func TestPhaseTruthQueueWait(t *testing.T) {
	a := snapshot{at: time.Second, granted: 10, waited: 2 * time.Second}
	b := snapshot{at: 3 * time.Second, granted: 14, waited: 5 * time.Second}
	pt := phaseTruth(Phase{Name: PhaseSlow}, a, b, nil)
	if pt.QueueGranted != 4 || pt.QueueWaitMean != 750*time.Millisecond {
		t.Errorf("granted %d, mean %v; want 4 and 750ms", pt.QueueGranted, pt.QueueWaitMean)
	}
	if pt := phaseTruth(Phase{Name: PhaseSlow}, a, a, nil); pt.QueueGranted != 0 || pt.QueueWaitMean != 0 {
		t.Errorf("no grant: granted %d, mean %v", pt.QueueGranted, pt.QueueWaitMean)
	}
}
