package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrytop/retrytop/policy"
	"github.com/retrytop/retrytop/retry"
	"github.com/retrytop/retrytop/sim"
)

// The policy checker held to the sim, in virtual time: a provider failing
// a fraction p of its requests (the sim's injected 503s, seeded), users
// arriving open-loop at checkRate, and the attempts per original the
// sim's provider receives over a window after a warm-up compared with
// the checker's steady state and worst case.

const (
	checkRate = 50.0
	// checkTolerance: the measured attempts per original are within 5 %
	// of the checker's steady state, the claim being tested; below one
	// attempt per original (SRE shedding first tries) within 5 % of the
	// one attempt every original makes.
	checkTolerance = 0.05
	checkWarm      = 30 * time.Second
	checkMeasure   = 60 * time.Second
)

var checkPs = []float64{0, 0.1, 0.5, 0.9, 1}

func checkerPoint(t *testing.T, specs string, p float64) policy.CheckPoint {
	t.Helper()
	sp, err := policy.Parse(specs)
	if err != nil {
		t.Fatal(err)
	}
	c, err := policy.CheckChain(sp, policy.CheckOptions{Rate: checkRate, Latency: 20 * time.Millisecond, Steps: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range c.Points {
		if math.Abs(pt.P-p) < 1e-9 {
			return pt
		}
	}
	t.Fatalf("no point at p=%v", p)
	return policy.CheckPoint{}
}

// failing is a scenario whose provider fails a fraction p of its requests
// at once and serves the rest in 20 ms with slots enough never to queue;
// client is the hop that calls it.
func failing(p float64, rate float64, client sim.HopPolicy) sim.Scenario {
	return sim.Scenario{
		Name:      "policy-check",
		Generator: sim.GeneratorConfig{Rate: rate, UserDeadline: time.Hour},
		Browser:   sim.HopPolicy{Retry: retry.Policy{MaxAttempts: 1, Deadline: time.Hour}},
		Layers:    []sim.Layer{{Name: sim.NameClient, Policy: client}},
		Provider:  sim.ProviderConfig{Slots: 1000},
		Schedule: sim.Schedule{Phases: []sim.Phase{{
			Name: "outage", Duration: checkWarm + checkMeasure + 5*time.Second,
			ServiceTime: 20 * time.Millisecond, ErrorFraction: p,
		}}},
	}
}

func holdTo(t *testing.T, spec string, p, measured float64) {
	t.Helper()
	pt := checkerPoint(t, spec, p)
	tol := checkTolerance * max(pt.SteadyLoad, 1)
	if math.IsNaN(pt.SteadyLoad) {
		// SRE's throttle at p = 1 - 1/K: every level is an equilibrium.
		if spec != "sre" || p != 0.5 {
			t.Errorf("%s at p=%.0f %%: the checker has no steady state", spec, 100*p)
		}
	} else if math.Abs(measured-pt.SteadyLoad) > tol {
		t.Errorf("%s at p=%.0f %%: the sim measured %.3f attempts per original, the checker's steady state is %.3f (tolerance %.3f)",
			spec, 100*p, measured, pt.SteadyLoad, tol)
	}
	if measured > pt.WorstLoad+checkTolerance*max(pt.WorstLoad, 1) {
		t.Errorf("%s at p=%.0f %%: the sim measured %.3f, above the checker's worst case %.3f", spec, 100*p, measured, pt.WorstLoad)
	}
	t.Logf("%-40s p=%3.0f%%  sim %.3f  steady %.3f  worst %.3f", spec, 100*p, measured, pt.SteadyLoad, pt.WorstLoad)
}

// TestPolicyCheckOwnersAgainstSim: the models the sim's own layers run
// (the retry owner: an attempt cap, a budget, a limiter) in the sim's
// client hop.
func TestPolicyCheckOwnersAgainstSim(t *testing.T) {
	plain := sim.HopPolicy{Retry: retry.Policy{MaxAttempts: 3, Deadline: time.Hour}}
	bounded := sim.BoundedClient()
	bounded.PropagateDeadline = false
	bounded.Retry.Deadline = time.Hour
	for _, tc := range []struct {
		spec string
		hop  sim.HopPolicy
	}{
		{"none", sim.HopPolicy{Retry: retry.Policy{MaxAttempts: 1, Deadline: time.Hour}}},
		{"attempts=3,budget=none,limiter=none,backoff=none", plain},
		{"bounded", bounded},
	} {
		for _, p := range checkPs {
			var got float64
			synctest.Test(t, func(t *testing.T) {
				s, err := sim.Start(context.Background(), failing(p, checkRate, tc.hop), sim.Options{InProcess: true, Seed: 7})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				time.Sleep(checkWarm)
				synctest.Wait()
				a := s.Counters()
				time.Sleep(checkMeasure)
				synctest.Wait()
				b := s.Counters()
				client := len(a.Hops) - 1
				got = float64(b.ProviderReceived-a.ProviderReceived) / float64(b.Hops[client].Originals-a.Hops[client].Originals)
				s.Wait()
			})
			holdTo(t, tc.spec, p, got)
		}
	}
}

// TestPolicyCheckChainOfThreeAgainstSim: three retrying hops of 3
// attempts each over a provider that always fails make 27 attempts per
// user action, in the sim and in the checker.
func TestPolicyCheckChainOfThreeAgainstSim(t *testing.T) {
	three := sim.HopPolicy{Retry: retry.Policy{MaxAttempts: 3, Deadline: time.Hour}}
	sc := failing(1, 10, three)
	sc.Browser = three
	sc.Layers = []sim.Layer{{Name: sim.NameApp, Policy: three}, {Name: sim.NameClient, Policy: three}}
	sc.Schedule.Phases[0].Duration = 10 * time.Second
	var sent, received int64
	synctest.Test(t, func(t *testing.T) {
		s, err := sim.Start(context.Background(), sc, sim.Options{InProcess: true, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.Wait()
		synctest.Wait()
		c := s.Counters()
		sent, received = c.Sent, c.ProviderReceived
	})
	if sent != 100 || received != 27*sent {
		t.Errorf("sim: %d originals, %d provider attempts; want 100 and 27 each", sent, received)
	}
	const spec = "attempts=3,budget=none,limiter=none,backoff=none"
	pt := checkerPoint(t, spec+",recorded:attempts=3,budget=none,limiter=none,recorded:attempts=3,budget=none,limiter=none", 1)
	if pt.SteadyLoad != 27 || pt.WorstLoad != 27 {
		t.Errorf("checker at p=100 %%: steady %v, worst %v; want 27 both", pt.SteadyLoad, pt.WorstLoad)
	}
}

// TestPolicyCheckModelsAgainstSim: the models the sim's retry owner does
// not run (Envoy, Finagle, gRPC, SRE, AWS) run as the policy package's
// state machines, called in retry.Owner.Do's order (as whatif's model
// calls them), each attempt a request to the sim's provider in process.
func TestPolicyCheckModelsAgainstSim(t *testing.T) {
	for _, spec := range []string{
		"envoy", "envoy:min_retry_concurrency=1,attempts=3",
		"finagle", "grpc", "sre", "sre:k=3", "aws",
	} {
		for _, p := range checkPs {
			holdTo(t, spec, p, driveOnSim(t, spec, p))
		}
	}
}

// driveOnSim runs spec's state machine against the sim's provider
// failing p, with Poisson arrivals, and returns the provider's attempts
// per original over the measured window.
func driveOnSim(t *testing.T, spec string, p float64) float64 {
	t.Helper()
	sp, err := policy.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	var got float64
	synctest.Test(t, func(t *testing.T) {
		// The stack's own generator sends one original at its start and
		// nothing after; the driver below is the traffic.
		s, err := sim.Start(context.Background(), failing(p, 1e-6, sim.HopPolicy{Retry: retry.Policy{MaxAttempts: 1, Deadline: time.Hour}}), sim.Options{InProcess: true, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rng := rand.New(rand.NewPCG(11, uint64(p*1000)))
		var mu sync.Mutex // the state machines are not safe for concurrent use
		pol, err := policy.New(sp[0], policy.Base{MaxAttempts: 3, Backoff: policy.Backoff{Kind: "none"}}, func(n int64) int64 { return rng.Int64N(n) })
		if err != nil {
			t.Fatal(err)
		}
		d := &driver{pol: pol, mu: &mu, start: time.Now(), tr: s.Transport()}
		var wg sync.WaitGroup
		end := time.Now().Add(checkWarm + checkMeasure + 5*time.Second)
		arrived := make(chan struct{})
		go func() {
			defer close(arrived)
			for time.Now().Before(end) {
				mu.Lock()
				gap := time.Duration(rng.ExpFloat64() / checkRate * float64(time.Second))
				mu.Unlock()
				time.Sleep(gap)
				d.originals.Add(1)
				wg.Go(d.op)
			}
		}()
		time.Sleep(checkWarm)
		synctest.Wait()
		a, na := s.Counters().ProviderReceived, d.originals.Load()
		time.Sleep(checkMeasure)
		synctest.Wait()
		b, nb := s.Counters().ProviderReceived, d.originals.Load()
		got = float64(b-a) / float64(nb-na)
		<-arrived
		wg.Wait()
	})
	return got
}

// driver runs operations of one policy, in retry.Owner.Do's order: Start;
// per attempt Acquire, the request, Release; on a failure the cap, the
// backoff, Retry; End.
type driver struct {
	pol       policy.Policy
	mu        *sync.Mutex
	start     time.Time
	tr        http.RoundTripper
	originals atomic.Int64
}

func (d *driver) now() time.Duration { return time.Since(d.start) }

func (d *driver) locked(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f()
}

func (d *driver) op() {
	op := &policy.Op{Start: d.now()}
	var r policy.Reason
	d.locked(func() { r = d.pol.Start(d.now(), op) })
	last := policy.Failure
	defer func() { d.locked(func() { d.pol.End(d.now(), op, last) }) }()
	if r != policy.Allowed {
		return
	}
	for {
		d.locked(func() {
			if r = d.pol.Acquire(d.now(), op); r == policy.Allowed {
				op.Attempts++
			}
		})
		if r != policy.Allowed {
			return
		}
		last = d.attempt()
		d.locked(func() { d.pol.Release(d.now(), op, last) })
		if last == policy.Success || op.Attempts >= d.pol.MaxAttempts() {
			return
		}
		var delay time.Duration
		d.locked(func() {
			delay = d.pol.Backoff(op)
			r = d.pol.Retry(d.now(), op, last)
		})
		if r != policy.Allowed {
			return
		}
		time.Sleep(delay)
	}
}

func (d *driver) attempt() policy.Outcome {
	req, err := http.NewRequest(http.MethodGet, "http://"+sim.NameProvider+".sim/", nil)
	if err != nil {
		panic(fmt.Sprint("request: ", err))
	}
	resp, err := d.tr.RoundTrip(req)
	if err != nil {
		return policy.Failure
	}
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return policy.Success
	}
	return policy.Failure
}
