package dialect

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// contractLabels are the label names the contract gives a meaning to. A raw
// label with one of these names that a dialect keeps is renamed with the
// prefix "src_", so that it can never be read as the contract's label.
var contractLabels = map[string]bool{
	model.LabelDependency:  true,
	model.LabelPriority:    true,
	model.LabelOutcome:     true,
	model.LabelReason:      true,
	model.LabelResult:      true,
	model.LabelResultClass: true,
	"le":                   true,
	"quantile":             true,
}

// raw indexes a snapshot's families by name.
type raw map[string]*model.Family

func index(fams []model.Family) raw {
	r := make(raw, len(fams))
	for i := range fams {
		r[fams[i].Name] = &fams[i]
	}
	return r
}

// has reports whether any of the names is a family of the snapshot.
func (r raw) has(names ...string) bool {
	for _, n := range names {
		if r[n] != nil {
			return true
		}
	}
	return false
}

// first returns the first of the names that is a family, or nil.
func (r raw) first(names ...string) *model.Family {
	for _, n := range names {
		if f := r[n]; f != nil {
			return f
		}
	}
	return nil
}

// samples returns the samples of the named family (nil when absent).
func (r raw) samples(name string) []model.Sample {
	if f := r[name]; f != nil {
		return f.Samples
	}
	return nil
}

// hasPrefix reports whether some family name starts with prefix.
func (r raw) hasPrefix(prefix string) bool {
	for n := range r {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// scalar is the value of a counter, gauge or untyped sample, or the count of
// a histogram or summary sample.
func scalar(f *model.Family, s *model.Sample) float64 {
	switch f.Type {
	case model.Histogram, model.Summary:
		return s.Count
	}
	return s.Value
}

// valid reports whether v can be stored as a counter or gauge value.
func valid(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// relabel returns the labels of a raw series as an output series of
// dependency dep: the labels named in drop removed, raw labels that collide
// with contract label names renamed src_<name>, and dependency set.
func relabel(ls model.Labels, dep string, drop ...string) model.Labels {
	out := make(model.Labels, 0, len(ls)+1)
next:
	for _, l := range ls {
		for _, d := range drop {
			if l.Name == d {
				continue next
			}
		}
		if contractLabels[l.Name] {
			l.Name = "src_" + l.Name
		}
		out = append(out, l)
	}
	out = append(out, model.Label{Name: model.LabelDependency, Value: dep})
	out.Sort()
	return out
}

// out accumulates a translated snapshot. Series with the same name and
// labels are added together (counters, gauges, histograms with the same
// bucket bounds), which is how several raw counters of one identity become
// one contract counter.
type out struct {
	fams  map[string]*model.Family
	index map[string]map[string]int // family -> label key -> sample index
	buf   []byte
	// memo, when set, is the dialect's record of its previous scrape's
	// slot calls; while every call so far repeats that scrape's (synced),
	// each call's sample is where it was then and index is not kept.
	memo   *slotMemo
	synced bool
	// slab is the array the translation's histogram buckets are cut from
	// (bucketsOf), nbuckets how many were cut: every sample of a snapshot
	// lives as long as the snapshot, so one allocation serves them all.
	slab     []model.Bucket
	nbuckets int
	// samples is the array the families' samples are cut from when the
	// memo knows their sizes (samplesOf), nsamples how many were cut.
	samples  []model.Sample
	nsamples int
}

func newOut() *out {
	return &out{fams: map[string]*model.Family{}, index: map[string]map[string]int{}}
}

// newOutMemo is newOut for a dialect that keeps m between one target's
// scrapes.
func newOutMemo(m *slotMemo) *out {
	o := newOut()
	if !m.off {
		m.next()
		o.memo, o.synced = m, true
		if n := len(m.spare); n > 0 {
			o.samples, o.slab = m.spare[n-1].Samples[:0], m.spare[n-1].Buckets[:0]
			m.spare[n-1] = model.FamilyArrays{}
			m.spare = m.spare[:n-1]
		}
	}
	return o
}

// slotMemo is a positional cache of out.slot for one target: a target's
// series come in the same order scrape after scrape, so a translation
// makes the same calls in the same order. As long as every call repeats
// the previous scrape's (same family, type and labels), the output so far
// has the same series in the same places, so the call's sample and
// whether it is new are known without building its label key and looking
// it up (a third of translating an Envoy target). At the first
// call that differs, the index is built from the series made so far and
// the rest of the scrape is looked up as before.
// TestEnvoyCachesEqualUncached compares it with out without it over churn.
type slotMemo struct {
	prev, cur []slotCall
	off       bool // no memo (the reference in tests)
	hits      int  // calls answered from prev
	// sizes is each family's number of series at the previous scrape:
	// its samples are allocated at that size once instead of grown by
	// doubling (a fifth of what loading a recording allocated).
	sizes map[string]int
	// buckets is how many histogram buckets the previous scrape's
	// translation made: the next one's are cut from one array that size;
	// samples likewise for its families' samples.
	buckets, samples int
	// lent are the arrays of the last translations (at most maxLent),
	// spare those given back (release) for the next translations to cut
	// from.
	lent, spare []model.FamilyArrays
}

// maxLent bounds the translations a memo remembers lending: a caller that
// never gives them back (a live scrape's snapshot may be kept) costs
// nothing but these entries.
const maxLent = 16

// maxSpare bounds the arrays a memo keeps given back: as many as a
// loader translates ahead of the store that gives them back.
const maxSpare = 4

// lend remembers the arrays of a translation just made.
func (m *slotMemo) lend(a model.FamilyArrays) {
	if cap(a.Samples) == 0 && cap(a.Buckets) == 0 {
		return
	}
	if len(m.lent) == maxLent {
		m.lent = slices.Delete(m.lent, 0, 1) // the oldest
	}
	m.lent = append(m.lent, a)
}

// release takes back the arrays of the translation whose families fams
// are, which nothing reads any longer: a later translation cuts its own
// from them. Families of any other making are left alone.
func (m *slotMemo) release(fams []model.Family) {
	for k, a := range m.lent {
		if a.UsedBy(fams) {
			m.lent = slices.Delete(m.lent, k, k+1)
			if len(m.spare) < maxSpare {
				m.spare = append(m.spare, a)
			}
			return
		}
	}
}

type slotCall struct {
	name  string
	typ   model.MetricType
	ls    model.Labels
	i     int
	fresh bool
}

func (m *slotMemo) next() {
	clear(m.prev)
	m.prev, m.cur = m.cur, m.prev[:0]
}

func (o *out) family(name string, typ model.MetricType, help string) *model.Family {
	f := o.fams[name]
	if f == nil {
		f = &model.Family{Name: name, Type: typ, Help: help}
		if o.memo != nil {
			if n := o.memo.sizes[name]; n > 0 {
				f.Samples = o.samplesOf(n)
			}
		}
		o.fams[name] = f
		if !o.synced {
			o.index[name] = map[string]int{}
		}
	}
	return f
}

// slot returns the sample of ls in family name, creating it; fresh reports
// whether it was created.
func (o *out) slot(name string, typ model.MetricType, ls model.Labels) (*model.Sample, bool) {
	f := o.family(name, typ, helpOf(name))
	if o.synced {
		if n := len(o.memo.cur); n < len(o.memo.prev) {
			p := o.memo.prev[n]
			if p.name == name && p.typ == typ && sameLabels(p.ls, ls) && (p.fresh && p.i == len(f.Samples) || !p.fresh && p.i < len(f.Samples)) {
				if p.fresh {
					f.Samples = append(f.Samples, model.Sample{Labels: ls})
				}
				o.memo.hits++
				o.memo.cur = append(o.memo.cur, slotCall{name: name, typ: typ, ls: ls, i: p.i, fresh: p.fresh})
				return &f.Samples[p.i], p.fresh
			}
		}
		o.unsync()
	}
	o.buf = ls.AppendKey(o.buf[:0])
	i, ok := o.index[name][string(o.buf)]
	if !ok {
		i = len(f.Samples)
		o.index[name][string(o.buf)] = i
		f.Samples = append(f.Samples, model.Sample{Labels: ls})
	}
	if o.memo != nil {
		o.memo.cur = append(o.memo.cur, slotCall{name: name, typ: typ, ls: ls, i: i, fresh: !ok})
	}
	return &f.Samples[i], !ok
}

// unsync builds the index of the series made so far: a call differed from
// the previous scrape's.
func (o *out) unsync() {
	o.synced = false
	for name, f := range o.fams {
		idx := make(map[string]int, len(f.Samples))
		for i := range f.Samples {
			o.buf = f.Samples[i].Labels.AppendKey(o.buf[:0])
			idx[string(o.buf)] = i
		}
		o.index[name] = idx
	}
}

// sameLabels is ls.Equal(o), at once when both are the same slice (the
// cluster labels' memo returns the previous scrape's).
func sameLabels(a, b model.Labels) bool {
	if len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) {
		return true
	}
	return a.Equal(b)
}

// counter adds v to the counter series name{ls}. NaN and infinite values
// are skipped: they are absent, not numbers.
func (o *out) counter(name string, ls model.Labels, v float64) {
	o.scalar(name, model.Counter, ls, v)
}

// seed creates the counter series name{ls, label=v} at 0 for every value
// that has none yet. Emitters create a series on its first event (a new
// status code, outcome or kind); the contract series they are summed into
// exist from the moment their family does, at 0, which is exact (nothing
// happened yet) and lets the first events count instead of being taken as
// the series' starting point.
func (o *out) seed(name string, ls model.Labels, label string, values ...string) {
	for _, v := range values {
		o.slot(name, model.Counter, ls.With(label, v))
	}
}

// allOutcomes and allResults are the contract's label values.
var (
	allOutcomes = []string{model.OutcomeSuccess, model.OutcomeTemporaryError, model.OutcomePermanentError, model.OutcomeTimeout, model.OutcomeCancelled}
	allResults  = []string{model.ResultSuccess, model.ResultCapacityRejected, model.ResultBudgetExhausted,
		model.ResultDeadlineExhausted, model.ResultProviderError, model.ResultPermanentError, model.ResultCancelled}
)

// gauge adds v to the gauge series name{ls}.
func (o *out) gauge(name string, ls model.Labels, v float64) {
	o.scalar(name, model.Gauge, ls, v)
}

func (o *out) scalar(name string, typ model.MetricType, ls model.Labels, v float64) {
	o.scalarAt(name, typ, ls, v, 0)
}

// counterAt is counter for a raw series with a created timestamp (0:
// unknown).
func (o *out) counterAt(name string, ls model.Labels, v float64, created int64) {
	o.scalarAt(name, model.Counter, ls, v, created)
}

// counterOf is counter for a part that carries its own sample's created
// timestamp and Baseline mark (merging dialects' outputs).
func (o *out) counterOf(name string, ls model.Labels, src *model.Sample) {
	if s := o.scalarAt(name, model.Counter, ls, src.Value, src.CreatedMs); s != nil && src.Baseline {
		s.Baseline = true
	}
}

// derived adds the guarded difference plus - minus (see guard.diff) to the
// counter series name{ls}; key and keyLs name it in the guard. A difference
// first derived on a target the dialect already translated is marked
// Baseline: one side may have appeared beside an older other (an
// emitter's late series), and its first value would hold that side's
// history.
func (o *out) derived(name string, ls model.Labels, g *guard, key string, keyLs model.Labels, plus, minus float64) {
	v, first := g.diffFirst(key, keyLs, plus, minus)
	if s := o.scalarAt(name, model.Counter, ls, v, 0); s != nil && first {
		s.Baseline = true
	}
}

func (o *out) scalarAt(name string, typ model.MetricType, ls model.Labels, v float64, created int64) *model.Sample {
	if !valid(v) {
		return nil
	}
	s, fresh := o.slot(name, typ, ls)
	s.Value += v
	s.CreatedMs = addCreated(s.CreatedMs, created, fresh)
	return s
}

// addCreated is the created timestamp of a sum of series: the earliest of
// its parts, unknown (0) as soon as one part's is.
func addCreated(cur, part int64, fresh bool) int64 {
	if fresh {
		return part
	}
	if cur == 0 || part == 0 {
		return 0
	}
	return min(cur, part)
}

// histogram adds a raw histogram sample to name{ls}, its bucket bounds and
// sum multiplied by scale (0.001 turns milliseconds into seconds; 1 keeps
// them). A sample whose bounds differ from the series' first one is
// dropped: buckets of different ladders cannot be added.
func (o *out) histogram(name string, ls model.Labels, src *model.Sample, scale float64) {
	if scale == 0 {
		scale = 1
	}
	s, fresh := o.slot(name, model.Histogram, ls)
	s.CreatedMs = addCreated(s.CreatedMs, src.CreatedMs, fresh)
	if fresh {
		s.Buckets = o.bucketsOf(len(src.Buckets))
		for i, b := range src.Buckets {
			s.Buckets[i] = model.Bucket{UpperBound: scaleBound(b.UpperBound, scale), Count: b.Count}
		}
		s.Count, s.Sum = src.Count, src.Sum*scale
		return
	}
	if len(s.Buckets) != len(src.Buckets) {
		return
	}
	for i, b := range src.Buckets {
		if scaleBound(b.UpperBound, scale) != s.Buckets[i].UpperBound {
			return
		}
	}
	for i, b := range src.Buckets {
		s.Buckets[i].Count += b.Count
	}
	s.Count += src.Count
	s.Sum += src.Sum * scale
}

// bucketsOf returns n buckets for one sample, cut from the translation's
// slab (capped: an append never reaches the next sample's), which is
// the previous scrape's number of buckets in all, or at least 256. A slab
// that runs out is followed by a whole one, not the rest: it is the one
// given back to a later translation (slotMemo.release), which must fit.
func (o *out) bucketsOf(n int) []model.Bucket {
	if cap(o.slab)-len(o.slab) < n {
		size := max(n, 256)
		if o.memo != nil {
			size = max(size, o.memo.buckets)
		}
		o.slab = make([]model.Bucket, 0, size)
	}
	at := len(o.slab)
	o.slab = o.slab[:at+n]
	o.nbuckets += n
	return o.slab[at : at+n : at+n]
}

// samplesOf returns an empty slice of capacity n for one family's
// samples, cut from the translation's array (capped: an append past n
// moves the family's samples out of it), which is the previous scrape's
// number of samples in all; whole again when it runs out, as bucketsOf.
func (o *out) samplesOf(n int) []model.Sample {
	if cap(o.samples)-len(o.samples) < n {
		o.samples = make([]model.Sample, 0, max(n, o.memo.samples))
	}
	at := len(o.samples)
	o.samples = o.samples[:at+n]
	o.nsamples += n
	return o.samples[at : at : at+n]
}

// countSum adds a histogram without buckets (only +Inf) made of an
// observation count and a sum, e.g. a Prometheus summary's _count/_sum or
// a pair of counters: quantiles stay absent, the mean is exact.
func (o *out) countSum(name string, ls model.Labels, count, sum float64) {
	if !valid(count) {
		return
	}
	s, fresh := o.slot(name, model.Histogram, ls)
	if fresh {
		s.Buckets = []model.Bucket{{UpperBound: math.Inf(+1)}}
		s.Sum = 0
	}
	if len(s.Buckets) != 1 {
		return
	}
	s.Buckets[0].Count += count
	s.Count += count
	s.Sum += sum // NaN stays NaN: an absent sum
}

func scaleBound(b, scale float64) float64 {
	if math.IsInf(b, 0) {
		return b
	}
	return b * scale
}

// empty reports whether nothing was emitted.
func (o *out) empty() bool { return len(o.fams) == 0 }

// families returns the accumulated families sorted by name.
func (o *out) families() []model.Family {
	names := make([]string, 0, len(o.fams))
	for n := range o.fams {
		names = append(names, n)
	}
	sort.Strings(names)
	fams := make([]model.Family, 0, len(names))
	for _, n := range names {
		fams = append(fams, *o.fams[n])
	}
	if o.memo != nil {
		if o.memo.sizes == nil {
			o.memo.sizes = make(map[string]int, len(names))
		}
		total := 0
		for _, n := range names {
			o.memo.sizes[n] = len(o.fams[n].Samples)
			total += len(o.fams[n].Samples)
		}
		o.memo.buckets, o.memo.samples = o.nbuckets, total
		o.memo.lend(model.FamilyArrays{Samples: o.samples, Buckets: o.slab})
	}
	return fams
}

// snapshot wraps the families as a snapshot of the same target and time.
func (o *out) snapshot(src *model.Snapshot) *model.Snapshot {
	return &model.Snapshot{Target: src.Target, Time: src.Time, Families: o.families()}
}

// guard keeps counters derived by subtraction monotonic. A difference of
// two counters read from one exposition can dip for a moment (a retry
// counted before its attempt, a scrape that reads the two counters a few
// microseconds apart); analysis would read any dip as a counter reset and
// count the whole value again. diff holds the previous value through such a
// dip; when the minuend itself went down the emitter restarted, and the
// new, smaller value passes so that the reset is seen as one.
type guard struct {
	last map[string]guardEntry
	gen  uint64
	buf  []byte
	// clusters remembers envoyCluster's results scrape to scrape, slots
	// the translation's series.
	clusters labelMemo
	slots    slotMemo
	// completed and tcp are envoyTCPClusters' maps, reused scrape to
	// scrape.
	completed, tcp map[string]bool
	// tcpPrev are the clusters the previous scrape read as TCP
	// (envoyLateHTTP).
	tcpPrev map[string]bool
}

// labelMemo is a positional cache of a pure function of a raw series'
// labels (envoyCluster) for one target. A target lists its series in the
// same order scrape after scrape, so each call compares its labels with
// those of the call at the same place in the previous scrape (or the one
// after it, for a series gone) and, when equal, returns that call's result
// instead of relabelling (allocating and sorting) again; translating was a
// sixth of loading a recording. Any other call is computed and
// remembered. Results are shared between scrapes and never modified (With
// and Without copy). TestEnvoyCachesEqualUncached compares it with the
// function over churn.
type labelMemo struct {
	prev, cur []memoCall
	pos       int  // the place in prev the next call is compared with
	off       bool // every call computed (the reference in tests)
	hits      int  // calls answered from prev
}

type memoCall struct {
	in, out model.Labels
	ok      bool
}

// next starts a scrape: the calls remembered become the previous ones.
func (m *labelMemo) next() {
	clear(m.prev) // let the older scrape's labels go
	m.prev, m.cur, m.pos = m.cur, m.prev[:0], 0
}

func (m *labelMemo) get(in model.Labels, f func(model.Labels) (model.Labels, bool)) (model.Labels, bool) {
	if m.off {
		return f(in)
	}
	for j := m.pos; j < len(m.prev) && j <= m.pos+1; j++ {
		if c := m.prev[j]; sameLabels(c.in, in) {
			m.pos = j + 1
			m.hits++
			m.cur = append(m.cur, c)
			return c.out, c.ok
		}
	}
	out, ok := f(in)
	// A copy: the parser may reuse the input's memory for a later scrape.
	m.cur = append(m.cur, memoCall{in: slices.Clone(in), out: out, ok: ok})
	return out, ok
}

type guardEntry struct {
	out, plus float64
	gen       uint64
}

// begin starts a scrape: entries not used since the previous one are
// forgotten by end.
func (g *guard) begin() {
	if g.last == nil {
		g.last = map[string]guardEntry{}
	}
	g.gen++
	g.clusters.next()
}

// end forgets the series that were not derived in this scrape.
func (g *guard) end() {
	for k, e := range g.last {
		if e.gen != g.gen {
			delete(g.last, k)
		}
	}
}

// diff returns plus - minus for the derived series name{ls}, never below 0
// and never below its previous value unless plus went down.
func (g *guard) diff(name string, ls model.Labels, plus, minus float64) float64 {
	v, _ := g.diffFirst(name, ls, plus, minus)
	return v
}

// diffFirst is diff; first is true when the series is derived for the
// first time on a target whose earlier scrapes the guard saw.
func (g *guard) diffFirst(name string, ls model.Labels, plus, minus float64) (float64, bool) {
	if g.last == nil {
		g.begin()
	}
	v := plus - minus
	if v < 0 || math.IsNaN(v) {
		v = 0
	}
	g.buf = append(g.buf[:0], name...)
	g.buf = append(g.buf, 0xff)
	g.buf = ls.AppendKey(g.buf)
	e, ok := g.last[string(g.buf)]
	if ok && plus >= e.plus && v < e.out {
		v = e.out
	}
	g.last[string(g.buf)] = guardEntry{out: v, plus: plus, gen: g.gen}
	return v, !ok && g.gen > 1
}

// helpOf is the HELP text of a contract (or extension) family.
func helpOf(name string) string {
	switch name {
	case model.MetricOriginals:
		return "Logical operations started (translated by a retrytop dialect)."
	case model.MetricAttempts:
		return "Calls that went to the provider (translated by a retrytop dialect)."
	case model.MetricRetries:
		return "Attempts after the first (translated by a retrytop dialect)."
	case model.MetricRescued:
		return "Originals that succeeded after a retry (translated by a retrytop dialect)."
	case model.MetricBudgetDenied:
		return "Retries refused by a retry budget or retry circuit breaker (translated by a retrytop dialect)."
	case model.MetricAdmissionRejected:
		return "Calls refused locally before reaching the provider (translated by a retrytop dialect)."
	case model.MetricResults:
		return "Final result of each original (translated by a retrytop dialect)."
	case model.MetricRetryLimitExceeded:
		return "Originals that wanted a retry after the last allowed attempt (translated by a retrytop dialect)."
	case model.MetricRequestTimeouts:
		return "Originals ended by their whole-request deadline (translated by a retrytop dialect)."
	}
	return "Translated by a retrytop dialect."
}

// statusClass is the class digit of an HTTP status or class label value
// ("503" -> '5', "5xx" -> '5', "5" -> '5'); 0 when unknown.
func statusClass(v string) byte {
	if v == "" || v[0] < '1' || v[0] > '5' {
		return 0
	}
	return v[0]
}

// httpOutcome classifies the final HTTP status of one attempt as the
// contract's outcome: below 500 except 429 is an answer (success), 429 and
// 5xx are temporary errors.
func httpOutcome(status string) string {
	if status == "429" {
		return model.OutcomeTemporaryError
	}
	switch statusClass(status) {
	case '1', '2', '3', '4':
		return model.OutcomeSuccess
	case '5':
		return model.OutcomeTemporaryError
	}
	return ""
}

// grpcOutcome classifies a gRPC status name (or number) as an attempt
// outcome, following docs/metrics.md: an answer the caller accepts
// (including application errors such as NOT_FOUND) is success; codes gRPC
// itself calls retryable are temporary errors; DEADLINE_EXCEEDED is a
// timeout; the rest are permanent errors. CANCELLED is ""
// (the caller gave up; not the provider's outcome).
func grpcOutcome(code string) string {
	switch strings.ToUpper(code) {
	case "OK", "0", "INVALID_ARGUMENT", "3", "NOT_FOUND", "5", "ALREADY_EXISTS", "6",
		"PERMISSION_DENIED", "7", "FAILED_PRECONDITION", "9", "OUT_OF_RANGE", "11", "UNAUTHENTICATED", "16":
		return model.OutcomeSuccess
	case "UNAVAILABLE", "14", "RESOURCE_EXHAUSTED", "8", "ABORTED", "10":
		return model.OutcomeTemporaryError
	case "DEADLINE_EXCEEDED", "4":
		return model.OutcomeTimeout
	case "CANCELLED", "1":
		return model.OutcomeCancelled // the caller's doing, never the provider's
	}
	return model.OutcomePermanentError // UNKNOWN, INTERNAL, UNIMPLEMENTED, DATA_LOSS, ...
}

// grpcResult is the final result of a call that ended with a gRPC status.
func grpcResult(code string) string {
	switch grpcOutcome(code) {
	case model.OutcomeSuccess:
		return model.ResultSuccess
	case model.OutcomeTemporaryError:
		return model.ResultProviderError
	case model.OutcomeTimeout:
		return model.ResultDeadlineExhausted
	case model.OutcomePermanentError:
		return model.ResultPermanentError
	}
	return model.ResultCancelled
}

// resultClass is the latency class of a final result.
func resultClass(result string) string {
	switch result {
	case model.ResultSuccess:
		return model.ClassSuccess
	case model.ResultCapacityRejected, model.ResultBudgetExhausted:
		return model.ClassFastFailure
	}
	return model.ClassFailure
}
