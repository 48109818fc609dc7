package dialect

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/retrytop/retrytop/model"
)

// A dialect that can be read through a Prometheus server says, per
// contract family its Translate produces, the PromQL that computes the
// same numbers there from its raw families (docs/prometheus.md, "Dialect
// queries"; each dialect's queries live in queries_<dialect>.go next to its
// mapping). The Translator combines the expressions of the dialects asked
// for into one query per flat series (Queries), and detects which dialects
// a server holds from its metric names (DetectQuery, DetectNames).

// QueryOptions parameterise a dialect's PromQL.
type QueryOptions struct {
	// By are the labels whose values name a retrytop target (job, or
	// namespace and job): every aggregation keeps them.
	By []string
	// Matchers are merged into every raw selector, without braces:
	// `job="checkout", env="prod"`; "" for none.
	Matchers string
	// Range is the evaluation step: counters are their increase since
	// the evaluation one Range earlier (see inc).
	Range time.Duration
	// Dialects are all the dialects queried together, so that one can
	// step aside where another supersedes it (Envoy where Istio reads the
	// same sidecar).
	Dialects []string
}

// Expr is one way a dialect computes one flat series of the contract on
// the server.
type Expr struct {
	// Name is the flat series: F for a counter or gauge family, F_bucket,
	// F_count or F_sum for a histogram family.
	Name string
	// PromQL is an instant vector with one series per raw series (raw
	// identity labels kept, as Translate keeps them), the dependency
	// label set as Translate sets it (empty for server-side families) and
	// the contract labels listed in Labels set. Counters are increases
	// over QueryOptions.Range; gauges are levels. Durations are seconds,
	// except the le label of F_bucket (see LeScale).
	PromQL string
	// Labels are the contract labels (outcome, reason, result,
	// result_class, priority; code, stage, http_response_status_code of
	// the service families) PromQL sets, to a value or to "" (removed);
	// the aggregation keeps exactly these, so raw labels of the same name
	// never leak into the contract's.
	Labels []string
	// LeScale multiplies the le bounds of F_bucket into seconds (0.001 for
	// milliseconds). PromQL cannot compute a label from a number, so the
	// reader applies it to the results (0 means 1).
	LeScale float64
}

// Querier is implemented by a dialect whose translation a Prometheus
// server can compute. A dialect without it cannot be read through
// Prometheus: Translator.Queries fails naming it.
type Querier interface {
	Exprs(QueryOptions) []Expr
}

// Query is one PromQL query of a refresh: one flat series of the
// contract, for every target, from the expressions of every dialect asked
// for, summed (max for policy settings and the emitter's own averages).
type Query struct {
	Name   string
	Gauge  bool // a level; otherwise an increase over the range
	PromQL string
	// LeScale: see Expr. Expressions of one _bucket series with different
	// scales (Envoy's milliseconds next to native seconds) are separate
	// queries whose results the reader adds up.
	LeScale  float64
	Dialects []string
}

// queryFamily is one family the queries read: its type, the contract labels
// besides dependency kept, and the aggregation of a gauge across replicas.
type queryFamily struct {
	name   string
	typ    model.MetricType
	labels []string
	agg    string
}

// queryFamilies are what a Prometheus server is asked for: the metric
// contract, the server-side families joined onto callers' rows, the
// dialect extension families (model/extensions.go) and the service-side
// shapes of the services view (model.ServiceFamilies), in query order.
var queryFamilies = []queryFamily{
	{model.MetricOriginals, model.Counter, []string{model.LabelPriority}, "sum"},
	{model.MetricAttempts, model.Counter, []string{model.LabelOutcome}, "sum"},
	{model.MetricRetries, model.Counter, nil, "sum"},
	{model.MetricRescued, model.Counter, nil, "sum"},
	{model.MetricBudgetDenied, model.Counter, nil, "sum"},
	{model.MetricAdmissionRejected, model.Counter, []string{model.LabelPriority, model.LabelReason}, "sum"},
	{model.MetricResults, model.Counter, []string{model.LabelPriority, model.LabelResult}, "sum"},
	{model.MetricAbandonedAttempts, model.Counter, nil, "sum"},
	{model.MetricLateSuccesses, model.Counter, nil, "sum"},
	{model.MetricNestedOperations, model.Counter, []string{model.LabelOuterDependency}, "sum"},
	{model.MetricHedges, model.Counter, nil, "sum"},
	{model.MetricHedgesWon, model.Counter, nil, "sum"},
	{model.MetricHedgesAbandoned, model.Counter, nil, "sum"},
	{model.MetricOperationAttempts, model.Counter, nil, "sum"},
	// Fleet totals: in-flight calls, admitted calls and budget add up
	// across replicas (a limit of 10 on 20 replicas admits 200).
	{model.MetricActiveCalls, model.Gauge, nil, "sum"},
	{model.MetricConcurrencyLimit, model.Gauge, nil, "sum"},
	{model.MetricPoolWait, model.Histogram, nil, "sum"},
	{model.MetricRequestDuration, model.Histogram, []string{model.LabelResultClass}, "sum"},
	{model.MetricAttemptDuration, model.Histogram, []string{model.LabelOutcome}, "sum"},
	{model.MetricBackoff, model.Histogram, nil, "sum"},
	{model.MetricBudgetBalance, model.Gauge, nil, "sum"},
	// Policy settings are per replica: summing them would be meaningless,
	// the largest configured value is shown.
	{model.MetricPolicyMaxAttempts, model.Gauge, nil, "max"},
	{model.MetricPolicyDeadline, model.Gauge, nil, "max"},
	// Server side: no dependency label, so "dependency" simply drops out
	// of the result's labels.
	{model.MetricServerReceived, model.Counter, nil, "sum"},
	{model.MetricServerServiceTime, model.Histogram, nil, "sum"},
	{model.MetricServerWorkAfterCancel, model.Counter, nil, "sum"},
	{model.MetricServerRequests, model.Counter, []string{model.LabelDeadline}, "sum"},
	// Dialect extensions.
	{model.MetricRetryLimitExceeded, model.Counter, nil, "sum"},
	{model.MetricRequestTimeouts, model.Counter, nil, "sum"},
	{model.MetricPendingCalls, model.Gauge, nil, "sum"},
	// An emitter's own moving average: a sum would be meaningless, the
	// worst replica's is shown.
	{model.MetricPoolWaitAverage, model.Gauge, nil, "max"},
	// Breakers and settings: the worst breaker of a fleet, a setting off
	// on any replica.
	{model.MetricBreakerState, model.Gauge, nil, "max"},
	{model.MetricSettingOff, model.Gauge, []string{model.LabelSetting}, "max"},
	// The services view (analysis.ServiceSignalsFor): the contract's
	// service families, then the promhttp and OpenTelemetry shapes, each
	// with the status or stage label analysis splits by. Like the server
	// families they have no dependency. In flight, slots, queue depth
	// and queue limit are fleet totals across the replicas of a target
	// (a replica with an unbounded queue makes the fleet's unbounded,
	// see the native expression); the oldest waiting request is the
	// oldest of any replica.
	{model.MetricServiceInFlight, model.Gauge, nil, "sum"},
	{model.MetricServiceSlots, model.Gauge, nil, "sum"},
	{model.MetricServiceQueueDepth, model.Gauge, nil, "sum"},
	{model.MetricServiceQueueLimit, model.Gauge, nil, "sum"},
	{model.MetricServiceQueueOldestAge, model.Gauge, nil, "max"},
	{model.MetricServiceQueueWait, model.Histogram, nil, "sum"},
	{model.MetricServiceCompleted, model.Counter, nil, "sum"},
	{model.MetricServiceErrorsInjected, model.Counter, nil, "sum"},
	{model.MetricServiceRejected, model.Counter, []string{model.LabelReason}, "sum"},
	{model.MetricServiceCancelled, model.Counter, []string{model.LabelStage}, "sum"},
	{model.MetricServiceResponses, model.Counter, []string{model.LabelCode}, "sum"},
	{model.MetricPromHTTPRequests, model.Counter, []string{model.LabelCode}, "sum"},
	{model.MetricPromHTTPDuration, model.Histogram, []string{model.LabelCode}, "sum"},
	{model.MetricPromHTTPInFlight, model.Gauge, nil, "sum"},
	{model.MetricOTelServerDuration, model.Histogram, []string{model.LabelOTelStatusCode}, "sum"},
	{model.MetricOTelServerActive, model.Gauge, nil, "sum"},
}

// flatFamily returns the family of a flat series name and its suffix.
func flatFamily(name string) (*queryFamily, string) {
	for i := range queryFamilies {
		f := &queryFamilies[i]
		if f.name == name && f.typ != model.Histogram {
			return f, ""
		}
		if f.typ == model.Histogram {
			for _, suf := range []string{"_bucket", "_count", "_sum"} {
				if name == f.name+suf {
					return f, suf
				}
			}
		}
	}
	return nil, ""
}

// Queries returns the queries of one refresh for the named dialects (in
// the translator's detection order, whatever the order of names): one per
// flat series name any of them computes (two for a _bucket series whose
// expressions use different le scales). A name that is not one of the
// translator's dialects, or a dialect without PromQL, is an error naming
// it.
func (t *Translator) Queries(names []string, opts QueryOptions) ([]Query, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("no dialect to query")
	}
	for _, n := range names {
		if err := t.Check(n); err != nil || n == "" {
			return nil, unknown(n, t.entries)
		}
	}
	var ds []Dialect
	for _, e := range t.entries {
		if slices.Contains(names, e.name) {
			ds = append(ds, e.new())
		}
	}
	return buildQueries(ds, opts)
}

// HasQueries reports whether the named dialect of the translator has
// PromQL (implements Querier).
func (t *Translator) HasQueries(name string) bool {
	d, err := t.newDialect(name)
	if err != nil {
		return false
	}
	_, ok := d.(Querier)
	return ok
}

// buildQueries combines the dialects' expressions.
func buildQueries(ds []Dialect, opts QueryOptions) ([]Query, error) {
	if len(opts.By) == 0 {
		return nil, fmt.Errorf("no grouping label (--by)")
	}
	for _, l := range opts.By {
		if !validLabelName(l) {
			return nil, fmt.Errorf("%q is not a label name", l)
		}
	}
	if opts.Range <= 0 {
		return nil, fmt.Errorf("range must be positive")
	}
	var missing []string
	for _, d := range ds {
		if _, ok := d.(Querier); !ok {
			missing = append(missing, d.Name())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("dialect %s has no PromQL queries: it can only be read by scraping its targets", strings.Join(missing, ", "))
	}
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = d.Name()
	}
	opts.Dialects = names
	type part struct {
		Expr
		dialect string
	}
	byName := map[string][]part{}
	q := newQctx(opts)
	for _, d := range ds {
		aside := customAside(d, ds)
		for _, e := range d.(Querier).Exprs(opts) {
			if aside != "" {
				ms := "__name__=~" + quote(aside)
				if opts.Matchers != "" {
					ms += ", " + opts.Matchers
				}
				e.PromQL = q.unlessHas(e.PromQL, "{"+ms+"}")
			}
			if f, _ := flatFamily(e.Name); f == nil {
				return nil, fmt.Errorf("dialect %s: %q is not a flat series of a family read through Prometheus", d.Name(), e.Name)
			}
			for _, l := range e.Labels {
				if !slices.Contains(familyOf(e.Name).labels, l) {
					return nil, fmt.Errorf("dialect %s: %s has no contract label %q", d.Name(), e.Name, l)
				}
			}
			if e.LeScale == 0 {
				e.LeScale = 1
			}
			byName[e.Name] = append(byName[e.Name], part{e, d.Name()})
		}
	}
	var out []Query
	for _, f := range queryFamilies {
		flat := []string{f.name}
		if f.typ == model.Histogram {
			flat = []string{f.name + "_bucket", f.name + "_count", f.name + "_sum"}
		}
		for _, name := range flat {
			parts := byName[name]
			if len(parts) == 0 {
				continue
			}
			// One query per le scale (only _bucket expressions differ).
			var scales []float64
			for _, p := range parts {
				if !slices.Contains(scales, p.LeScale) {
					scales = append(scales, p.LeScale)
				}
			}
			for _, sc := range scales {
				var es []Expr
				var from []string
				for _, p := range parts {
					if p.LeScale == sc {
						es = append(es, p.Expr)
						if !slices.Contains(from, p.dialect) {
							from = append(from, p.dialect)
						}
					}
				}
				group := append(append([]string{}, opts.By...), model.LabelDependency)
				out = append(out, Query{
					Name:     name,
					Gauge:    f.typ == model.Gauge,
					PromQL:   combine(f.agg, group, es, strings.HasSuffix(name, "_bucket") && f.typ == model.Histogram),
					LeScale:  sc,
					Dialects: from,
				})
			}
		}
	}
	return out, nil
}

// customAside returns, for a built-in dialect d queried beside custom
// mappings that map families d reads, a regular expression of those
// families' flat names ("" when there is none): d's series are kept only
// for targets without them, as Translate sets d aside where a mapping reads
// the same families.
func customAside(d Dialect, ds []Dialect) string {
	if _, ok := d.(*custom); ok {
		return ""
	}
	var res []string
	for _, o := range ds {
		c, ok := o.(*custom)
		if !ok {
			continue
		}
		for _, s := range c.Signals {
			for _, n := range []string{s.Metric, s.Metric + "_bucket", s.Metric + "_count", s.Metric + "_sum"} {
				if readsAny(d.Families(), []string{n}) && !slices.Contains(res, regexp.QuoteMeta(n)) {
					res = append(res, regexp.QuoteMeta(n))
				}
			}
		}
	}
	return strings.Join(res, "|")
}

func familyOf(flat string) *queryFamily {
	f, _ := flatFamily(flat)
	return f
}

// combine aggregates the expressions of one flat series: `agg by (group,
// contract labels[, le]) (expr)`. Several expressions are first made
// disjoint with a retrytop_part label (so that `or` keeps every series;
// the aggregation drops the label again) and given every contract label
// of the union, "" where they do not set it.
func combine(agg string, group []string, es []Expr, le bool) string {
	var union []string
	for _, e := range es {
		for _, l := range e.Labels {
			if !slices.Contains(union, l) {
				union = append(union, l)
			}
		}
	}
	// Keep the family's label order.
	if fam := familyOf(es[0].Name); fam != nil {
		union = slices.DeleteFunc(slices.Clone(fam.labels), func(l string) bool { return !slices.Contains(union, l) })
	}
	by := append(append([]string{}, group...), union...)
	if le {
		by = append(by, "le")
	}
	if len(es) == 1 {
		return agg + " by (" + groupList(by) + ") (" + es[0].PromQL + ")"
	}
	parts := make([]string, len(es))
	for i, e := range es {
		p := e.PromQL
		for _, l := range union {
			if !slices.Contains(e.Labels, l) {
				p = setLabel(p, l, "")
			}
		}
		parts[i] = setLabel(p, partLabel, strconv.Itoa(i+1))
	}
	return agg + " by (" + groupList(by) + ") (" + strings.Join(parts, " or ") + ")"
}

// partLabel tells apart the expressions of one query before they are
// aggregated.
const partLabel = "retrytop_part"

// groupList joins label names without duplicates, in order.
func groupList(labels []string) string {
	seen := make(map[string]bool, len(labels))
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return strings.Join(out, ", ")
}

func validLabelName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// DetectQuery is the PromQL that tells which raw families of the
// translator's dialects a server holds, per target: `count by (__name__,
// <By>) ({__name__=~"<every family a dialect reads>", <Matchers>})`. Feed
// each target's names to DetectNames.
func (t *Translator) DetectQuery(opts QueryOptions) string {
	var names, prefixes []string
	for _, e := range t.entries {
		for _, n := range e.proto.Families() {
			if p, ok := strings.CutSuffix(n, "*"); ok {
				prefixes = append(prefixes, regexp.QuoteMeta(p)+".*")
			} else if !slices.Contains(names, n) {
				names = append(names, regexp.QuoteMeta(n))
			}
		}
	}
	// Histograms and summaries are listed by base name.
	re := "(?:" + strings.Join(names, "|") + ")(?:_bucket|_count|_sum)?"
	for _, p := range prefixes {
		re += "|" + p
	}
	sel := `__name__=~` + strconv.Quote(re)
	if opts.Matchers != "" {
		sel += ", " + opts.Matchers
	}
	return "count by (" + groupList(append([]string{"__name__"}, opts.By...)) + ") ({" + sel + "})"
}

// DetectNames returns the dialects a target holding the named series
// (flat names, as a server lists them) is read with, in detection order:
// the dialects' Detect rules on families of those names, a superseded
// dialect left out, as Translate's detection does.
func (t *Translator) DetectNames(names []string) []string {
	fams := make([]model.Family, 0, 2*len(names))
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			fams = append(fams, model.Family{Name: n})
		}
	}
	for _, n := range names {
		add(n)
		for _, suf := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(n, suf); ok {
				add(b)
			}
		}
	}
	var found []Dialect
	var sup []string
	for _, e := range t.entries {
		if e.proto.Detect(fams) {
			found = append(found, e.proto)
			if s, ok := e.proto.(interface{ Supersedes() []string }); ok {
				sup = append(sup, s.Supersedes()...)
			}
		}
	}
	st := &targetState{dialects: slices.DeleteFunc(found, func(d Dialect) bool { return slices.Contains(sup, d.Name()) })}
	ds, _ := setAside(st, fams, nil)
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name()
	}
	return out
}

// qctx builds one dialect's PromQL for some QueryOptions.
type qctx struct {
	QueryOptions
	rng string
}

func newQctx(opts QueryOptions) qctx {
	return qctx{QueryOptions: opts, rng: PromDuration(opts.Range)}
}

// sel is the selector of a raw series: name{extra, Matchers}. A name that
// is not a classic metric name (a custom mapping's "acme.calls") is
// matched as {__name__="acme.calls", ...}.
func (q qctx) sel(name string, extra ...string) string {
	var ms []string
	if !validMetricName(name) {
		ms = append(ms, "__name__="+quote(name))
		name = ""
	}
	for _, e := range extra {
		if e != "" {
			ms = append(ms, e)
		}
	}
	if q.Matchers != "" {
		ms = append(ms, q.Matchers)
	}
	if len(ms) == 0 {
		return name
	}
	return name + "{" + strings.Join(ms, ", ") + "}"
}

func validMetricName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// inc is the increase of name{extra, Matchers} since the evaluation one
// step (QueryOptions.Range) earlier, counted the way a scraper counts it
// (docs/prometheus.md, "Counting like a scraper"); per raw series
//
//	S - S offset step      when S did not fall: what it counted since
//	S                      when it fell (a reset: counted in full) or had
//	                       no sample a step ago (a new series: from 0),
//	                       if its target was up a step ago
//
// Summed over consecutive steps the increases telescope to the last
// sample's value less the first's, exactly what a scraper's counter
// gives, whatever the spacing of the server's scrapes: no extrapolation
// (increase() stretches towards the range's edges and divides a series
// younger than the range by the whole range: a replica scraped for 20 s
// of a 1 m range read a third of its rate) and no smoothing lag (a rate
// over a range describes its middle). "A step ago" reaches back over
// failed scrapes (CounterBridge): the previous sample is the last one
// before the evaluation a step ago, and the target counts as up then if
// it was up at any time in the bridge. A target that was not is new, or
// back from a long outage: its values are a baseline, as a scraper's
// first scrape is (the events of such an outage are lost).
func (q qctx) inc(name string, extra ...string) string { return q.incSel(q.sel(name, extra...)) }

// incSel is inc of a whole selector.
func (q qctx) incSel(s string) string { return CounterExpr(s, q.Range) }

// CounterExpr is the PromQL every dialect counts a counter selector with:
// its increase since the evaluation one step earlier (see inc). Each
// selector is written as few times as the logic allows: the server parses
// and evaluates every copy, and a dialect's query repeats it per part.
func CounterExpr(s string, step time.Duration) string {
	e := PromDuration(step)
	l := PromDuration(CounterBridge(step))
	return "(" + s + " - (last_over_time(" + s + "[" + l + "] offset " + e + ") <= " + s + ") or " +
		s + " and on (instance) (max_over_time(up[" + l + "] offset " + e + ") == 1))"
}

// CounterBridge is how far back CounterExpr looks for a series' previous
// sample, and for its target having been up: a failed scrape makes
// Prometheus mark the target's series stale, so "S offset step" right
// after one is absent and its increase was lost (the direct scraper
// compares with the sample before the failure and keeps it). Over a gap
// up to this long the increase is counted from the last sample before
// it; a longer outage is a baseline, as before. One minute, or two steps
// when they are longer.
func CounterBridge(step time.Duration) time.Duration {
	return max(time.Minute, 2*step)
}

// target lists the labels that identify one scrape target on the server:
// the grouping labels and instance. Conditions Translate checks per scrape
// (does this exposition have family F?) are checked per target with them.
func (q qctx) target() string {
	return groupList(append(append([]string{}, q.By...), "instance"))
}

// unlessHas keeps the series of e whose target has no series of sel.
func (q qctx) unlessHas(e, sel string) string {
	return "(" + e + ") unless on (" + q.target() + ") " + sel
}

// queried reports whether the named dialect is queried too.
func (q qctx) queried(name string) bool { return slices.Contains(q.Dialects, name) }

// setDep sets dependency to the value of a raw label (the selector has
// made sure it is not empty).
func setDep(e, label string) string {
	return `label_replace(` + e + `, "dependency", "$1", ` + strconv.Quote(label) + `, "(.*)")`
}

// setLabel sets a label to a constant ("" removes it).
func setLabel(e, label, value string) string {
	return `label_replace(` + e + `, ` + strconv.Quote(label) + `, ` + strconv.Quote(replacement(value)) + `, "", "")`
}

// or joins alternatives whose series are disjoint.
func or(es ...string) string {
	var out []string
	for _, e := range es {
		if e != "" {
			out = append(out, e)
		}
	}
	return strings.Join(out, " or ")
}

// scaled multiplies a vector by a unit factor (1: unchanged).
func scaled(e string, scale float64) string {
	if scale == 0 || scale == 1 {
		return e
	}
	return "(" + e + ") * " + strconv.FormatFloat(scale, 'g', -1, 64)
}

// quote renders a matcher value.
func quote(s string) string { return strconv.Quote(s) }

// alt is an anchored alternation of literal values for =~.
func alt(vs ...string) string {
	qs := make([]string, len(vs))
	for i, v := range vs {
		qs[i] = regexp.QuoteMeta(v)
	}
	return strings.Join(qs, "|")
}

// histExprs are the three flat series of a histogram family computed from
// a raw histogram (or, when summary is set, a raw summary: only the +Inf
// bucket, its count and sum, as Translate's countSum) named raw, each
// wrapped by wrap (dependency and contract labels) and its duration unit
// scaled into seconds.
func (q qctx) histExprs(family, raw string, summary bool, scale float64, labels []string, wrap func(mk func(extra string) string) string) []Expr {
	bucket := wrap(func(m string) string {
		b := q.inc(raw+"_bucket", m)
		if summary {
			// A histogram's own +Inf bucket wins over its count.
			b = or(b, setLabel(q.inc(raw+"_count", m), "le", "+Inf"))
		}
		return b
	})
	return []Expr{
		{Name: family + "_bucket", PromQL: bucket, Labels: labels, LeScale: scale},
		{Name: family + "_count", PromQL: wrap(func(m string) string { return q.inc(raw+"_count", m) }), Labels: labels},
		{Name: family + "_sum", PromQL: wrap(func(m string) string { return scaled(q.inc(raw+"_sum", m), scale) }), Labels: labels},
	}
}

// PromDuration renders d as a PromQL duration (1m, 90s, 1500ms).
func PromDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// join joins non-empty matcher lists.
func join(ms ...string) string {
	var out []string
	for _, m := range ms {
		if m != "" {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}
