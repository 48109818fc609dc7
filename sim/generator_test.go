package sim

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// waitTimer blocks until the generator has armed its next timer, that is,
// until it has sent everything due and gone to sleep.
func waitTimer(t *testing.T, c *fakeClock) time.Duration {
	t.Helper()
	select {
	case d := <-c.created:
		return d
	case <-time.After(10 * time.Second): // a hang guard, not a synchronisation
		t.Fatal("the generator never waited")
		return 0
	}
}

func TestGeneratorOpenLoop(t *testing.T) {
	clk := newFakeClock(t0)
	// Originals never finish until released: an open-loop generator must
	// keep sending anyway.
	release := make(chan struct{})
	started := make(chan int64, 200)
	send := func(ctx context.Context, k int64) Outcome {
		started <- k
		<-release
		return OutcomeSuccess
	}
	arr := Arrivals{Start: t0, Rate: 50}
	reg := prometheus.NewRegistry()
	g := newGenerator(GeneratorConfig{Rate: 50}, clk, arr, arr.Before(t0.Add(2*time.Second)), send, reg)
	done := make(chan struct{})
	go func() { g.run(context.Background()); close(done) }()

	if d := waitTimer(t, clk); d != 20*time.Millisecond {
		t.Fatalf("first wait %v, want 20ms (next arrival)", d)
	}
	if n := g.sent.Load(); n != 1 {
		t.Fatalf("sent %d at start, want 1", n)
	}
	// One second at once: the 50 originals due by then go out in a burst,
	// each stamped with how late it is.
	clk.Advance(time.Second)
	waitTimer(t, clk)
	tr := g.truth()
	if tr.Sent != 51 || tr.InFlight != 51 {
		t.Fatalf("after 1s: sent %d, in flight %d; want 51, 51 (none finished)", tr.Sent, tr.InFlight)
	}
	if tr.MaxLag != 980*time.Millisecond || tr.Lag != 0 {
		t.Errorf("lag %v, max %v; want 0 and 980ms", tr.Lag, tr.MaxLag)
	}
	fams := families(t, reg)
	if v, _ := value(fams, "sim_loadgen_schedule_lag_max_seconds", nil); v != 0.98 {
		t.Errorf("sim_loadgen_schedule_lag_max_seconds = %v, want 0.98", v)
	}
	if v, _ := value(fams, "sim_loadgen_in_flight", nil); v != 51 {
		t.Errorf("sim_loadgen_in_flight = %v, want 51", v)
	}
	// Step by step to the end of the schedule (2s: 100 originals).
	for range 48 {
		clk.Advance(20 * time.Millisecond)
		waitTimer(t, clk)
	}
	if n := g.sent.Load(); n != 99 {
		t.Fatalf("sent %d after 1.96s, want 99", n)
	}
	clk.Advance(20 * time.Millisecond) // the last one; the generator stops sending
	seen := map[int64]bool{}
	for len(seen) < 100 {
		seen[<-started] = true
	}
	close(release)
	<-done // run returns once every original finished
	tr = g.truth()
	// Original 0 started at 0 and answered at 1.98s: later than the user
	// deadline. The others started at 1s or after.
	if tr.Sent != 100 || tr.Success != 99 || tr.Late != 1 || tr.InFlight != 0 || tr.PeakInFlight != 100 || tr.Dropped != 0 {
		t.Fatalf("final %+v", tr)
	}
	if len(started) != 0 {
		t.Fatalf("send called more than 100 times")
	}
	fams = families(t, reg)
	if v, _ := value(fams, "sim_loadgen_originals_total", nil); v != 100 {
		t.Errorf("sim_loadgen_originals_total = %v", v)
	}
	if v, _ := value(fams, "sim_loadgen_outcomes_total", map[string]string{"outcome": "success"}); v != 99 {
		t.Errorf("outcomes{success} = %v", v)
	}
}

func TestGeneratorDropsBeyondMaxInFlight(t *testing.T) {
	clk := newFakeClock(t0)
	release := make(chan struct{})
	send := func(ctx context.Context, k int64) Outcome {
		<-release
		return OutcomeRejected
	}
	arr := Arrivals{Start: t0, Rate: 100}
	g := newGenerator(GeneratorConfig{Rate: 100, MaxInFlight: 5}, clk, arr, 20, send, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.run(ctx); close(done) }()
	waitTimer(t, clk)
	clk.Advance(185 * time.Millisecond) // 19 due; only 5 may be in progress
	waitTimer(t, clk)
	tr := g.truth()
	if tr.Sent != 5 || tr.Dropped != 14 || tr.InFlight != 5 {
		t.Fatalf("truth %+v; want 5 sent, 14 dropped", tr)
	}
	close(release)
	cancel()
	<-done
	if tr := g.truth(); tr.Sent != 5 || tr.Rejected != 5 || tr.PeakInFlight != 5 || tr.InFlight != 0 {
		t.Fatalf("final %+v", tr)
	}
}

func TestGeneratorStopsOnCancel(t *testing.T) {
	clk := newFakeClock(t0)
	ctx, cancel := context.WithCancel(context.Background())
	send := func(ctx context.Context, k int64) Outcome {
		<-ctx.Done()
		return OutcomeTimeout
	}
	g := newGenerator(GeneratorConfig{}, clk, Arrivals{Start: t0}, -1, send, nil)
	done := make(chan struct{})
	go func() { g.run(ctx); close(done) }()
	waitTimer(t, clk)
	cancel()
	<-done
	if tr := g.truth(); tr.Sent != 1 || tr.Timeout != 1 || tr.InFlight != 0 {
		t.Fatalf("truth %+v", tr)
	}
}

func TestGeneratorLateAndBins(t *testing.T) {
	clk := newFakeClock(t0)
	// Original 0 answers after 1.5s of (fake) time: late, not a success.
	answer := make(chan struct{})
	send := func(ctx context.Context, k int64) Outcome {
		if k == 0 {
			<-answer
		}
		return OutcomeSuccess
	}
	arr := Arrivals{Start: t0, Rate: 2}
	g := newGenerator(GeneratorConfig{Rate: 2, UserDeadline: time.Second}, clk, arr, 4, send, nil)
	done := make(chan struct{})
	go func() { g.run(context.Background()); close(done) }()
	waitTimer(t, clk)
	clk.Advance(1500 * time.Millisecond) // all four sent; 0 still waits
	close(answer)
	<-done
	tr := g.truth()
	if tr.Late != 1 || tr.Success != 3 {
		t.Fatalf("late %d success %d, want 1 and 3", tr.Late, tr.Success)
	}
	bins, _ := g.binsCopy()
	if len(bins) != 2 || bins[0] != (bin{sent: 2, success: 1}) || bins[1] != (bin{sent: 2, success: 2}) {
		t.Fatalf("bins %+v", bins)
	}
}

// With hold the generator keeps the rate after its limit, until ctx ends.
func TestGeneratorHoldsPastLimit(t *testing.T) {
	clk := newFakeClock(t0)
	ctx, cancel := context.WithCancel(context.Background())
	send := func(ctx context.Context, k int64) Outcome { return OutcomeSuccess }
	arr := Arrivals{Start: t0, Rate: 10}
	g := newGenerator(GeneratorConfig{Rate: 10}, clk, arr, 10, send, nil)
	g.hold = true
	done := make(chan struct{})
	go func() { g.run(ctx); close(done) }()
	waitTimer(t, clk)
	clk.Advance(3 * time.Second) // 30 originals due past the limit of 10
	waitTimer(t, clk)
	cancel()
	<-done
	if tr := g.truth(); tr.Sent != 31 {
		t.Fatalf("sent %d, want 31 (t=0..3s at 10/s, the limit of 10 held past)", tr.Sent)
	}
}
