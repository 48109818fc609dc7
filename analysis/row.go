package analysis

import (
	"slices"
	"sort"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Counter families of the contract, in the order a row keeps them.
const (
	cOriginals = iota
	cAttempts
	cRetries
	cRescued
	cBudgetDenied
	cAdmission
	cResults
	cAbandoned
	cLateSuccesses
	cNested
	cHedges
	cHedgesWon
	cHedgesAbandoned
	cOperationAttempts
	cLimitExceeded
	cRequestTimeouts
	numCounters
)

var counterNames = [numCounters]string{
	cOriginals:    model.MetricOriginals,
	cAttempts:     model.MetricAttempts,
	cRetries:      model.MetricRetries,
	cRescued:      model.MetricRescued,
	cBudgetDenied: model.MetricBudgetDenied,
	cAdmission:    model.MetricAdmissionRejected,
	cResults:      model.MetricResults,
	// The dependency of a nested operation is the inner owner's: its row
	// says in which outer dependencies' attempts it ran.
	cAbandoned:         model.MetricAbandonedAttempts,
	cLateSuccesses:     model.MetricLateSuccesses,
	cNested:            model.MetricNestedOperations,
	cHedges:            model.MetricHedges,
	cHedgesWon:         model.MetricHedgesWon,
	cHedgesAbandoned:   model.MetricHedgesAbandoned,
	cOperationAttempts: model.MetricOperationAttempts,
	cLimitExceeded:     model.MetricRetryLimitExceeded,
	cRequestTimeouts:   model.MetricRequestTimeouts,
}

// Gauge families of the contract.
const (
	gActive = iota
	gLimit
	gBalance
	gMaxAttempts
	gDeadline
	gPending
	gBreaker
	gSettingOff
	numGauges
)

var gaugeNames = [numGauges]string{
	gActive:      model.MetricActiveCalls,
	gLimit:       model.MetricConcurrencyLimit,
	gBalance:     model.MetricBudgetBalance,
	gMaxAttempts: model.MetricPolicyMaxAttempts,
	gDeadline:    model.MetricPolicyDeadline,
	gPending:     model.MetricPendingCalls,
	gBreaker:     model.MetricBreakerState,
	gSettingOff:  model.MetricSettingOff,
}

// Histogram families the signals use (retry_attempt_duration_seconds only
// names dependencies).
const (
	hPoolWait = iota
	hRequest
	hBackoff
	numHists
)

var histNames = [numHists]string{
	hPoolWait: model.MetricPoolWait,
	hRequest:  model.MetricRequestDuration,
	hBackoff:  model.MetricBackoff,
}

// contractResults are reported (as zero when never seen) whenever a row has
// retry_results_total data.
var contractResults = []string{
	model.ResultSuccess, model.ResultCapacityRejected, model.ResultBudgetExhausted,
	model.ResultDeadlineExhausted, model.ResultProviderError, model.ResultPermanentError,
	model.ResultCancelled,
}

// row is the contract series of one (target, dependency), selected once
// and then evaluated over any number of windows without touching the store.
type row struct {
	target, dep string
	times       []int64 // the target's scrape times, oldest first

	counters [numCounters][]cseries
	gauges   [numGauges][]points
	// admission and results are the counter series grouped by the labels
	// their breakdowns are keyed by.
	admission []group
	results   []group
	// hists holds per family one group per result_class (request duration)
	// or a single group of all label sets (pool wait, backoff).
	hists [numHists][]histGroup
	// unsafe holds the originals and attempts series of non-idempotent
	// requests (unsafeOriginals, unsafeAttempts), where the emitter labels
	// the method.
	unsafe [2][]points
	// sources are the workloads the row's originals come from
	// (workloadKey, edge.go).
	sources []string
	// settings names the setting of each retry_setting_off series, in
	// the order of gauges[gSettingOff].
	settings []string
	// server is the dependency's own server-side series, when the
	// dependency is a target that exports them (nil otherwise).
	server *server
}

// cseries is one counter series and the value of the label it is split by.
type cseries struct {
	key    string
	points points
}

// group is the series that share one breakdown key.
type group struct {
	key    string
	labels model.Labels
	series []points
}

// histGroup is one histogram summed over label sets by le.
type histGroup struct {
	class string
	parts parts
}

// selection is what one Store pass yields for a target: the contract's
// flat series by name.
type selection struct {
	target string
	times  []int64
	series map[string][]model.Series
}

// selectNames are the flat series a row is built from.
var selectNames = func() []string {
	var ns []string
	ns = append(ns, counterNames[:]...)
	ns = append(ns, gaugeNames[:]...)
	for _, h := range histNames {
		ns = append(ns, h+"_bucket", h+"_sum")
	}
	// Only names dependencies; its _count is one series per label set.
	return append(ns, model.MetricAttemptDuration+"_count")
}()

// selectTarget copies target's contract series from the store, each name
// once, keeping those match accepts (nil keeps all).
// Only scrapes from the last one at or before sinceMs are copied: a window
// needs nothing older.
func selectTarget(st *model.Store, target string, times []int64, match func(model.Labels) bool, sinceMs int64) *selection {
	sel := &selection{target: target, times: times, series: make(map[string][]model.Series, len(selectNames))}
	for _, n := range selectNames {
		if ss := st.SelectSince(target, n, match, sinceMs); len(ss) > 0 {
			sel.series[n] = ss
		}
	}
	return sel
}

// matchDependency accepts the series of one dependency.
func matchDependency(dep string) func(model.Labels) bool {
	return func(ls model.Labels) bool { return ls.Get(model.LabelDependency) == dep }
}

// rows splits the selection into one row per dependency label value.
// Series without a dependency label belong to no row.
func (sel *selection) rows() map[string]*row {
	rows := make(map[string]*row)
	get := func(ls model.Labels) *row {
		dep := ls.Get(model.LabelDependency)
		if dep == "" {
			return nil
		}
		r := rows[dep]
		if r == nil {
			r = &row{target: sel.target, dep: dep, times: sel.times}
			rows[dep] = r
		}
		return r
	}
	for c, name := range counterNames {
		for _, s := range sel.series[name] {
			r := get(s.Labels)
			if r == nil {
				continue
			}
			pts := newPoints(sel.times, s.Points)
			var key string
			switch c {
			case cAttempts:
				key = s.Labels.Get(model.LabelOutcome)
			case cNested:
				key = s.Labels.Get(model.LabelOuterDependency)
			case cResults:
				key = s.Labels.Get(model.LabelResult)
				r.results = addToGroup(r.results, key, nil, &pts)
			case cAdmission:
				reason, prio := s.Labels.Get(model.LabelReason), s.Labels.Get(model.LabelPriority)
				key = reason + "/" + prio
				r.admission = addToGroup(r.admission, key,
					model.LabelsFromPairs(model.LabelReason, reason, model.LabelPriority, prio), &pts)
			}
			r.counters[c] = append(r.counters[c], cseries{key: key, points: pts})
			if c == cOriginals {
				r.addSource(s.Labels)
			}
			if (c == cOriginals || c == cAttempts) && unsafeMethod(s.Labels) {
				side := unsafeOriginals
				if c == cAttempts {
					side = unsafeAttempts
				}
				r.unsafe[side] = append(r.unsafe[side], pts)
			}
		}
	}
	for g, name := range gaugeNames {
		for _, s := range sel.series[name] {
			if r := get(s.Labels); r != nil {
				r.gauges[g] = append(r.gauges[g], newPoints(sel.times, s.Points))
				if g == gSettingOff {
					r.settings = append(r.settings, s.Labels.Get(model.LabelSetting))
				}
			}
		}
	}
	for h, name := range histNames {
		// Each row's series are counted, then cut from one array (a row's
		// twenty-odd buckets grown one append at a time were much of a
		// window's report allocations), in the same order.
		parts := [][]model.Series{sel.series[name+"_bucket"], sel.series[name+"_sum"]}
		count := make(map[*row]int)
		total := 0
		for _, ss := range parts {
			for _, s := range ss {
				if r := get(s.Labels); r != nil {
					count[r]++
					total++
				}
			}
		}
		if total == 0 {
			continue
		}
		slab := make([]model.Series, 0, total)
		perRow := make(map[*row][]model.Series, len(count))
		for _, ss := range parts {
			for _, s := range ss {
				r := get(s.Labels)
				if r == nil {
					continue
				}
				rs, ok := perRow[r]
				if !ok {
					n := len(slab)
					slab = slab[:n+count[r]]
					rs = slab[n : n : n+count[r]]
				}
				perRow[r] = append(rs, s)
			}
		}
		for r, ss := range perRow {
			r.hists[h] = histGroups(ss, sel.times, h == hRequest)
		}
	}
	for _, s := range sel.series[model.MetricAttemptDuration+"_count"] {
		get(s.Labels)
	}
	for _, r := range rows {
		if len(r.counters[cResults]) > 0 {
			for _, res := range contractResults {
				r.results = addToGroup(r.results, res, nil, nil)
			}
		}
		sortGroups(r.results)
		sortGroups(r.admission)
	}
	return rows
}

// addToGroup appends p (when non-nil) to the group named key, creating it
// when needed.
func addToGroup(gs []group, key string, labels model.Labels, p *points) []group {
	for i := range gs {
		if gs[i].key == key {
			if p != nil {
				gs[i].series = append(gs[i].series, *p)
			}
			return gs
		}
	}
	g := group{key: key, labels: labels}
	if p != nil {
		g.series = []points{*p}
	}
	return append(gs, g)
}

func sortGroups(gs []group) {
	slices.SortFunc(gs, func(a, b group) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
}

// histGroups splits one histogram family's series of a row: by
// result_class when byClass (the contract's classes first, in display
// order, then any others sorted), else into one group of all label sets.
func histGroups(ss []model.Series, times []int64, byClass bool) []histGroup {
	if !byClass {
		return []histGroup{{parts: histParts(ss, times)}}
	}
	// ss is the row's own (rows cuts it for this call): sorted by class,
	// stable, each class is a run of it in its order, and no class's
	// list is grown.
	slices.SortStableFunc(ss, func(a, b model.Series) int {
		return strings.Compare(a.Labels.Get(model.LabelResultClass), b.Labels.Get(model.LabelResultClass))
	})
	byName := make(map[string][]model.Series)
	for i := 0; i < len(ss); {
		c := ss[i].Labels.Get(model.LabelResultClass)
		j := i + 1
		for j < len(ss) && ss[j].Labels.Get(model.LabelResultClass) == c {
			j++
		}
		byName[c] = ss[i:j:j]
		i = j
	}
	out := make([]histGroup, 0, len(byName)+len(model.LatencyClasses))
	for _, c := range model.LatencyClasses {
		out = append(out, histGroup{class: c, parts: histParts(byName[c], times)})
		delete(byName, c)
	}
	extra := make([]string, 0, len(byName))
	for c := range byName {
		extra = append(extra, c)
	}
	sort.Strings(extra)
	for _, c := range extra {
		out = append(out, histGroup{class: c, parts: histParts(byName[c], times)})
	}
	return out
}

// emptyRow is the row of a dependency the store has nothing for.
func emptyRow(target, dep string, times []int64) *row {
	return &row{target: target, dep: dep, times: times}
}
