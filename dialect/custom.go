package dialect

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v2"

	"github.com/retrytop/retrytop/model"
)

// Mapping is a custom dialect, as a config file's dialects: section
// describes it: which raw families feed which contract families, for the
// emitters no built-in dialect knows. Example (YAML):
//
//	dialects:
//	  - name: acme-client
//	    dependency_label: upstream
//	    signals:
//	      - family: retry_originals_total
//	        metric: acme_calls_total
//	      - family: retry_attempts_total
//	        metric: acme_tries_total
//	        match: ['status=~"5.."']
//	        labels: {outcome: temporary_error}
//	      - family: retry_request_duration_seconds
//	        metric: acme_call_latency_ms
//	        scale: 0.001
type Mapping struct {
	// Name is the dialect's name (name=URL@name); it must not be a
	// built-in one.
	Name string `json:"name" yaml:"name"`
	// DependencyLabel is the raw label whose value names the dependency.
	DependencyLabel string `json:"dependency_label,omitempty" yaml:"dependency_label,omitempty"`
	// Dependency names the dependency of series without DependencyLabel
	// (or of every series when DependencyLabel is empty).
	Dependency string `json:"dependency,omitempty" yaml:"dependency,omitempty"`
	// Detect lists raw families whose presence selects the dialect;
	// empty means the Metric of any signal.
	Detect []string `json:"detect,omitempty" yaml:"detect,omitempty"`
	// Signals are the mappings, applied in order; series matching two
	// signals of one family are added together.
	Signals []Signal `json:"signals" yaml:"signals"`
	// Derived families are computed from the mapped ones, in order, per
	// dependency (see Derivation).
	Derived []Derivation `json:"derived,omitempty" yaml:"derived,omitempty"`
}

// Signal maps one raw family (optionally a subset of its series) onto one
// contract family.
type Signal struct {
	// Family is the contract (or extension) family written, e.g.
	// retry_attempts_total or retry_request_duration_seconds.
	Family string `json:"family" yaml:"family"`
	// Metric is the raw family read (histograms and summaries by their
	// base name).
	Metric string `json:"metric" yaml:"metric"`
	// Match selects series with PromQL-style matchers: name="v",
	// name!="v", name=~"re", name!~"re" (anchored, like PromQL).
	Match []string `json:"match,omitempty" yaml:"match,omitempty"`
	// Labels are contract labels set on the output (outcome, reason,
	// result, result_class, priority).
	Labels map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
	// Scale multiplies durations into seconds: histogram bounds and sums,
	// summary sums and gauge values (0.001 for milliseconds, 1e-9 for
	// nanoseconds). 0 means 1. Counts are never scaled.
	Scale float64 `json:"scale,omitempty" yaml:"scale,omitempty"`

	matchers []matcher
}

type matcher struct {
	name  string
	value string
	re    *regexp.Regexp
	neg   bool
}

func (m matcher) matches(ls model.Labels) bool {
	v := ls.Get(m.name)
	ok := v == m.value
	if m.re != nil {
		ok = m.re.MatchString(v)
	}
	return ok != m.neg
}

var counterFamilies = map[string]bool{
	model.MetricOriginals: true, model.MetricAttempts: true, model.MetricRetries: true,
	model.MetricRescued: true, model.MetricBudgetDenied: true, model.MetricAdmissionRejected: true,
	model.MetricResults: true, model.MetricServerReceived: true, model.MetricServerWorkAfterCancel: true,
	model.MetricRetryLimitExceeded: true, model.MetricRequestTimeouts: true,
}

var histogramFamilies = map[string]bool{
	model.MetricPoolWait: true, model.MetricRequestDuration: true, model.MetricAttemptDuration: true,
	model.MetricBackoff: true, model.MetricServerServiceTime: true,
}

// parseMatcher reads name="v", name!="v", name=~"re" or name!~"re" (the
// value may be unquoted).
func parseMatcher(s string) (matcher, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexAny(s, "=!")
	if i <= 0 {
		return matcher{}, fmt.Errorf("matcher %q: want name=\"value\", name!=\"value\", name=~\"re\" or name!~\"re\"", s)
	}
	m := matcher{name: strings.TrimSpace(s[:i])}
	rest := s[i:]
	var op string
	for _, o := range []string{"=~", "!~", "!=", "="} {
		if strings.HasPrefix(rest, o) {
			op = o
			break
		}
	}
	if op == "" {
		return matcher{}, fmt.Errorf("matcher %q: unknown operator", s)
	}
	v := strings.TrimSpace(rest[len(op):])
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		if uq, err := strconv.Unquote(`"` + v[1:len(v)-1] + `"`); err == nil {
			v = uq
		} else {
			v = v[1 : len(v)-1]
		}
	}
	m.value, m.neg = v, op[0] == '!'
	if op[1:] == "~" {
		re, err := regexp.Compile("^(?:" + v + ")$")
		if err != nil {
			return matcher{}, fmt.Errorf("matcher %q: %v", s, err)
		}
		m.re = re
	}
	return m, nil
}

// compile validates the mapping and compiles its matchers.
func (m *Mapping) compile() error {
	if !validName(m.Name) {
		return fmt.Errorf("custom dialect %q: name must be letters, digits, '_', '-' or '.', starting with a letter", m.Name)
	}
	if m.DependencyLabel == "" && m.Dependency == "" {
		return fmt.Errorf("custom dialect %q: set dependency_label or dependency", m.Name)
	}
	if len(m.Signals) == 0 {
		return fmt.Errorf("custom dialect %q: no signals", m.Name)
	}
	sigs := make([]Signal, len(m.Signals))
	for i, s := range m.Signals {
		where := fmt.Sprintf("custom dialect %q, signal %d (%s)", m.Name, i+1, s.Family)
		if !counterFamilies[s.Family] && !histogramFamilies[s.Family] && !slices.Contains(contractFamilies, s.Family) {
			return fmt.Errorf("%s: %q is not a family of the metric contract", where, s.Family)
		}
		if s.Metric == "" {
			return fmt.Errorf("%s: no metric", where)
		}
		if s.Scale < 0 {
			return fmt.Errorf("%s: negative scale", where)
		}
		for n := range s.Labels {
			if n == model.LabelDependency || !contractLabels[n] || n == "le" || n == "quantile" {
				return fmt.Errorf("%s: label %q cannot be set (only outcome, reason, result, result_class, priority)", where, n)
			}
		}
		s.matchers = nil
		for _, ms := range s.Match {
			mt, err := parseMatcher(ms)
			if err != nil {
				return fmt.Errorf("%s: %v", where, err)
			}
			s.matchers = append(s.matchers, mt)
		}
		sigs[i] = s
	}
	m.Signals = sigs
	var mapped []string
	for _, s := range sigs {
		if !slices.Contains(mapped, s.Family) {
			mapped = append(mapped, s.Family)
		}
	}
	ds := make([]Derivation, len(m.Derived))
	for i, d := range m.Derived {
		if err := d.compile(mapped); err != nil {
			return fmt.Errorf("custom dialect %q: %v", m.Name, err)
		}
		ds[i] = d
		mapped = append(mapped, d.Family)
	}
	m.Derived = ds
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// custom is the Dialect of a compiled Mapping; g keeps its derived
// differences monotonic.
type custom struct {
	Mapping
	g guard
}

// NewCustom validates a mapping and returns its dialect.
func NewCustom(m Mapping) (Dialect, error) {
	if err := m.compile(); err != nil {
		return nil, err
	}
	return &custom{Mapping: m}, nil
}

// Name implements Dialect.
func (m *custom) Name() string { return m.Mapping.Name }

// Families implements Dialect: every signal's metric, and its flat parts
// (a histogram exposed without # TYPE parses as separate families).
func (m *custom) Families() []string {
	var out []string
	for _, s := range m.Signals {
		out = append(out, s.Metric, s.Metric+"_bucket", s.Metric+"_count", s.Metric+"_sum")
	}
	return append(out, m.Mapping.Detect...)
}

// maps reports whether a raw family of that name feeds one of the
// mapping's signals (as a family or a flat part of one).
func (m *custom) maps(name string) bool {
	for _, s := range m.Signals {
		if name == s.Metric || name == s.Metric+"_bucket" || name == s.Metric+"_count" || name == s.Metric+"_sum" {
			return true
		}
	}
	return false
}

// Detect implements Dialect: a Detect family, or any signal's metric.
func (m *custom) Detect(fams []model.Family) bool {
	r := index(fams)
	if len(m.Mapping.Detect) > 0 {
		return r.has(m.Mapping.Detect...)
	}
	for _, s := range m.Signals {
		if r.has(s.Metric) || r.flat(s.Metric) != nil {
			return true
		}
	}
	return false
}

// flat assembles the histogram (or, without buckets, the summary) name
// from flat families name_bucket{le}, name_count and name_sum, as a text
// exposition without # TYPE or a file of separate series gives them; nil
// when there are none, or when name itself is a family. Missing parts are
// filled as the parser fills them: the +Inf bucket from the count and the
// other way round, an absent sum NaN.
func (r raw) flat(name string) *model.Family {
	if r[name] != nil {
		return nil
	}
	part := func(suffix string) *model.Family {
		if f := r[name+suffix]; f != nil && f.Type != model.Histogram && f.Type != model.Summary {
			return f
		}
		return nil
	}
	b, c, sm := part("_bucket"), part("_count"), part("_sum")
	if b == nil && (c == nil || sm == nil) {
		return nil
	}
	out := &model.Family{Name: name, Type: model.Summary}
	if b != nil {
		out.Type = model.Histogram
	}
	type acc struct {
		s                model.Sample
		hasCount, hasSum bool
	}
	var order []string
	byKey := map[string]*acc{}
	get := func(ls model.Labels) *acc {
		k := string(ls.AppendKey(nil))
		a := byKey[k]
		if a == nil {
			a = &acc{s: model.Sample{Labels: ls}}
			byKey[k] = a
			order = append(order, k)
		}
		return a
	}
	if b != nil {
		for _, s := range b.Samples {
			le, err := model.ParseFloat(s.Labels.Get("le"))
			if err != nil || !s.Labels.Has("le") {
				continue
			}
			a := get(s.Labels.Without("le"))
			a.s.Buckets = append(a.s.Buckets, model.Bucket{UpperBound: le, Count: s.Value})
		}
	}
	if c != nil {
		for _, s := range c.Samples {
			a := get(s.Labels)
			a.s.Count, a.hasCount = s.Value, true
		}
	}
	if sm != nil {
		for _, s := range sm.Samples {
			a := get(s.Labels)
			a.s.Sum, a.hasSum = s.Value, true
		}
	}
	for _, k := range order {
		a := byKey[k]
		s := &a.s
		sort.Slice(s.Buckets, func(i, j int) bool { return s.Buckets[i].UpperBound < s.Buckets[j].UpperBound })
		n := len(s.Buckets)
		if out.Type == model.Histogram && (n == 0 || !math.IsInf(s.Buckets[n-1].UpperBound, +1)) {
			if !a.hasCount && n == 0 {
				continue // only a sum: nothing to count
			}
			inf := s.Count
			if !a.hasCount {
				inf = s.Buckets[n-1].Count
			}
			s.Buckets = append(s.Buckets, model.Bucket{UpperBound: math.Inf(+1), Count: inf})
		}
		if !a.hasCount {
			s.Count = math.NaN()
			if n := len(s.Buckets); n > 0 {
				s.Count = s.Buckets[n-1].Count
			}
		}
		if !a.hasSum {
			s.Sum = math.NaN()
		}
		out.Samples = append(out.Samples, *s)
	}
	return out
}

// Translate implements Dialect.
func (m *custom) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	for i := range m.Signals {
		sig := &m.Signals[i]
		f := r[sig.Metric]
		if f == nil {
			if f = r.flat(sig.Metric); f == nil {
				continue
			}
		}
		scale := sig.Scale
		if scale == 0 {
			scale = 1
		}
	next:
		for j := range f.Samples {
			s := &f.Samples[j]
			for _, mt := range sig.matchers {
				if !mt.matches(s.Labels) {
					continue next
				}
			}
			dep := m.Dependency
			if m.DependencyLabel != "" {
				if d := s.Labels.Get(m.DependencyLabel); d != "" {
					dep = d
				}
			}
			if dep == "" {
				continue
			}
			ls := relabel(s.Labels, dep, m.DependencyLabel)
			for n, v := range sig.Labels {
				ls = ls.With(n, v)
			}
			switch {
			case counterFamilies[sig.Family]:
				o.counterAt(sig.Family, ls, scalar(f, s), s.CreatedMs)
			case histogramFamilies[sig.Family]:
				switch f.Type {
				case model.Histogram:
					o.histogram(sig.Family, ls, s, scale)
				case model.Summary:
					o.countSum(sig.Family, ls, s.Count, s.Sum*scale)
				}
			default:
				o.gauge(sig.Family, ls, scalar(f, s)*scale)
			}
		}
	}
	m.derive(o)
	return o.snapshot(snap)
}

// ParseMappings reads the dialects: section of a config file (YAML; the
// file's other keys are ignored here) into custom dialect mappings, strictly:
// a misspelt key inside a mapping is an error. name is used in errors.
// Each mapping is validated as NewTranslator would.
func ParseMappings(name string, b []byte) ([]Mapping, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("config %s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	section, ok := doc["dialects"]
	if !ok || section == nil {
		return nil, nil
	}
	raw, err := yaml.Marshal(section)
	if err != nil {
		return nil, fmt.Errorf("config %s: dialects: %v", name, err)
	}
	var ms []Mapping
	if err := yaml.UnmarshalStrict(raw, &ms); err != nil {
		return nil, fmt.Errorf("config %s: dialects: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if err := CompileMappings(ms); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	return ms, nil
}

// CompileMappings validates mappings decoded from a config file as
// NewTranslator would and prepares them for use; errors name the mapping
// by its index in the dialects: list.
func CompileMappings(ms []Mapping) error {
	for i := range ms {
		m := ms[i]
		if err := m.compile(); err != nil {
			return fmt.Errorf("dialects[%d]: %w", i, err)
		}
	}
	return nil
}
