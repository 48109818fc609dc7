package analysis

import (
	"reflect"
	"slices"
	"strconv"
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

// attachByScan is AttachProviders as it scanned every row and service for
// each chain: the reference its indexes must agree with.
func attachByScan(chains []ChainResult, rows []model.Signals, services []model.ServiceSignals) {
	for i := range chains {
		c := &chains[i]
		if len(c.Hops) == 0 {
			c.Provider = nil
			continue
		}
		last := c.Hops[len(c.Hops)-1]
		p := &ChainProvider{Target: last.Dependency}
		sent, seen := 0.0, false
		for j := range rows {
			r := &rows[j]
			if r.Dependency != last.Dependency {
				continue
			}
			if r.AttemptsPerS.OK() {
				sent, seen = sent+r.AttemptsPerS.V(), true
			}
			if r.Target == last.Target {
				p.CallerTimeoutsPerS = r.TimeoutsPerS
				p.ArrivedPerS = r.DependencyReceivedPerS
				p.WorkAfterCancelPerS = r.DependencyWorkAfterCancelPerS
			}
		}
		if seen {
			p.SentPerS = model.Some(sent)
		}
		for j := range services {
			s := &services[j]
			if s.Target != last.Dependency {
				continue
			}
			p.ArrivedPerS = first(s.ReceivedPerS, p.ArrivedPerS)
			p.WorkAfterCancelPerS = first(s.WorkAfterCancelPerS, p.WorkAfterCancelPerS)
			p.QueueDepth, p.QueueOldestAge, p.QueueWaitP99 = s.QueueDepth, s.QueueOldestAge, s.QueueWaitP99
			p.InFlight, p.Slots = s.InFlight, s.Slots
		}
		c.Provider = p
	}
}

// providerFleet is n targets calling deps dependencies each (some rows
// twice, some without attempts or timeouts), a chain per hop, and service
// signals for some dependencies (two for one).
func providerFleet(n, deps int) ([]ChainResult, []model.Signals, []model.ServiceSignals) {
	var rows []model.Signals
	var chains []ChainResult
	val := func(k int) model.Value {
		if k%5 == 0 {
			return model.Absent
		}
		return model.Some(float64(k%97) / 7)
	}
	for t := range n {
		for d := range deps {
			tgt, dep := "t"+strconv.Itoa(t), "d"+strconv.Itoa(d)
			k := t*deps + d
			r := model.Signals{Target: tgt, Dependency: dep, AttemptsPerS: val(k), TimeoutsPerS: val(k + 1),
				DependencyReceivedPerS: val(k + 2), DependencyWorkAfterCancelPerS: val(k + 3)}
			rows = append(rows, r)
			if k%11 == 0 { // the same key twice: the later row is the hop's
				r.TimeoutsPerS = val(k + 4)
				rows = append(rows, r)
			}
			chains = append(chains, ChainResult{Name: tgt + ">" + dep, Hops: hopResults([]Hop{{tgt, dep}})})
		}
	}
	chains = append(chains, ChainResult{Name: "empty"})
	var services []model.ServiceSignals
	for d := 0; d < deps; d += 3 {
		services = append(services, model.ServiceSignals{Target: "d" + strconv.Itoa(d), ReceivedPerS: val(d), QueueDepth: val(d + 1), Slots: val(d + 2)})
	}
	services = append(services, model.ServiceSignals{Target: "d0", WorkAfterCancelPerS: model.Some(3), InFlight: model.Some(2)})
	return chains, rows, services
}

func TestAttachProvidersAsScan(t *testing.T) {
	chains, rows, services := providerFleet(12, 9)
	want := slices.Clone(chains)
	attachByScan(want, rows, services)
	AttachProviders(chains, rows, services)
	for i := range chains {
		if !reflect.DeepEqual(chains[i].Provider, want[i].Provider) {
			t.Errorf("chain %s: provider %+v, want %+v", chains[i].Name, chains[i].Provider, want[i].Provider)
		}
	}
}

// BenchmarkAttachProviders: 100 targets of 36 dependencies, a chain per
// hop, as the dashboard infers them on a fleet; "scan" is the reference
// (every row and service for each chain).
func BenchmarkAttachProviders(b *testing.B) {
	chains, rows, services := providerFleet(100, 36)
	for name, attach := range map[string]func([]ChainResult, []model.Signals, []model.ServiceSignals){
		"index": AttachProviders, "scan": attachByScan,
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				attach(chains, rows, services)
			}
		})
	}
}
