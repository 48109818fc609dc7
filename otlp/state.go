package otlp

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Limits bound what the receiver keeps.
type Limits struct {
	// Resources caps the resources (targets) kept (default 1,000).
	Resources int
	// SeriesPerResource caps each resource's series, a histogram's
	// buckets counted (default 20,000, the store's per-target cap); an
	// export that would pass it is refused whole.
	SeriesPerResource int
}

func (l Limits) withDefaults() Limits {
	if l.Resources <= 0 {
		l.Resources = 1000
	}
	if l.SeriesPerResource <= 0 {
		l.SeriesPerResource = 20000
	}
	return l
}

// State is every resource's metrics, accumulated from the exports applied
// to it. It is safe for concurrent use.
type State struct {
	mu        sync.Mutex
	limits    Limits
	resources map[string]*resourceState
}

// NewState returns an empty State.
func NewState(l Limits) *State {
	return &State{limits: l.withDefaults(), resources: map[string]*resourceState{}}
}

type resourceState struct {
	info   []Attr // service.* attributes, for target_info
	series map[string]*seriesState
	flat   int // flat series held (buckets, _sum and _count counted)
}

type seriesState struct {
	family  string // Prometheus family name
	typ     string // counter, gauge, histogram
	labels  string // rendered {…} without braces, sorted
	startNs uint64
	timeNs  uint64
	value   float64
	// histogram
	bounds []float64
	counts []uint64 // per bucket, not cumulative; len(bounds)+1
	count  uint64
	sum    float64
	hasSum bool
}

func (s *seriesState) flat() int {
	if s.typ == "histogram" {
		return len(s.bounds) + 1 + 2
	}
	return 1
}

// TargetName is the target a resource becomes: service.namespace/
// service.name, with @service.instance.id when the resource has one
// ("unknown_service" without a name, as the SDKs default it).
func TargetName(attrs []Attr) string {
	var name, ns, inst string
	for _, a := range attrs {
		switch a.Key {
		case "service.name":
			name = a.Value
		case "service.namespace":
			ns = a.Value
		case "service.instance.id":
			inst = a.Value
		}
	}
	if name == "" {
		name = "unknown_service"
	}
	if ns != "" {
		name = ns + "/" + name
	}
	if inst != "" {
		name += "@" + inst
	}
	return name
}

// Apply adds an export to the state. It is all or nothing: an export
// that would pass a limit changes nothing and says which. added says a
// resource appeared.
func (st *State) Apply(ex *Export) (added bool, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
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
				if len(st.resources)+len(fresh) >= st.limits.Resources {
					return false, fmt.Errorf("resource %q: over the limit of %d resources", name, st.limits.Resources)
				}
				rs = &resourceState{series: map[string]*seriesState{}}
				added = true
			}
			staged[name] = rs
			fresh = append(fresh, change{name, rs})
		}
		rs.info = serviceAttrs(r.Attrs)
		for i := range r.Metrics {
			if err := rs.apply(&r.Metrics[i], st.limits.SeriesPerResource); err != nil {
				return false, fmt.Errorf("resource %q: %w", name, err)
			}
		}
	}
	for _, c := range fresh {
		st.resources[c.name] = c.rs
	}
	return added, nil
}

func (rs *resourceState) clone() *resourceState {
	c := &resourceState{info: rs.info, series: make(map[string]*seriesState, len(rs.series)), flat: rs.flat}
	for k, s := range rs.series {
		cp := *s
		cp.bounds = slices.Clone(s.bounds)
		cp.counts = slices.Clone(s.counts)
		c.series[k] = &cp
	}
	return c
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

func (rs *resourceState) apply(m *Metric, maxFlat int) error {
	family, typ := promName(m)
	for i := range m.Points {
		p := &m.Points[i]
		labels := renderLabels(p.Attrs)
		key := family + "{" + labels + "}"
		s := rs.series[key]
		if s == nil {
			s = &seriesState{family: family, typ: typ, labels: labels}
			if typ == "histogram" {
				s.bounds = slices.Clone(p.Bounds)
				s.counts = make([]uint64, len(p.Bounds)+1)
			}
			if rs.flat+s.flat() > maxFlat {
				return fmt.Errorf("over the limit of %d series", maxFlat)
			}
			rs.series[key] = s
			rs.flat += s.flat()
		}
		if err := s.add(m, p); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// add applies one point: a cumulative point replaces the value (a reset
// shows as the counter going down, as a restarted process's does), a
// delta point adds to it, a gauge replaces it.
func (s *seriesState) add(m *Metric, p *Point) error {
	delta := m.Temporality == TemporalityDelta
	if !delta && p.TimeNs < s.timeNs && p.StartNs == s.startNs {
		return nil // an older point of the same run: keep the newer
	}
	s.startNs, s.timeNs = p.StartNs, max(p.TimeNs, s.timeNs)
	if s.typ != "histogram" {
		if delta {
			s.value += p.Value
		} else {
			s.value = p.Value
		}
		return nil
	}
	if !slices.Equal(s.bounds, p.Bounds) {
		if len(s.bounds) != len(p.Bounds) {
			return fmt.Errorf("bucket bounds changed from %d to %d", len(s.bounds), len(p.Bounds))
		}
		s.bounds = slices.Clone(p.Bounds) // same layout, moved bounds (an exponential scale change): take the new
	}
	if !delta {
		s.count, s.sum, s.hasSum = 0, 0, false
		clear(s.counts)
	}
	s.count += p.Count
	if p.HasSum {
		s.sum += p.Sum
		s.hasSum = true
	}
	for i, c := range p.Counts {
		if i < len(s.counts) {
			s.counts[i] += c
		}
	}
	return nil
}

// promName is the family name the OpenTelemetry Prometheus exporter
// gives an instrument: invalid characters as underscores, the unit as a
// suffix (s: _seconds, ms: _milliseconds, By: _bytes, 1: _ratio on a
// gauge; annotations in braces dropped), _total on a monotonic sum; and
// the family's type. A non-monotonic sum is a gauge.
func promName(m *Metric) (string, string) {
	name := sanitize(m.Name)
	if u := unitSuffix(m.Unit, m.Kind == KindGauge); u != "" && !strings.HasSuffix(name, "_"+u) {
		name += "_" + u
	}
	switch m.Kind {
	case KindSum:
		if m.Monotonic {
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

// sanitize maps a name onto [a-zA-Z0-9_:], a leading digit behind an
// underscore, runs of underscores folded.
func sanitize(s string) string {
	var b strings.Builder
	last := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if !ok {
			c = '_'
		}
		if c == '_' && last == '_' {
			continue
		}
		if i == 0 && c >= '0' && c <= '9' {
			b.WriteByte('_')
		}
		b.WriteByte(c)
		last = c
	}
	return strings.Trim(b.String(), "_")
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

func labelName(k string) string {
	n := strings.ReplaceAll(sanitize(k), ":", "_")
	if n == "" {
		return "key"
	}
	return n
}

var escaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

func escape(v string) string { return escaper.Replace(v) }

// Targets are the resources held, sorted.
func (st *State) Targets() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]string, 0, len(st.resources))
	for name := range st.resources {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
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
		if s.typ != "histogram" {
			writeSample(&b, s.family, s.labels, "", s.value)
			continue
		}
		var cum uint64
		for i, c := range s.counts {
			cum += c
			le := "+Inf"
			if i < len(s.bounds) {
				le = strconv.FormatFloat(s.bounds[i], 'g', -1, 64)
			}
			writeSample(&b, s.family+"_bucket", s.labels, `le="`+le+`"`, float64(cum))
		}
		if s.hasSum {
			writeSample(&b, s.family+"_sum", s.labels, "", s.sum)
		}
		writeSample(&b, s.family+"_count", s.labels, "", float64(s.count))
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
