package analysis

import "github.com/retrytop/retrytop/model"

// ChainProvider is a chain's last dependency seen from both sides: what
// its callers sent against what it says arrived, how long work waits in
// its queue, and the work it still finishes after the caller gave up next
// to the caller's own timeouts. Every field may be Absent.
type ChainProvider struct {
	Target string `json:"target"`
	// SentPerS is the attempts/s every visible caller sent it (the rows
	// whose dependency it is); ArrivedPerS the requests/s it received, from
	// its service signals or else its server-side view on the last hop.
	SentPerS    model.Value `json:"sent_per_s"`
	ArrivedPerS model.Value `json:"arrived_per_s"`
	// CallerTimeoutsPerS are the attempts the chain's last hop gave up on.
	CallerTimeoutsPerS  model.Value `json:"caller_timeouts_per_s"`
	WorkAfterCancelPerS model.Value `json:"work_after_cancel_per_s"`
	QueueDepth          model.Value `json:"queue_depth"`
	QueueOldestAge      model.Value `json:"queue_oldest_age_s"`
	QueueWaitP99        model.Value `json:"queue_wait_p99_s"`
	InFlight            model.Value `json:"in_flight"`
	Slots               model.Value `json:"slots"`
}

// AttachProviders fills each chain's Provider from the rows (what callers
// sent, the last hop's timeouts) and the service signals of its last
// dependency. A chain without hops gets none. The rows and services are
// indexed once: a fleet infers a chain per hop, and scanning every row
// for each was most of the dashboard's CPU on 100 targets.
func AttachProviders(chains []ChainResult, rows []model.Signals, services []model.ServiceSignals) {
	if len(chains) == 0 {
		return
	}
	type sentTo struct {
		sum  float64
		seen bool
	}
	sent := make(map[string]*sentTo)
	lastRow := make(map[model.Key]*model.Signals, len(rows))
	for j := range rows {
		r := &rows[j]
		st := sent[r.Dependency]
		if st == nil {
			st = &sentTo{}
			sent[r.Dependency] = st
		}
		if r.AttemptsPerS.OK() {
			st.sum, st.seen = st.sum+r.AttemptsPerS.V(), true
		}
		lastRow[model.Key{Target: r.Target, Dependency: r.Dependency}] = r // the last of a key, as a scan finds it
	}
	svcs := make(map[string][]*model.ServiceSignals, len(services))
	for j := range services {
		svcs[services[j].Target] = append(svcs[services[j].Target], &services[j])
	}
	for i := range chains {
		c := &chains[i]
		if len(c.Hops) == 0 {
			c.Provider = nil
			continue
		}
		last := c.Hops[len(c.Hops)-1]
		p := &ChainProvider{Target: last.Dependency}
		if st := sent[last.Dependency]; st != nil && st.seen {
			p.SentPerS = model.Some(st.sum)
		}
		if r := lastRow[model.Key{Target: last.Target, Dependency: last.Dependency}]; r != nil {
			p.CallerTimeoutsPerS = r.TimeoutsPerS
			p.ArrivedPerS = r.DependencyReceivedPerS
			p.WorkAfterCancelPerS = r.DependencyWorkAfterCancelPerS
		}
		for _, s := range svcs[last.Dependency] {
			p.ArrivedPerS = first(s.ReceivedPerS, p.ArrivedPerS)
			p.WorkAfterCancelPerS = first(s.WorkAfterCancelPerS, p.WorkAfterCancelPerS)
			p.QueueDepth, p.QueueOldestAge, p.QueueWaitP99 = s.QueueDepth, s.QueueOldestAge, s.QueueWaitP99
			p.InFlight, p.Slots = s.InFlight, s.Slots
		}
		c.Provider = p
	}
}
