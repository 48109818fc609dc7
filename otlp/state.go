package otlp

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/retrytop/retrytop/model"
)

// Limits bound what the receiver keeps.
type Limits struct {
	// Resources caps the resources (targets) kept (default 1,000), and
	// ResourcesPerSender those one sender's exports create (default 100).
	Resources, ResourcesPerSender int
	// SeriesPerResource caps each resource's series, a histogram's
	// buckets counted (default 20,000, the store's per-target cap), and
	// SeriesPerSender those one sender's exports create across resources
	// (default 100,000).
	SeriesPerResource, SeriesPerSender int
	// Bytes caps the memory the series take, estimated per series
	// (seriesBytes); default 64 MiB, an eighth of the default
	// --memory-limit.
	Bytes int64
}

func (l Limits) withDefaults() Limits {
	if l.Resources <= 0 {
		l.Resources = 1000
	}
	if l.ResourcesPerSender <= 0 {
		l.ResourcesPerSender = 100
	}
	if l.SeriesPerResource <= 0 {
		l.SeriesPerResource = 20000
	}
	if l.SeriesPerSender <= 0 {
		l.SeriesPerSender = 100000
	}
	if l.Bytes <= 0 {
		l.Bytes = 64 << 20
	}
	return l
}

// ErrLimit marks an export refused by a limit rather than as malformed.
var ErrLimit = errors.New("over a limit")

// State is every resource's metrics, accumulated from the exports applied
// to it. It is safe for concurrent use.
type State struct {
	mu        sync.Mutex
	limits    Limits
	resources map[string]*resourceState
	senders   map[string]*senderUse
	bytes     int64 // seriesBytes of every series held
}

// senderUse is what one sender's exports created.
type senderUse struct {
	resources, series int
}

// NewState returns an empty State.
func NewState(l Limits) *State {
	return &State{limits: l.withDefaults(), resources: map[string]*resourceState{}, senders: map[string]*senderUse{}}
}

type resourceState struct {
	info   []Attr // service.* attributes, for target_info
	series map[string]*seriesState
	flat   int // flat series held (buckets, _sum and _count counted)
	// owned, while an export is staged on a clone, marks the series
	// copied for it (nil when not staged).
	owned map[string]bool
}

// seriesState is one series: the current run's values (the newest
// cumulative point, or the deltas added up) and, for a counter or a
// histogram, carry: what the runs before a moved start time had counted,
// so a reset never takes counts back.
type seriesState struct {
	family  string // Prometheus family name
	typ     string // counter, gauge, histogram
	labels  string // rendered {…} without braces, sorted
	startNs uint64
	timeNs  uint64
	seen    bool
	run     values
	carry   values
	bounds  []float64 // histogram: upper bounds, without +Inf
}

// values are a counter's or gauge's value, or a histogram's buckets (per
// bucket, not cumulative; len(bounds)+1), count and sum.
type values struct {
	value  float64
	counts []uint64
	count  uint64
	sum    float64
	hasSum bool
}

func (v *values) addTo(o values) {
	v.value += o.value
	v.count += o.count
	v.sum += o.sum
	v.hasSum = v.hasSum || o.hasSum
	for i, c := range o.counts {
		if i < len(v.counts) {
			v.counts[i] += c
		}
	}
}

func (v values) clone() values {
	v.counts = slices.Clone(v.counts)
	return v
}

func (s *seriesState) flat() int {
	if s.typ == "histogram" {
		return len(s.bounds) + 1 + 2
	}
	return 1
}

// seriesBytes estimates what a series held costs: its state, its key
// twice (map and labels) and a histogram's bounds and two sets of
// counts.
func seriesBytes(key string, buckets int) int64 {
	return 256 + 2*int64(len(key)) + 24*int64(buckets)
}

// TargetName is the target a resource becomes (model.ResourceTarget).
func TargetName(attrs []Attr) string {
	ns, name, inst := serviceOf(attrs)
	return model.ResourceTarget(ns, name, inst)
}

// serviceOf is a resource's service.namespace, service.name and
// service.instance.id.
func serviceOf(attrs []Attr) (namespace, name, instance string) {
	for _, a := range attrs {
		switch a.Key {
		case "service.name":
			name = a.Value
		case "service.namespace":
			namespace = a.Value
		case "service.instance.id":
			instance = a.Value
		}
	}
	return namespace, name, instance
}

// Job is a held target's job: service.namespace/service.name ("" when
// no export named the target).
func (st *State) Job(target string) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if rs := st.resources[target]; rs != nil {
		ns, name, _ := serviceOf(rs.info)
		return model.ResourceJob(ns, name)
	}
	return ""
}

// Apply adds sender's export to the state. It is all or nothing: an
// export that would pass a limit (ErrLimit) or whose points contradict
// what is held changes nothing and says which. added says a resource
// appeared.
func (st *State) Apply(ex *Export, sender string) (added bool, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	use := st.senders[sender]
	if use == nil {
		use = &senderUse{}
	}
	b := &budget{limits: st.limits, use: *use, bytes: st.bytes}
	type change struct {
		name string
		rs   *resourceState
	}
	var fresh []change
	staged := map[string]*resourceState{}
	for _, r := range ex.Resources {
		name := TargetName(r.Attrs)
		rs, ok := staged[name]
		if !ok {
			if old := st.resources[name]; old != nil {
				rs = old.clone()
			} else {
				if err := b.resource(len(st.resources) + len(fresh)); err != nil {
					return false, fmt.Errorf("resource %q: %w", name, err)
				}
				rs = &resourceState{series: map[string]*seriesState{}}
				added = true
			}
			staged[name] = rs
			fresh = append(fresh, change{name, rs})
		}
		rs.info = serviceAttrs(r.Attrs)
		for i := range r.Metrics {
			if err := rs.apply(&r.Metrics[i], b); err != nil {
				return false, fmt.Errorf("resource %q: %w", name, err)
			}
		}
	}
	for _, c := range fresh {
		c.rs.owned = nil
		st.resources[c.name] = c.rs
	}
	st.senders[sender], st.bytes = &b.use, b.bytes
	return added, nil
}

// budget is what an export may still add under the limits.
type budget struct {
	limits Limits
	use    senderUse
	bytes  int64
}

func (b *budget) resource(held int) error {
	switch {
	case held >= b.limits.Resources:
		return fmt.Errorf("%w of %d resources", ErrLimit, b.limits.Resources)
	case b.use.resources >= b.limits.ResourcesPerSender:
		return fmt.Errorf("%w of %d resources per sender", ErrLimit, b.limits.ResourcesPerSender)
	}
	b.use.resources++
	return nil
}

func (b *budget) series(rs *resourceState, key string, s *seriesState) error {
	f, cost := s.flat(), seriesBytes(key, len(s.bounds)+1)
	switch {
	case rs.flat+f > b.limits.SeriesPerResource:
		return fmt.Errorf("%w of %d series per resource", ErrLimit, b.limits.SeriesPerResource)
	case b.use.series+f > b.limits.SeriesPerSender:
		return fmt.Errorf("%w of %d series per sender", ErrLimit, b.limits.SeriesPerSender)
	case b.bytes+cost > b.limits.Bytes:
		return fmt.Errorf("%w of %d bytes the receiver's series may take", ErrLimit, b.limits.Bytes)
	}
	rs.flat += f
	b.use.series += f
	b.bytes += cost
	return nil
}

// clone is rs to stage an export on: the series map copied, each series
// copied only when the export touches it (own), so a refused export
// leaves rs as it was.
func (rs *resourceState) clone() *resourceState {
	return &resourceState{info: rs.info, series: maps.Clone(rs.series), flat: rs.flat, owned: map[string]bool{}}
}

// own is the series at key, copied first when rs is staged and the copy
// is not made yet.
func (rs *resourceState) own(key string) *seriesState {
	s := rs.series[key]
	if s == nil || rs.owned == nil || rs.owned[key] {
		return s
	}
	cp := *s
	cp.bounds = slices.Clone(s.bounds)
	cp.run, cp.carry = s.run.clone(), s.carry.clone()
	rs.series[key], rs.owned[key] = &cp, true
	return &cp
}

func serviceAttrs(attrs []Attr) []Attr {
	var out []Attr
	for _, a := range attrs {
		if strings.HasPrefix(a.Key, "service.") {
			out = append(out, a)
		}
	}
	return out
}

func (rs *resourceState) apply(m *Metric, b *budget) error {
	family, typ := promName(m)
	for i := range m.Points {
		p := &m.Points[i]
		if m.Kind == KindExpHistogram {
			p.toExplicit(m.Unit)
		}
		labels := renderLabels(p.Attrs)
		key := family + "{" + labels + "}"
		s := rs.own(key)
		if s == nil {
			s = &seriesState{family: family, typ: typ, labels: labels}
			if typ == "histogram" {
				s.bounds = slices.Clone(p.Bounds)
				s.run.counts = make([]uint64, len(p.Bounds)+1)
				s.carry.counts = make([]uint64, len(p.Bounds)+1)
			}
			if err := b.series(rs, key, s); err != nil {
				return err
			}
			rs.series[key] = s
			if rs.owned != nil {
				rs.owned[key] = true
			}
		}
		if err := s.add(m, p); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// add applies one point. A gauge's replaces the value; a delta point
// adds to it; a cumulative one replaces the run's values, and when its
// start time moved on (the process restarted) the run before is carried,
// so the counter goes on from where it was. A cumulative point older
// than the one held, or of an earlier run, is late and left out.
func (s *seriesState) add(m *Metric, p *Point) error {
	if s.typ == "histogram" && !slices.Equal(s.bounds, p.Bounds) {
		return fmt.Errorf("bucket bounds changed: %d bounds held, %d pushed", len(s.bounds), len(p.Bounds))
	}
	delta := m.Temporality == TemporalityDelta
	if !delta && s.seen && (p.StartNs < s.startNs || p.StartNs == s.startNs && p.TimeNs < s.timeNs) {
		return nil
	}
	if !delta && s.seen && p.StartNs > s.startNs && s.typ != "gauge" {
		s.carry.addTo(s.run)
		s.run = values{counts: make([]uint64, len(s.run.counts))}
	}
	s.seen = true
	s.startNs, s.timeNs = p.StartNs, max(p.TimeNs, s.timeNs)
	pv := values{value: p.Value, counts: p.Counts, count: p.Count, sum: p.Sum, hasSum: p.HasSum}
	switch {
	case delta:
		s.run.addTo(pv)
	case s.typ == "histogram":
		s.run = values{counts: slices.Clone(p.Counts), count: p.Count, sum: p.Sum, hasSum: p.HasSum}
	default:
		s.run.value = p.Value
	}
	return nil
}

// promName is the family name the OpenTelemetry Prometheus exporter
// gives an instrument: invalid characters as underscores, the unit as a
// suffix (s: _seconds, ms: _milliseconds, By: _bytes, 1: _ratio on a
// gauge; annotations in braces dropped), _total on a monotonic sum (once,
// last: the name's own "total" words dropped); and
// the family's type. A non-monotonic sum is a gauge.
func promName(m *Metric) (string, string) {
	name := sanitize(m.Name)
	counter := m.Kind == KindSum && m.Monotonic
	if counter { // every "total" word goes; one is added back last
		name = strings.Join(slices.DeleteFunc(strings.Split(name, "_"), func(w string) bool { return w == "total" }), "_")
	}
	if u := unitSuffix(m.Unit, m.Kind == KindGauge); u != "" && !strings.HasSuffix(name, "_"+u) {
		name = strings.TrimPrefix(name+"_"+u, "_")
	}
	switch m.Kind {
	case KindSum:
		if counter && name == "" {
			return "total", "counter"
		}
		if counter {
			return name + "_total", "counter"
		}
		return name, "gauge"
	case KindHistogram, KindExpHistogram:
		return name, "histogram"
	}
	return name, "gauge"
}

var units = map[string]string{
	"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds",
	"min": "minutes", "h": "hours", "d": "days",
	"By": "bytes", "KBy": "kilobytes", "MBy": "megabytes", "GBy": "gigabytes", "KiBy": "kibibytes", "MiBy": "mebibytes",
	"%": "percent",
}

func unitSuffix(unit string, gauge bool) string {
	if i := strings.IndexByte(unit, '{'); i >= 0 { // {request}: an annotation
		unit = unit[:i]
	}
	switch {
	case unit == "":
		return ""
	case unit == "1":
		if gauge {
			return "ratio"
		}
		return ""
	}
	if a, b, ok := strings.Cut(unit, "/"); ok { // By/s: bytes_per_second
		return sanitize(unitWord(a)) + "_per_" + sanitize(strings.TrimSuffix(unitWord(b), "s"))
	}
	return sanitize(unitWord(unit))
}

func unitWord(u string) string {
	if w, ok := units[u]; ok {
		return w
	}
	return u
}

// sanitize maps a metric name onto [a-zA-Z0-9_:]: other characters as
// underscores, runs of underscores folded, none at either end, a leading
// digit behind one.
func sanitize(s string) string {
	n := strings.Trim(fold(s, true), "_")
	if n != "" && n[0] >= '0' && n[0] <= '9' {
		n = "_" + n
	}
	return n
}

// fold is s with every character outside [a-zA-Z0-9_] (and ':' unless
// colon is false) as an underscore, runs of underscores folded.
func fold(s string, colon bool) string {
	var b strings.Builder
	last := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || colon && c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			c = '_'
		}
		if c == '_' && last == '_' {
			continue
		}
		b.WriteByte(c)
		last = c
	}
	return b.String()
}

// renderLabels is the attributes as sorted Prometheus labels.
func renderLabels(attrs []Attr) string {
	if len(attrs) == 0 {
		return ""
	}
	kv := make([]Attr, len(attrs))
	for i, a := range attrs {
		kv[i] = Attr{Key: labelName(a.Key), Value: a.Value}
	}
	sort.SliceStable(kv, func(i, j int) bool { return kv[i].Key < kv[j].Key })
	var b strings.Builder
	for i, a := range kv {
		if i > 0 && a.Key == kv[i-1].Key {
			continue // two attributes mapped onto one label: the first wins
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(a.Key)
		b.WriteString(`="`)
		b.WriteString(escape(a.Value))
		b.WriteByte('"')
	}
	return b.String()
}

// labelName is an attribute's label name as the OpenTelemetry Prometheus
// exporter writes it: characters outside [a-zA-Z0-9_] as underscores,
// runs folded (so never the reserved "__"), a leading digit behind
// "key_".
func labelName(k string) string {
	n := fold(k, false)
	switch {
	case n == "":
		return "key"
	case n[0] >= '0' && n[0] <= '9':
		return "key_" + n
	}
	return n
}

var escaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

// escape is a label value as the text format quotes it, invalid UTF-8
// replaced (the parsers refuse it).
func escape(v string) string { return escaper.Replace(strings.ToValidUTF8(v, "\uFFFD")) }

// Targets are the resources held, sorted.
func (st *State) Targets() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Sorted(maps.Keys(st.resources))
}

// Exposition is a resource's metrics in the Prometheus text format
// (0.0.4), with a target_info series of its service attributes; false
// when no export named it.
func (st *State) Exposition(target string) ([]byte, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	rs := st.resources[target]
	if rs == nil {
		return nil, false
	}
	var b bytes.Buffer
	b.WriteString("# TYPE target_info gauge\ntarget_info{")
	b.WriteString(renderLabels(rs.info))
	b.WriteString("} 1\n")
	keys := make([]string, 0, len(rs.series))
	for k := range rs.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lastFamily := ""
	for _, k := range keys {
		s := rs.series[k]
		if s.family != lastFamily {
			fmt.Fprintf(&b, "# TYPE %s %s\n", s.family, s.typ)
			lastFamily = s.family
		}
		v := s.carry.clone()
		v.addTo(s.run)
		if s.typ != "histogram" {
			writeSample(&b, s.family, s.labels, "", v.value)
			continue
		}
		var cum uint64
		for i, c := range v.counts {
			cum += c
			le := "+Inf"
			if i < len(s.bounds) {
				le = strconv.FormatFloat(s.bounds[i], 'g', -1, 64)
			}
			writeSample(&b, s.family+"_bucket", s.labels, `le="`+le+`"`, float64(cum))
		}
		if v.hasSum {
			writeSample(&b, s.family+"_sum", s.labels, "", v.sum)
		}
		writeSample(&b, s.family+"_count", s.labels, "", float64(v.count))
	}
	return b.Bytes(), true
}

func writeSample(b *bytes.Buffer, name, labels, extra string, v float64) {
	b.WriteString(name)
	if labels != "" || extra != "" {
		b.WriteByte('{')
		b.WriteString(labels)
		if labels != "" && extra != "" {
			b.WriteByte(',')
		}
		b.WriteString(extra)
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	switch {
	case math.IsInf(v, 1):
		b.WriteString("+Inf")
	case math.IsInf(v, -1):
		b.WriteString("-Inf")
	case math.IsNaN(v):
		b.WriteString("NaN")
	default:
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	}
	b.WriteByte('\n')
}
