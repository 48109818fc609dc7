package sim

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Truth is the sim's exact account of a run so far: what the users sent
// and saw, what every hop did, what the provider received.
type Truth struct {
	Scenario string
	Elapsed  time.Duration
	// Phase is the phase in force ("" once the schedule has ended).
	Phase string
	// Done is true once the schedule has ended and every original finished.
	Done     bool
	User     UserTruth
	Hops     []HopTruth // browser first, then the layers (hidden ones marked)
	Provider ProviderTruth
	// Phases has one entry per phase begun so far; the current one runs
	// until now. Originals still in flight at the end of the schedule
	// finish after the last phase and are in the totals only.
	Phases []PhaseTruth
	// Window is the rates over the last five seconds or so (up to the end
	// of traffic once the schedule has ended).
	Window   RateWindow
	Recovery Recovery
}

// PhaseTruth is what happened during one phase: counters that moved
// between the phase's start and end snapshots.
type PhaseTruth struct {
	Name        string
	Start, End  time.Duration // offsets from the start of the run
	ServiceTime time.Duration
	// Sent is originals the users sent during the phase.
	Sent int64
	// Due and Succeeded count the originals due in the phase by the
	// arrival schedule and those of them that succeeded within the user
	// deadline (final once they have all finished, up to a second after
	// the phase).
	Due, Succeeded int64
	// Hops' originals and attempts, in Truth.Hops order.
	Hops []HopFlow
	// ProviderReceived is requests that reached the provider;
	// Amplification is ProviderReceived / Sent: provider attempts per user
	// action.
	ProviderReceived int64
	Amplification    float64
	// QueueGranted is the requests the provider gave an execution slot
	// during the phase, QueueWaitMean their mean wait in its queue (0 when
	// none): the exact value of the queue-wait histogram's
	// _sum/_count increase over the phase.
	QueueGranted  int64
	QueueWaitMean time.Duration
}

// HopFlow is one hop's originals and attempts over a span.
type HopFlow struct {
	Name                string
	Originals, Attempts int64
	Amplification       float64
}

// RateWindow is per-second rates over a recent span.
type RateWindow struct {
	Span                  time.Duration
	SentPerS              float64
	Hops                  []HopRate
	ProviderReceivedPerS  float64
	ProviderAmplification float64
}

// HopRate is one hop's rates over a RateWindow.
type HopRate struct {
	Name                        string
	OriginalsPerS, AttemptsPerS float64
	Amplification               float64
}

// Recovery measures how the run came back after the slowdown. It is only
// Measured once the run is Done and the scenario has a slow phase.
type Recovery struct {
	Measured bool
	// SlowEnd is when the slow phase ended (offset from the start).
	SlowEnd time.Duration
	// Threshold is the per-second success ratio counted as recovered: 95%
	// of the healthy phase's.
	Threshold float64
	// Recovered says whether user successes came back; UserRecovery is the
	// time from SlowEnd to the start of the first one-second bin from
	// which every later bin's goodput reached Threshold of its offered
	// load: successes within the user deadline counted in the second they
	// ended (when the user saw them, and when a metric counts them) over
	// originals due in it (docs/findings.md, "Recovery").
	Recovered    bool
	UserRecovery time.Duration
	// Drained says whether the provider's queue came back to at most its
	// slot count while traffic still flowed; BacklogDrained is the time
	// from SlowEnd until the last sample (every 100 ms) that saw more
	// queued than slots (0 if none did).
	Drained        bool
	BacklogDrained time.Duration
}

// Truth returns the ground truth now. It is safe to call at any time,
// from any goroutine.
func (s *Stack) Truth() Truth {
	now := s.clock.Now().Sub(s.start)
	t := Truth{Scenario: s.sc.Name, Elapsed: now}
	select {
	case <-s.done:
		t.Done = true
	default:
	}
	if i, _, ok := s.sched.At(now); ok {
		t.Phase = s.sched.Phases[i].Name
	}
	// Hops and provider before the user: an operation the user saw finish
	// has then already been counted below.
	for _, h := range s.hops {
		t.Hops = append(t.Hops, h.truth())
	}
	t.Provider = s.prov.truth()
	t.Provider.Name = NameProvider
	t.User = s.gen.truth()

	cur := s.snap()
	s.mu.Lock()
	snaps := append([]snapshot(nil), s.snaps...)
	ring := append([]snapshot(nil), s.ring...)
	backlog, backlogAt := s.backlog, s.backlogAt
	s.mu.Unlock()

	_, perPhase := s.gen.binsCopy()
	for i := range snaps {
		if i >= len(s.sched.Phases) {
			break
		}
		end := cur
		if i+1 < len(snaps) {
			end = snaps[i+1]
		}
		p := s.sched.Phases[i]
		pt := phaseTruth(p, snaps[i], end, t.Hops)
		if i < len(perPhase) {
			pt.Due, pt.Succeeded = perPhase[i].sent, perPhase[i].success
		}
		t.Phases = append(t.Phases, pt)
	}
	if len(ring) > 0 {
		if t.Done && len(snaps) > len(s.sched.Phases) {
			cur = snaps[len(s.sched.Phases)] // rates up to the end of traffic
		}
		// The newest one-second snapshot at least rateSpan before cur.
		from := ring[0]
		for _, sn := range ring {
			if sn.at <= cur.at-rateSpan {
				from = sn
			}
		}
		t.Window = rateWindow(from, cur, t.Hops)
	}
	if t.Done {
		t.Recovery = s.recovery(backlog, backlogAt)
	}
	return t
}

func phaseTruth(p Phase, a, b snapshot, hops []HopTruth) PhaseTruth {
	pt := PhaseTruth{
		Name: p.Name, Start: a.at, End: b.at, ServiceTime: p.ServiceTime,
		Sent: b.sent - a.sent, ProviderReceived: b.received - a.received,
		QueueGranted: b.granted - a.granted,
	}
	if pt.QueueGranted > 0 {
		pt.QueueWaitMean = (b.waited - a.waited) / time.Duration(pt.QueueGranted)
	}
	for i := range a.hops {
		o, at := b.hops[i].originals-a.hops[i].originals, b.hops[i].attempts-a.hops[i].attempts
		pt.Hops = append(pt.Hops, HopFlow{Name: hops[i].Name, Originals: o, Attempts: at, Amplification: ratio(at, o)})
	}
	pt.Amplification = ratio(pt.ProviderReceived, pt.Sent)
	return pt
}

func rateWindow(a, b snapshot, hops []HopTruth) RateWindow {
	span := b.at - a.at
	w := RateWindow{Span: span}
	if span <= 0 {
		return w
	}
	per := func(n int64) float64 { return float64(n) / span.Seconds() }
	w.SentPerS = per(b.sent - a.sent)
	w.ProviderReceivedPerS = per(b.received - a.received)
	w.ProviderAmplification = ratio(b.received-a.received, b.sent-a.sent)
	for i := range a.hops {
		o, at := b.hops[i].originals-a.hops[i].originals, b.hops[i].attempts-a.hops[i].attempts
		w.Hops = append(w.Hops, HopRate{Name: hops[i].Name, OriginalsPerS: per(o), AttemptsPerS: per(at), Amplification: ratio(at, o)})
	}
	return w
}

// recovery computes Recovery from the generator's per-second bins; the run
// is over, so every bin is final. Each bin's successes are those that
// ended in it.
func (s *Stack) recovery(backlog bool, backlogAt time.Duration) Recovery {
	bins, _ := s.gen.binsCopy()
	ended := s.gen.goodputCopy()
	for b := range bins {
		bins[b].success = 0
		if b < len(ended) {
			bins[b].success = ended[b]
		}
	}
	return recoveryFrom(s.sched, s.sc.Generator.Rate, bins, backlog, backlogAt)
}

// recoveryFrom is Recovery for a finished run: bins are per second the
// originals due in it and the successes that ended in it; backlog says
// whether the provider's queue was seen above its slots after the
// slowdown (last at backlogAt).
func recoveryFrom(sched Schedule, rate float64, bins []bin, backlog bool, backlogAt time.Duration) Recovery {
	slow := sched.Index(PhaseSlow)
	if slow < 0 || len(bins) == 0 {
		return Recovery{}
	}
	slowEnd := sched.Start(slow + 1)
	r := Recovery{Measured: true, SlowEnd: slowEnd}
	// Healthy ratio: bins wholly inside the first phase.
	healthyEnd := sched.Start(1)
	var hs, hn int64
	for b := 0; time.Duration(b+1)*time.Second <= healthyEnd && b < len(bins); b++ {
		hs += bins[b].success
		hn += bins[b].sent
	}
	healthy := 1.0
	if hn > 0 {
		healthy = float64(hs) / float64(hn)
	}
	r.Threshold = 0.95 * healthy
	// Bins too thin to judge (the run's last partial second) are skipped.
	minSent := int64(rate/2) + 1
	first := int((slowEnd + time.Second - 1) / time.Second)
	rec := -1
	for b := len(bins) - 1; b >= first; b-- {
		if bins[b].sent < minSent {
			continue
		}
		if float64(bins[b].success) < r.Threshold*float64(bins[b].sent) {
			break
		}
		rec = b
	}
	if rec >= 0 {
		r.Recovered = true
		r.UserRecovery = max(time.Duration(rec)*time.Second-slowEnd, 0)
	}
	// Only samples taken while traffic still flowed count: a queue that
	// empties because the schedule ended has not recovered.
	r.Drained = !backlog || backlogAt < sched.Total()-2*sampleEvery
	if backlog && r.Drained {
		r.BacklogDrained = backlogAt + sampleEvery - slowEnd
	}
	return r
}

// WriteTable prints the ground truth as plain-text tables: users, hops,
// provider and phases.
func (t Truth) WriteTable(w io.Writer) {
	state := "running"
	if t.Done {
		state = "done"
	}
	phase := t.Phase
	if phase == "" {
		phase = "-"
	}
	fmt.Fprintf(w, "scenario %s  phase %s  elapsed %s  %s\n", t.Scenario, phase, fmtDur(t.Elapsed), state)
	u := t.User
	fmt.Fprintf(w, "users: sent %d (%.0f/s), success within %s %d, late %d, timeout %d, rejected %d, error %d, in flight %d, dropped %d, schedule lag %s (max %s)\n",
		u.Sent, u.Rate, fmtDur(u.UserDeadline), u.Success, u.Late, u.Timeout, u.Rejected, u.Error, u.InFlight, u.Dropped, fmtDur(u.Lag), fmtDur(u.MaxLag))
	fmt.Fprintf(w, "latency: success %s; fast failure %s; timeout %s\n",
		fmtLat(u.SuccessLatency), fmtLat(u.FastFailureLatency), fmtLat(u.TimeoutLatency))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "hop\tdependency\toriginals/s\tattempts/s\tamp (%s)\toriginals\tattempts\tamp\tsuccesses\trejections\ttimeouts\terrors\tin flight\tpeak\t\n",
		fmtDur(t.Window.Span))
	for i, h := range t.Hops {
		name := h.Name
		if h.Hidden {
			name += " (hidden)"
		}
		var r HopRate
		if i < len(t.Window.Hops) {
			r = t.Window.Hops[i]
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.2f\t%d\t%d\t%.2f\t%d\t%d\t%d\t%d\t%d\t%d\t\n",
			name, h.Dependency, r.OriginalsPerS, r.AttemptsPerS, r.Amplification,
			h.Originals, h.Attempts, h.Amplification, h.Successes, h.Rejections, h.Timeouts, h.Errors, h.InFlight, h.PeakInFlight)
	}
	_ = tw.Flush()
	p := t.Provider
	fmt.Fprintf(w, "provider: received %d (%.1f/s, %.2f per user action), completed %d, work after cancel %d, cancelled %d, rejected %d, injected errors %d; in flight %d/%d (peak %d), queue %d (peak %d, oldest %s)\n",
		p.Received, t.Window.ProviderReceivedPerS, t.Window.ProviderAmplification, p.Completed, p.WorkAfterCancel,
		p.CancelledQueued+p.CancelledExecuting, p.RejectedQueueFull+p.RejectedSafetyCap, p.InjectedErrors,
		p.InFlight, p.Slots, p.PeakInFlight, p.QueueDepth, p.PeakQueueDepth, fmtDur(p.OldestQueued))

	if len(t.Phases) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "phase\tfrom\tto\tservice\tsent\tsucceeded\t")
		for _, h := range t.Phases[0].Hops {
			fmt.Fprintf(tw, "%s amp\t", h.Name)
		}
		fmt.Fprintf(tw, "provider received\tper user action\t\n")
		for _, ph := range t.Phases {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t", ph.Name, fmtDur(ph.Start), fmtDur(ph.End), fmtDur(ph.ServiceTime), ph.Sent,
				fmtShare(ph.Succeeded, ph.Due))
			for _, h := range ph.Hops {
				fmt.Fprintf(tw, "%.2f\t", h.Amplification)
			}
			fmt.Fprintf(tw, "%d\t%.2f\t\n", ph.ProviderReceived, ph.Amplification)
		}
		_ = tw.Flush()
	}
	if r := t.Recovery; r.Measured {
		fmt.Fprintf(w, "recovery after the slowdown (ended at %s): users %s; provider queue %s\n",
			fmtDur(r.SlowEnd), fmtRecovery(r.Recovered, r.UserRecovery), fmtRecovery(r.Drained, r.BacklogDrained))
	}
}

// fmtShare is "n (p%)" of a total, or just n without one.
func fmtShare(n, of int64) string {
	if of == 0 {
		return fmt.Sprintf("%d", n)
	}
	return fmt.Sprintf("%d (%.0f%%)", n, 100*float64(n)/float64(of))
}

func fmtRecovery(ok bool, d time.Duration) string {
	if !ok {
		return "not recovered by the end"
	}
	return "after " + fmtDur(d)
}

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}

func fmtLat(l Latency) string {
	if l.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("n=%d p50 %s p99 %s", l.Count, fmtDur(l.P50), fmtDur(l.P99))
}
