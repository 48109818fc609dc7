package analysis

import (
	"math"

	"github.com/retrytop/retrytop/model"
)

// Recovery is dated from the scrapes (Recovery, fineRecovery): a caller's
// goodput and offered load, and its dependency's service time, between
// every two consecutive scrapes of the target that exports them. Each is
// read on its own target's scrapes, never interpolated across targets.

// goodputSteps are one row's successes and originals counted between
// consecutive scrapes of its target: step i runs from times[i-1] to
// times[i] (step 0 has no start and holds nothing); NaN where the row
// has no value.
type goodputSteps struct {
	times      []int64
	succ, orig []float32
}

// serviceSteps are a server's service-time observations (finished: the
// histogram's count increase), their median, and the requests it
// received, between consecutive scrapes of the server's target, as
// goodputSteps; NaN where unknown.
type serviceSteps struct {
	times                   []int64
	finished, p50, received []float32
}

var nan32 = float32(math.NaN())

func f32(v float64, ok bool) float32 {
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return nan32
	}
	return float32(v)
}

// goodputAt is the row's successes and originals over w.
func (r *row) goodputAt(w *window) (succ, orig float32) {
	o, ook := r.sum(cOriginals, w)
	var s float64
	sok := false
	for _, g := range r.results {
		if g.key == model.ResultSuccess {
			s, sok = groupIncrease(g.series, w)
		}
	}
	if !sok && ook && len(r.results) > 0 {
		s, sok = 0, true // results exported, none a success yet
	}
	return f32(s, sok), f32(o, ook)
}

// serviceAt is the server's service-time step over w.
func (sv *server) serviceAt(w *window) (finished, p50, received float32) {
	finished, p50, received = nan32, nan32, nan32
	if h, ok := sv.service.increase(*w); ok {
		finished = f32(h.Count, true)
		if q, ok := quantile(0.5, h.Buckets).Get(); ok && h.Count > 0 {
			p50 = f32(q, true)
		}
	}
	if len(sv.received) > 0 {
		received = f32(groupIncrease(sv.received, w))
	}
	return finished, p50, received
}

// rowGoodputSteps are row r's goodput steps between its scrapes from the
// last at or before fromMs to the first at or after toMs.
func rowGoodputSteps(r *row, fromMs, toMs int64) goodputSteps {
	times := stepTimes(r.times, fromMs, toMs)
	g := goodputSteps{times: times, succ: make([]float32, len(times)), orig: make([]float32, len(times))}
	g.succ[0], g.orig[0] = nan32, nan32
	for i := 1; i < len(times); i++ {
		w := rangeWindow(times, times[i-1], times[i])
		g.succ[i], g.orig[i] = r.goodputAt(&w)
	}
	return g
}

// serverSteps are sv's service steps as rowGoodputSteps reads a row.
func serverSteps(sv *server, fromMs, toMs int64) serviceSteps {
	times := stepTimes(sv.times, fromMs, toMs)
	s := serviceSteps{times: times}
	for _, p := range []*[]float32{&s.finished, &s.p50, &s.received} {
		*p = make([]float32, len(times))
		(*p)[0] = nan32
	}
	for i := 1; i < len(times); i++ {
		w := rangeWindow(times, times[i-1], times[i])
		s.finished[i], s.p50[i], s.received[i] = sv.serviceAt(&w)
	}
	return s
}

// stepTimes are the scrape times from the last at or before fromMs to the
// first at or after toMs.
func stepTimes(times []int64, fromMs, toMs int64) []int64 {
	i := max(timesAfter(times, fromMs)-1, 0)
	j := min(timesAfter(times, toMs-1)+1, len(times))
	if i >= j {
		return nil
	}
	return times[i:j]
}

// scrapeSteps gathers a target's steps while a recording streams through
// a store of a few minutes (WholeBuilder): every scrape's step once, as
// the store still holds it and the one before.
type scrapeSteps struct {
	times   []int64
	goodput map[string]*goodputSteps // by dependency; their times are times
	service *serviceSteps            // nil until the target exports a service time
}

// gather appends the steps of target t's scrapes stored since the last
// one gathered. Rows' goodput is kept only when some target exports a
// service time (withGoodput): without one no row has a trigger.
func (ss *scrapeSteps) gather(st *model.Store, t string, withGoodput bool) {
	since := int64(math.MinInt64)
	if n := len(ss.times); n > 0 {
		since = ss.times[n-1]
	}
	times := st.TimesSince(t, since)
	if len(times) == 0 || times[len(times)-1] <= since {
		return
	}
	if ss.goodput == nil {
		ss.goodput = map[string]*goodputSteps{}
	}
	var rows map[string]*row
	if withGoodput {
		sel := &selection{target: t, times: times, series: map[string][]model.Series{
			model.MetricOriginals: st.SelectSince(t, model.MetricOriginals, nil, since),
			model.MetricResults:   st.SelectSince(t, model.MetricResults, nil, since),
		}}
		rows = sel.rows()
	}
	sv := selectServer(st, t, times, since)
	if sv != nil && len(sv.service) == 0 {
		sv = nil
	}
	if sv != nil && ss.service == nil {
		ss.service = &serviceSteps{}
		for _, p := range []*[]float32{&ss.service.finished, &ss.service.p50, &ss.service.received} {
			*p = pad(nil, len(ss.times))
		}
	}
	for dep := range rows {
		if ss.goodput[dep] == nil {
			ss.goodput[dep] = &goodputSteps{succ: pad(nil, len(ss.times)), orig: pad(nil, len(ss.times))}
		}
	}
	for i := range times {
		if times[i] <= since {
			continue
		}
		ok := i > 0 && times[i-1] == since // else the scrape before is gone: unknown
		var w window
		if ok {
			w = rangeWindow(times, times[i-1], times[i])
		}
		ss.times = append(ss.times, times[i])
		for dep, g := range ss.goodput {
			s, o := nan32, nan32
			if r := rows[dep]; r != nil && ok {
				s, o = r.goodputAt(&w)
			}
			g.succ, g.orig = append(g.succ, s), append(g.orig, o)
		}
		if ss.service != nil {
			f, p, rc := nan32, nan32, nan32
			if sv != nil && ok {
				f, p, rc = sv.serviceAt(&w)
			}
			s := ss.service
			s.finished, s.p50, s.received = append(s.finished, f), append(s.p50, p), append(s.received, rc)
		}
		since = times[i]
	}
}

// pad grows xs with NaN to n values.
func pad(xs []float32, n int) []float32 {
	for len(xs) < n {
		xs = append(xs, nan32)
	}
	return xs
}

// rowSteps are the gathered goodput steps of t's row to dep.
func (ss *scrapeSteps) rowSteps(dep string) (goodputSteps, bool) {
	if ss.goodput[dep] == nil {
		return goodputSteps{}, false
	}
	g := ss.goodput[dep]
	return goodputSteps{times: ss.times, succ: pad(g.succ, len(ss.times)), orig: pad(g.orig, len(ss.times))}, true
}

// serverSteps are the gathered service steps of the target.
func (ss *scrapeSteps) serverSteps() (serviceSteps, bool) {
	if ss.service == nil {
		return serviceSteps{}, false
	}
	s := ss.service
	return serviceSteps{times: ss.times, finished: s.finished, p50: s.p50, received: s.received}, true
}

// anyServiceTime is whether some target of st exports a server's service
// time.
func anyServiceTime(st *model.Store) bool {
	for _, t := range st.Targets() {
		if len(st.SelectSince(t, model.MetricServerServiceTime+"_bucket", noDependency, math.MaxInt64)) > 0 {
			return true
		}
	}
	return false
}
