package sim

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
)

// CompareResult holds the ground truth of baseline and bounded runs on
// identical traffic (same arrivals, phases and seed).
type CompareResult struct {
	Baseline, Bounded Truth
}

// Compare runs the baseline scenario and then the bounded one with the
// same options, each to the end of its schedule, and returns both truths.
// Each stack is closed (its ports freed) before the next starts. If ctx is
// cancelled the current run stops early and Compare returns ctx's error.
func Compare(ctx context.Context, opts Options) (CompareResult, error) {
	var res CompareResult
	for _, name := range []string{"baseline", "bounded"} {
		sc, _ := ScenarioByName(name)
		t, err := runToEnd(ctx, sc, opts)
		if err != nil {
			return res, err
		}
		if name == "baseline" {
			res.Baseline = t
		} else {
			res.Bounded = t
		}
	}
	return res, nil
}

func runToEnd(ctx context.Context, sc Scenario, opts Options) (Truth, error) {
	s, err := Start(ctx, sc, opts)
	if err != nil {
		return Truth{}, err
	}
	if opts.OnStart != nil {
		opts.OnStart(s)
	}
	s.Wait()
	t := s.Truth()
	if err := s.Close(); err != nil {
		return t, fmt.Errorf("sim: closing %s: %w", sc.Name, err)
	}
	if ctx.Err() != nil {
		return t, ctx.Err()
	}
	return t, nil
}

// slowPhase returns the slow phase's truth, if the run reached it.
func (t Truth) slowPhase() (PhaseTruth, bool) {
	for _, p := range t.Phases {
		if p.Name == PhaseSlow {
			return p, true
		}
	}
	return PhaseTruth{}, false
}

// hop returns the named hop's truth.
func (t Truth) hop(name string) (HopTruth, bool) {
	for _, h := range t.Hops {
		if h.Name == name {
			return h, true
		}
	}
	return HopTruth{}, false
}

// WriteTable prints the seed's comparison table: one row per measure, one
// column per scenario.
func (c CompareResult) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	runs := []Truth{c.Baseline, c.Bounded}
	row := func(label string, f func(t Truth) string) {
		fmt.Fprintf(tw, "%s", label)
		for _, t := range runs {
			fmt.Fprintf(tw, "\t%s", f(t))
		}
		fmt.Fprintln(tw)
	}
	pct := fmtShare
	row("measure", func(t Truth) string { return t.Scenario })
	row("originals sent", func(t Truth) string {
		return fmt.Sprintf("%d (dropped %d, max lag %s)", t.User.Sent, t.User.Dropped, fmtDur(t.User.MaxLag))
	})
	row("successful within deadline", func(t Truth) string {
		return pct(t.User.Success, t.User.Sent)
	})
	row("  of them during the slowdown", func(t Truth) string {
		p, ok := t.slowPhase()
		if !ok {
			return "-"
		}
		return fmt.Sprintf("%s of %d due", fmtShare(p.Succeeded, p.Due), p.Due)
	})
	row("timeouts", func(t Truth) string { return pct(t.User.Timeout, t.User.Sent) })
	row("local rejections", func(t Truth) string { return pct(t.User.Rejected, t.User.Sent) })
	row("other errors", func(t Truth) string { return pct(t.User.Error+t.User.Late, t.User.Sent) })
	row("peak provider queue depth", func(t Truth) string { return fmt.Sprintf("%d", t.Provider.PeakQueueDepth) })
	row("peak provider concurrency", func(t Truth) string {
		return fmt.Sprintf("%d of %d slots", t.Provider.PeakInFlight, t.Provider.Slots)
	})
	row("peak provider requests held", func(t Truth) string {
		return fmt.Sprintf("%d (executing + queued)", t.Provider.PeakOpen)
	})
	row("peak client attempts in flight", func(t Truth) string {
		h, _ := t.hop(NameClient)
		lim := "no limit"
		if h.Limit > 0 {
			lim = fmt.Sprintf("limit %d", h.Limit)
		}
		return fmt.Sprintf("%d (%s)", h.PeakInFlight, lim)
	})
	row("amplification during slowdown", func(t Truth) string {
		p, ok := t.slowPhase()
		if !ok {
			return "-"
		}
		client := 0.0
		for _, h := range p.Hops {
			if h.Name == NameClient {
				client = h.Amplification
			}
		}
		return fmt.Sprintf("%.2f provider requests per original (client %.2f attempts per call)", p.Amplification, client)
	})
	row("provider work after cancel", func(t Truth) string { return fmt.Sprintf("%d", t.Provider.WorkAfterCancel) })
	row("success latency p50 / p99", func(t Truth) string { return fmtP(t.User.SuccessLatency) })
	row("fast-failure latency p50 / p99", func(t Truth) string { return fmtP(t.User.FastFailureLatency) })
	row("timeout latency p50 / p99", func(t Truth) string { return fmtP(t.User.TimeoutLatency) })
	row("recovery after slowdown (users)", func(t Truth) string {
		if !t.Recovery.Measured {
			return "-"
		}
		return fmtRecovery(t.Recovery.Recovered, t.Recovery.UserRecovery)
	})
	row("provider backlog drained", func(t Truth) string {
		if !t.Recovery.Measured {
			return "-"
		}
		return fmtRecovery(t.Recovery.Drained, t.Recovery.BacklogDrained)
	})
	_ = tw.Flush()
}

func fmtP(l Latency) string {
	if l.Count == 0 {
		return "- (none)"
	}
	return fmt.Sprintf("%s / %s (n=%d)", fmtDur(l.P50), fmtDur(l.P99), l.Count)
}
