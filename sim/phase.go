package sim

import (
	"fmt"
	"time"
)

// Phase names used by every scenario, so that runs can be compared phase by
// phase.
const (
	PhaseHealthy   = "healthy"
	PhaseSlow      = "slow"
	PhaseRecovered = "recovered"
)

// Phase is one stretch of a run with a fixed provider behaviour.
type Phase struct {
	Name     string
	Duration time.Duration
	// ServiceTime is how long the provider works on one request during the
	// phase (one execution slot held for that long).
	ServiceTime time.Duration
	// ErrorFraction is the fraction of requests the provider answers with
	// an injected 503 (0..1).
	ErrorFraction float64
}

// Schedule is a sequence of phases measured from the start of a run.
type Schedule struct {
	Phases []Phase
}

// Total is the sum of the phase durations: the length of the run.
func (s Schedule) Total() time.Duration {
	var d time.Duration
	for _, p := range s.Phases {
		d += p.Duration
	}
	return d
}

// Start is the offset from the start of the run at which phase i begins.
func (s Schedule) Start(i int) time.Duration {
	var d time.Duration
	for j := 0; j < i && j < len(s.Phases); j++ {
		d += s.Phases[j].Duration
	}
	return d
}

// At says which phase is active at elapsed time since the start of the run
// and how long it still lasts. ok is false once the schedule has ended (i is
// then len(Phases)) or when it has no phases. Negative elapsed counts as the
// start.
func (s Schedule) At(elapsed time.Duration) (i int, left time.Duration, ok bool) {
	total := s.Total()
	if len(s.Phases) == 0 || total <= 0 {
		return 0, 0, false
	}
	if elapsed < 0 {
		elapsed = 0
	}
	if elapsed >= total {
		return len(s.Phases), 0, false
	}
	var start time.Duration
	for j, p := range s.Phases {
		if elapsed < start+p.Duration {
			return j, start + p.Duration - elapsed, true
		}
		start += p.Duration
	}
	// Unreachable: elapsed < total.
	return len(s.Phases), 0, false
}

// Index returns the position of the named phase, or -1.
func (s Schedule) Index(name string) int {
	for i, p := range s.Phases {
		if p.Name == name {
			return i
		}
	}
	return -1
}

// Validate rejects schedules the sim cannot run.
func (s Schedule) Validate() error {
	if len(s.Phases) == 0 {
		return fmt.Errorf("sim: schedule has no phases")
	}
	for _, p := range s.Phases {
		if p.Duration <= 0 {
			return fmt.Errorf("sim: phase %q has duration %v", p.Name, p.Duration)
		}
		if p.ServiceTime < 0 {
			return fmt.Errorf("sim: phase %q has service time %v", p.Name, p.ServiceTime)
		}
		if p.ErrorFraction < 0 || p.ErrorFraction > 1 {
			return fmt.Errorf("sim: phase %q has error fraction %v", p.Name, p.ErrorFraction)
		}
	}
	return nil
}

// scaled returns a copy whose phase durations are scaled so that they sum
// to total, keeping their proportions (each phase at least 1ms).
func (s Schedule) scaled(total time.Duration) Schedule {
	cur := s.Total()
	out := Schedule{Phases: append([]Phase(nil), s.Phases...)}
	if cur <= 0 || total <= 0 {
		return out
	}
	var used time.Duration
	for i := range out.Phases {
		if i == len(out.Phases)-1 {
			out.Phases[i].Duration = max(total-used, time.Millisecond)
			break
		}
		d := time.Duration(float64(out.Phases[i].Duration) * float64(total) / float64(cur))
		d = max(d.Round(time.Millisecond), time.Millisecond)
		out.Phases[i].Duration = d
		used += d
	}
	return out
}
