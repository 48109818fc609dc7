package sim

import (
	"fmt"
	"time"
)

// PhaseStatus says where the run is, for a dashboard header: the phase in
// force and how long it still lasts ("slow, 12s left, then recovered"), or
// that the schedule has ended, on the stack's own clock.
func (s *Stack) PhaseStatus() string {
	return phaseStatus(s.sched, s.clock.Now().Sub(s.start), s.opts.Hold)
}

// phaseStatus says, after the end, whether the last phase's load goes on
// (hold) or has stopped.
func phaseStatus(sched Schedule, elapsed time.Duration, hold bool) string {
	i, left, ok := sched.At(elapsed)
	if !ok {
		if len(sched.Phases) == 0 {
			return ""
		}
		if !hold {
			return "scenario ended: load stopped (q quits)"
		}
		return "scenario ended: " + sched.Phases[len(sched.Phases)-1].Name + " load goes on (q quits)"
	}
	msg := fmt.Sprintf("%s, %s left", sched.Phases[i].Name, left.Round(time.Second))
	if i+1 < len(sched.Phases) {
		msg += ", then " + sched.Phases[i+1].Name
	}
	return msg
}
