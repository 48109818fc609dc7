package sim

import (
	"fmt"
	"time"

	"github.com/retrytop/retrytop/retry"
)

// Scenario is a named configuration of the whole stack: the browser (the
// generator's own retry owner), the layers between it and the provider, the
// provider and the phase schedule. docs/scenarios.md explains each one.
type Scenario struct {
	Name        string
	Description string
	Generator   GeneratorConfig
	// Browser is how the generator calls the first layer (dependency: the
	// first layer's name).
	Browser HopPolicy
	// Layers run from the browser's side to the provider's.
	Layers   []Layer
	Provider ProviderConfig
	Schedule Schedule
}

// Defaults shared by the scenarios (docs/scenarios.md).
const (
	// DefaultRate is the arrival rate of originals per second.
	DefaultRate = 50
	// UserDeadline is how long the end user waits: the overall operation
	// deadline every single-owner scenario gives the whole call path.
	UserDeadline = time.Second
	// HealthyServiceTime and SlowServiceTime are the provider's service
	// times outside and during the slowdown.
	HealthyServiceTime = 20 * time.Millisecond
	SlowServiceTime    = 120 * time.Millisecond
	// ProviderSlots is the provider's execution slots.
	ProviderSlots = 4
	// Default phase durations (Options.Duration scales them).
	DefaultHealthy   = 10 * time.Second
	DefaultSlow      = 20 * time.Second
	DefaultRecovered = 20 * time.Second
)

// Target names (and Target.Layer roles) of the default chain.
const (
	NameBrowser  = "browser"
	NameApp      = "app"
	NameClient   = "client"
	NameProvider = "provider"
	NameProxy    = "proxy"
)

func slowdown(slow time.Duration) Schedule {
	return Schedule{Phases: []Phase{
		{Name: PhaseHealthy, Duration: DefaultHealthy, ServiceTime: HealthyServiceTime},
		{Name: PhaseSlow, Duration: DefaultSlow, ServiceTime: slow},
		{Name: PhaseRecovered, Duration: DefaultRecovered, ServiceTime: HealthyServiceTime},
	}}
}

// userBrowser is the end user's browser in single-owner scenarios: one
// attempt, the user deadline as the operation deadline, no retries.
func userBrowser() HopPolicy {
	return HopPolicy{Retry: retry.Policy{MaxAttempts: 1, Deadline: UserDeadline}}
}

// passThroughApp serves the browser and calls the client once, within the
// caller's remaining time minus 50 ms kept for its own reply.
func passThroughApp() HopPolicy {
	return HopPolicy{
		Retry: retry.Policy{
			MaxAttempts:     1,
			Deadline:        UserDeadline,
			DeadlineReserve: 50 * time.Millisecond,
			MinAttemptTime:  50 * time.Millisecond,
		},
		PropagateDeadline: true,
	}
}

// BaselineClient is the seed's baseline retry owner: up to 3 attempts, a
// 300 ms per-attempt timeout, no admission limit, no shared budget, no
// backoff; within the caller's deadline minus 50 ms.
func BaselineClient() HopPolicy {
	return HopPolicy{
		Retry: retry.Policy{
			MaxAttempts:       3,
			Deadline:          UserDeadline,
			PerAttemptTimeout: 300 * time.Millisecond,
			DeadlineReserve:   50 * time.Millisecond,
			MinAttemptTime:    50 * time.Millisecond,
		},
		PropagateDeadline: true,
	}
}

// BoundedClient is the seed's bounded policy: the baseline plus 4 local
// admission slots, a shared retry budget (1 credit per original, 10 per
// retry, at most 200) and full-jitter backoff from 25 ms doubling to 200 ms.
func BoundedClient() HopPolicy {
	p := BaselineClient()
	p.Limit = 4
	p.Budget = &retry.BudgetConfig{EarnPerOriginal: 1, CostPerRetry: 10, Cap: 200}
	p.Retry.BackoffBase = 25 * time.Millisecond
	p.Retry.BackoffCap = 200 * time.Millisecond
	return p
}

// HiddenProxy is a retrying hop nobody instrumented, placed in front of the
// provider by Options.HiddenHop: 3 attempts of 150 ms each, no backoff, no
// deadline of its own.
func HiddenProxy() Layer {
	return Layer{
		Name: NameProxy, Hidden: true,
		Policy: HopPolicy{Retry: retry.Policy{MaxAttempts: 3, PerAttemptTimeout: 150 * time.Millisecond}},
	}
}

func singleOwner(name, desc string, client HopPolicy, prov ProviderConfig, sched Schedule) Scenario {
	return Scenario{
		Name:        name,
		Description: desc,
		Generator:   GeneratorConfig{Rate: DefaultRate, UserDeadline: UserDeadline},
		Browser:     userBrowser(),
		Layers: []Layer{
			{Name: NameApp, Policy: passThroughApp()},
			{Name: NameClient, Policy: client},
		},
		Provider: prov,
		Schedule: sched,
	}
}

// Scenarios returns the built-in scenarios, baseline first.
func Scenarios() []Scenario {
	prov := ProviderConfig{Slots: ProviderSlots}
	ignore := prov
	ignore.IgnoreCancel = true
	naive := func(attempts int, perAttempt time.Duration) HopPolicy {
		return HopPolicy{Retry: retry.Policy{MaxAttempts: attempts, PerAttemptTimeout: perAttempt}}
	}
	chainBrowser := naive(3, time.Second)
	chainBrowser.Retry.Deadline = 3 * time.Second
	return append([]Scenario{
		singleOwner("baseline",
			"client retries up to 3 attempts with a 300 ms per-attempt timeout; no admission limit, no budget, no backoff",
			BaselineClient(), prov, slowdown(SlowServiceTime)),
		singleOwner("bounded",
			"client owns retries with 4 admission slots, a shared retry budget and full-jitter backoff; same attempt cap and deadline as baseline",
			BoundedClient(), prov, slowdown(SlowServiceTime)),
		{
			Name:        "chain",
			Description: "browser, app and client each allow 3 attempts with their own timeouts and no shared deadline: up to 3 x 3 x 3 = 27 provider attempts per user action",
			Generator:   GeneratorConfig{Rate: DefaultRate, UserDeadline: UserDeadline},
			Browser:     chainBrowser,
			Layers: []Layer{
				{Name: NameApp, Policy: naive(3, time.Second)},
				{Name: NameClient, Policy: naive(3, 300*time.Millisecond)},
			},
			Provider: prov,
			Schedule: slowdown(SlowServiceTime),
		},
		singleOwner("ignore-cancel",
			"baseline against a provider that finishes work after the caller gave up",
			BaselineClient(), ignore, slowdown(SlowServiceTime)),
		singleOwner("healthy",
			"bounded policy with no slowdown: the control run, protection must not reject normal traffic",
			BoundedClient(), prov, slowdown(HealthyServiceTime)),
	}, metastableScenarios()...)
}

// ScenarioByName returns the built-in scenario with that name.
func ScenarioByName(name string) (Scenario, bool) {
	for _, s := range Scenarios() {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// ScenarioNames lists the built-in scenario names, for flag help.
func ScenarioNames() []string {
	var out []string
	for _, s := range Scenarios() {
		out = append(out, s.Name)
	}
	return out
}

// Validate rejects a scenario the sim cannot run.
func (sc Scenario) Validate() error {
	if sc.Name == "" {
		return fmt.Errorf("sim: scenario has no name")
	}
	if len(sc.Layers) == 0 {
		return fmt.Errorf("sim: scenario %s has no layers", sc.Name)
	}
	seen := map[string]bool{NameBrowser: true, NameProvider: true}
	for _, l := range sc.Layers {
		if l.Name == "" || seen[l.Name] {
			return fmt.Errorf("sim: scenario %s: layer name %q is empty or used twice", sc.Name, l.Name)
		}
		seen[l.Name] = true
		if l.Policy.Retry.MaxAttempts < 1 {
			return fmt.Errorf("sim: scenario %s: layer %s needs MaxAttempts >= 1", sc.Name, l.Name)
		}
	}
	if sc.Browser.Retry.MaxAttempts < 1 {
		return fmt.Errorf("sim: scenario %s: browser needs MaxAttempts >= 1", sc.Name)
	}
	return sc.Schedule.Validate()
}
