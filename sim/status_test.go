package sim

import (
	"testing"
	"time"
)

func TestPhaseStatus(t *testing.T) {
	sched := Schedule{Phases: []Phase{
		{Name: PhaseHealthy, Duration: 10 * time.Second},
		{Name: PhaseSlow, Duration: 20 * time.Second},
		{Name: PhaseRecovered, Duration: 20 * time.Second},
	}}
	tests := []struct {
		elapsed time.Duration
		want    string
	}{
		{0, "healthy, 10s left, then slow"},
		{12400 * time.Millisecond, "slow, 18s left, then recovered"},
		{45 * time.Second, "recovered, 5s left"},
		{50 * time.Second, "scenario ended: recovered load goes on (q quits)"},
	}
	for _, tt := range tests {
		if got := phaseStatus(sched, tt.elapsed, true); got != tt.want {
			t.Errorf("at %v: %q, want %q", tt.elapsed, got, tt.want)
		}
	}
	if got := phaseStatus(sched, time.Minute, false); got != "scenario ended: load stopped (q quits)" {
		t.Errorf("without hold: %q", got)
	}
	if got := phaseStatus(Schedule{}, time.Second, true); got != "" {
		t.Errorf("no schedule: %q", got)
	}
}
