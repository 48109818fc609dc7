package sim

import (
	"testing"
	"time"
)

func threePhases() Schedule {
	return Schedule{Phases: []Phase{
		{Name: PhaseHealthy, Duration: 10 * time.Second, ServiceTime: 20 * time.Millisecond},
		{Name: PhaseSlow, Duration: 20 * time.Second, ServiceTime: 120 * time.Millisecond},
		{Name: PhaseRecovered, Duration: 20 * time.Second, ServiceTime: 20 * time.Millisecond},
	}}
}

func TestScheduleAt(t *testing.T) {
	s := threePhases()
	for _, c := range []struct {
		at   time.Duration
		i    int
		left time.Duration
		ok   bool
	}{
		{-time.Second, 0, 10 * time.Second, true},
		{0, 0, 10 * time.Second, true},
		{10*time.Second - 1, 0, 1, true},
		{10 * time.Second, 1, 20 * time.Second, true},
		{29 * time.Second, 1, time.Second, true},
		{30 * time.Second, 2, 20 * time.Second, true},
		{50 * time.Second, 3, 0, false},
	} {
		i, left, ok := s.At(c.at)
		if i != c.i || left != c.left || ok != c.ok {
			t.Errorf("At(%v) = %d, %v, %v; want %d, %v, %v", c.at, i, left, ok, c.i, c.left, c.ok)
		}
	}
	if s.Total() != 50*time.Second || s.Start(2) != 30*time.Second || s.Index(PhaseSlow) != 1 || s.Index("x") != -1 {
		t.Errorf("Total %v Start(2) %v Index(slow) %d", s.Total(), s.Start(2), s.Index(PhaseSlow))
	}
}

func TestScheduleScaled(t *testing.T) {
	s := threePhases().scaled(20 * time.Second)
	want := []time.Duration{4 * time.Second, 8 * time.Second, 8 * time.Second}
	for i, p := range s.Phases {
		if p.Duration != want[i] {
			t.Errorf("phase %s: %v, want %v", p.Name, p.Duration, want[i])
		}
	}
	if threePhases().Phases[0].Duration != 10*time.Second {
		t.Error("scaled modified its receiver")
	}
	odd := threePhases().scaled(7 * time.Second)
	if odd.Total() != 7*time.Second {
		t.Errorf("scaled to 7s sums to %v", odd.Total())
	}
}

func TestScheduleValidate(t *testing.T) {
	if err := threePhases().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Schedule{
		{},
		{Phases: []Phase{{Name: "x"}}},
		{Phases: []Phase{{Name: "x", Duration: time.Second, ErrorFraction: 2}}},
		{Phases: []Phase{{Name: "x", Duration: time.Second, ServiceTime: -1}}},
	} {
		if bad.Validate() == nil {
			t.Errorf("Validate(%+v) = nil, want an error", bad)
		}
	}
}

func TestApplyOptions(t *testing.T) {
	sc, _ := ScenarioByName("baseline")
	got, err := applyOptions(sc, Options{Duration: 20 * time.Second, Slow: 3 * time.Second, Rate: 10, HiddenHop: true})
	if err != nil {
		t.Fatal(err)
	}
	var d []time.Duration
	for _, p := range got.Schedule.Phases {
		d = append(d, p.Duration)
	}
	if d[0] != 4*time.Second || d[1] != 3*time.Second || d[2] != 8*time.Second {
		t.Errorf("phases %v, want [4s 3s 8s]", d)
	}
	if got.Generator.Rate != 10 {
		t.Errorf("rate %v, want 10", got.Generator.Rate)
	}
	last := got.Layers[len(got.Layers)-1]
	if !last.Hidden || last.Name != NameProxy {
		t.Errorf("last layer %+v, want the hidden proxy", last)
	}
	if len(sc.Layers) != 2 || sc.Schedule.Phases[1].Duration != DefaultSlow {
		t.Error("applyOptions modified the scenario it was given")
	}
}

func TestScenarios(t *testing.T) {
	want := []string{"baseline", "bounded", "chain", "ignore-cancel", "healthy", "metastable", "metastable-bounded"}
	got := ScenarioNames()
	if len(got) != len(want) {
		t.Fatalf("scenarios %v, want %v", got, want)
	}
	for i, sc := range Scenarios() {
		if sc.Name != want[i] {
			t.Errorf("scenario %d is %s, want %s", i, sc.Name, want[i])
		}
		if err := sc.Validate(); err != nil {
			t.Errorf("%s: %v", sc.Name, err)
		}
	}
	base, _ := ScenarioByName("baseline")
	bounded, _ := ScenarioByName("bounded")
	bc, dc := base.Layers[1].Policy, bounded.Layers[1].Policy
	if bc.Retry.MaxAttempts != 3 || bc.Retry.PerAttemptTimeout != 300*time.Millisecond || bc.Limit != 0 || bc.Budget != nil {
		t.Errorf("baseline client policy %+v", bc)
	}
	if dc.Retry.MaxAttempts != bc.Retry.MaxAttempts || dc.Retry.Deadline != bc.Retry.Deadline || dc.Limit != 4 || dc.Budget == nil || dc.Retry.BackoffBase == 0 {
		t.Errorf("bounded client policy %+v", dc)
	}
	if base.Browser.Retry.Deadline != bounded.Browser.Retry.Deadline {
		t.Error("baseline and bounded must share the overall deadline")
	}
	chain, _ := ScenarioByName("chain")
	worst := chain.Browser.Retry.MaxAttempts
	for _, l := range chain.Layers {
		worst *= l.Policy.Retry.MaxAttempts
	}
	if worst != 27 {
		t.Errorf("chain worst case %d, want 27", worst)
	}
	ic, _ := ScenarioByName("ignore-cancel")
	if !ic.Provider.IgnoreCancel {
		t.Error("ignore-cancel provider does not ignore cancellation")
	}
	h, _ := ScenarioByName("healthy")
	for _, p := range h.Schedule.Phases {
		if p.ServiceTime != HealthyServiceTime {
			t.Errorf("healthy phase %s has service time %v", p.Name, p.ServiceTime)
		}
	}
	if _, ok := ScenarioByName("nope"); ok {
		t.Error("ScenarioByName found an unknown scenario")
	}
}
