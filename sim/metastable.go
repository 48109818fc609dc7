package sim

import "time"

// The metastable scenarios' provider and schedule (docs/scenarios.md,
// "metastable"): two execution slots of 20 ms serve 100 requests/s, twice
// the 50 originals/s, but less than the baseline's 3 attempts per original
// once every attempt times out (150/s). A provider that finishes work for
// callers who gave up keeps that work in its queue.
const (
	// MetastableSlots is the provider's execution slots.
	MetastableSlots = 2
	// MetastableSlow is the trigger: 15 s of MetastableSlowServiceTime,
	// longer than the 300 ms attempt timeout, so that every attempt of the
	// trigger times out and the bounded policy, too, leaves dead work
	// behind to drain.
	MetastableSlow            = 15 * time.Second
	MetastableSlowServiceTime = 400 * time.Millisecond
	// MetastableAfter is how long the run goes on after the trigger: long
	// enough for METASTABLE's 30 s and for the bounded policy's backlog to
	// drain.
	MetastableAfter = 45 * time.Second
)

// metastableSchedule is healthy 10 s, slow 15 s at 400 ms, recovered 45 s.
func metastableSchedule() Schedule {
	return Schedule{Phases: []Phase{
		{Name: PhaseHealthy, Duration: DefaultHealthy, ServiceTime: HealthyServiceTime},
		{Name: PhaseSlow, Duration: MetastableSlow, ServiceTime: MetastableSlowServiceTime},
		{Name: PhaseRecovered, Duration: MetastableAfter, ServiceTime: HealthyServiceTime},
	}}
}

// metastableScenarios are "metastable" (the baseline policy, stuck after
// the trigger) and "metastable-bounded" (the bounded policy on the same
// provider and traffic, which recovers).
func metastableScenarios() []Scenario {
	prov := ProviderConfig{Slots: MetastableSlots, IgnoreCancel: true}
	return []Scenario{
		singleOwner("metastable",
			"baseline against 2 slots that finish work for callers who gave up: a 15 s slowdown leaves retries and dead work holding the provider above its capacity after the trigger ends",
			BaselineClient(), prov, metastableSchedule()),
		singleOwner("metastable-bounded",
			"bounded policy on the metastable scenario's provider and traffic: the backlog drains after the trigger",
			BoundedClient(), prov, metastableSchedule()),
	}
}
