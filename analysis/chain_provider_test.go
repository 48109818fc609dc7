package analysis

import (
	"testing"

	"github.com/retrytop/retrytop/model"
)

func TestAttachProviders(t *testing.T) {
	chain := func(hops ...Hop) ChainResult { return ChainResult{Name: "c", Hops: hopResults(hops)} }
	rows := []model.Signals{
		{Target: "app", Dependency: "provider", AttemptsPerS: model.Some(90), TimeoutsPerS: model.Some(30),
			DependencyReceivedPerS: model.Some(118), DependencyWorkAfterCancelPerS: model.Some(20)},
		// A second caller of the provider: its attempts count as sent.
		{Target: "batch", Dependency: "provider", AttemptsPerS: model.Some(30)},
		{Target: "edge", Dependency: "app", AttemptsPerS: model.Some(50)},
		{Target: "app", Dependency: "db", AttemptsPerS: model.Some(5)},
	}
	services := []model.ServiceSignals{{
		Target: "provider", ReceivedPerS: model.Some(120), WorkAfterCancelPerS: model.Some(21),
		QueueDepth: model.Some(7), QueueOldestAge: model.Some(1.5), QueueWaitP99: model.Some(1.2),
		InFlight: model.Some(4), Slots: model.Some(4),
	}}
	cs := []ChainResult{
		chain(Hop{"edge", "app"}, Hop{"app", "provider"}),
		chain(Hop{"app", "db"}),
		{Name: "empty"},
	}
	AttachProviders(cs, rows, services)

	p := cs[0].Provider
	if p == nil || p.Target != "provider" {
		t.Fatalf("provider of the first chain: %+v", p)
	}
	for name, tt := range map[string]struct {
		got  model.Value
		want float64
	}{
		"sent (both callers)":      {p.SentPerS, 120},
		"arrived (service wins)":   {p.ArrivedPerS, 120},
		"caller timeouts":          {p.CallerTimeoutsPerS, 30},
		"work after cancel":        {p.WorkAfterCancelPerS, 21},
		"queue depth":              {p.QueueDepth, 7},
		"queue oldest":             {p.QueueOldestAge, 1.5},
		"queue wait p99":           {p.QueueWaitP99, 1.2},
		"in flight":                {p.InFlight, 4},
		"slots":                    {p.Slots, 4},
		"db sent":                  {cs[1].Provider.SentPerS, 5},
		"db timeouts (not joined)": {cs[1].Provider.CallerTimeoutsPerS, absent},
	} {
		checkValue(t, name, tt.got, tt.want)
	}
	// db is no service: its queue is absent, never 0.
	if q := cs[1].Provider.QueueOldestAge; q.OK() {
		t.Errorf("db queue age %v, want absent", q)
	}
	if cs[2].Provider != nil {
		t.Errorf("a chain without hops got a provider: %+v", cs[2].Provider)
	}

	// Without service signals the server-side view on the last hop counts.
	cs = []ChainResult{chain(Hop{"app", "provider"})}
	AttachProviders(cs, rows, nil)
	checkValue(t, "arrived from the row", cs[0].Provider.ArrivedPerS, 118)
	checkValue(t, "work after cancel from the row", cs[0].Provider.WorkAfterCancelPerS, 20)
}

func hopResults(hops []Hop) []HopResult {
	out := make([]HopResult, len(hops))
	for i, h := range hops {
		out[i] = HopResult{Target: h.Target, Dependency: h.Dependency, Found: true}
	}
	return out
}
