package sim

import (
	"net/http"
	"testing"
	"time"
)

// The breaker's states step by step, on explicit times.
func TestBreakerStates(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	b := newBreaker(&BreakerConfig{Failures: 2, OpenFor: 5 * time.Second, ProbeEvery: time.Second, CloseAfter: 2}, "p", nil)
	type step struct {
		at        float64
		admit     bool // allow's answer
		probe     bool
		success   bool // how the admitted operation ended
		wantState int  // after it ended
	}
	for i, s := range []step{
		{0, true, false, false, breakerClosed},
		{0.1, true, false, true, breakerClosed}, // a success resets the run
		{0.2, true, false, false, breakerClosed},
		{0.3, true, false, false, breakerOpen}, // two in a row
		{1, false, false, false, breakerOpen},  // refused for OpenFor
		{5.3, true, true, true, breakerHalfOpen},
		{5.8, false, false, false, breakerHalfOpen}, // one probe a second
		{6.3, true, true, false, breakerOpen},       // a failed probe reopens
		{11.3, true, true, true, breakerHalfOpen},
		{12.3, true, true, true, breakerClosed}, // CloseAfter probes
		{12.4, true, false, true, breakerClosed},
	} {
		probe, ok := b.allow(at(s.at))
		if ok != s.admit || probe != s.probe {
			t.Fatalf("step %d at %vs: allow = probe %v, ok %v; want %v, %v", i, s.at, probe, ok, s.probe, s.admit)
		}
		if ok {
			b.done(at(s.at), probe, s.success)
		}
		if got := b.current(); got != s.wantState {
			t.Fatalf("step %d at %vs: state %d, want %d", i, s.at, got, s.wantState)
		}
	}
	if got := b.refused.Load(); got != 2 {
		t.Errorf("refused %d, want 2", got)
	}
}

// The options change only the client: POST with the breaker, the other
// layers as they were.
func TestRouteOptionsApplyToClient(t *testing.T) {
	sc, _ := ScenarioByName("baseline")
	got, err := applyOptions(sc, Options{NonIdempotent: true, Breaker: true, HiddenHop: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range got.Layers {
		wantMethod, wantBreaker := "", false
		if l.Name == NameClient {
			wantMethod, wantBreaker = http.MethodPost, true
		}
		if l.Policy.Method != wantMethod || (l.Policy.Breaker != nil) != wantBreaker {
			t.Errorf("%s: method %q, breaker %v", l.Name, l.Policy.Method, l.Policy.Breaker)
		}
	}
	if orig, _ := ScenarioByName("baseline"); orig.Layers[1].Policy.Method != "" {
		t.Error("the built-in scenario was modified")
	}
}
