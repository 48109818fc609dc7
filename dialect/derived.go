package dialect

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Derivation derives one contract family of a custom mapping from the
// families its signals (or earlier derivations) map, per dependency:
//
//	derived:
//	  - family: retry_retries_total
//	    expr: attempts - (originals - admission_rejected)
//
// expr is a small language: operands are mapped families, by full name
// (retry_attempts_total) or short name (attempts: without retry_ and
// _total), each the sum of the family's series of one dependency;
// operators +, - and, for a gauge family only, / (a ratio); parentheses.
// The result is clamped at 0; a counter family must be a sum or
// difference (it stays a counter, kept monotonic like every difference of
// counters here, see guard), a histogram family cannot be derived. A
// dependency missing an operand has no derived value: absent, never 0.
// The derived family's HELP says "derived: <expr>".
type Derivation struct {
	Family string `json:"family" yaml:"family"`
	Expr   string `json:"expr" yaml:"expr"`

	node *dnode
}

// dnode is a parsed expression: an operand (family set) or an operator
// over two nodes.
type dnode struct {
	family string
	op     byte
	l, r   *dnode
}

// shortName is a family's short name in expressions.
func shortName(f string) string {
	return strings.TrimSuffix(strings.TrimPrefix(f, "retry_"), "_total")
}

// compile parses the expression against the families mapped so far.
func (d *Derivation) compile(mapped []string) error {
	if !counterFamilies[d.Family] && !slices.Contains(contractFamilies, d.Family) || histogramFamilies[d.Family] {
		return fmt.Errorf("derived %q: not a counter or gauge family of the metric contract", d.Family)
	}
	if slices.Contains(mapped, d.Family) {
		return fmt.Errorf("derived %q: already mapped by a signal or an earlier derivation", d.Family)
	}
	p := &dparser{src: d.Expr, mapped: mapped}
	n, err := p.expr()
	if err == nil && p.peek() != 0 {
		err = p.errf("unexpected %q", string(p.peek()))
	}
	if err != nil {
		return fmt.Errorf("derived %q: expr %q: %v", d.Family, d.Expr, err)
	}
	if counterFamilies[d.Family] && n.has('/') {
		return fmt.Errorf("derived %q: expr %q: a counter is a sum or difference of counters (no /)", d.Family, d.Expr)
	}
	d.node = n
	return nil
}

func (n *dnode) has(op byte) bool {
	if n == nil {
		return false
	}
	return n.op == op || n.l.has(op) || n.r.has(op)
}

// operands lists the families a node reads.
func (n *dnode) operands(out []string) []string {
	if n == nil {
		return out
	}
	if n.family != "" && !slices.Contains(out, n.family) {
		out = append(out, n.family)
	}
	return n.r.operands(n.l.operands(out))
}

// linear returns the coefficient of every family of a sum or difference.
func (n *dnode) linear(sign float64, into map[string]float64) {
	switch {
	case n.family != "":
		into[n.family] += sign
	case n.op == '+':
		n.l.linear(sign, into)
		n.r.linear(sign, into)
	case n.op == '-':
		n.l.linear(sign, into)
		n.r.linear(-sign, into)
	}
}

// eval computes a node from per-family values; ok is false when an
// operand is missing or a ratio divides by 0.
func (n *dnode) eval(v map[string]float64) (float64, bool) {
	if n.family != "" {
		x, ok := v[n.family]
		return x, ok
	}
	a, okA := n.l.eval(v)
	b, okB := n.r.eval(v)
	if !okA || !okB {
		return 0, false
	}
	switch n.op {
	case '+':
		return a + b, true
	case '-':
		return a - b, true
	}
	if b == 0 {
		return 0, false
	}
	return a / b, true
}

type dparser struct {
	src    string
	pos    int
	mapped []string
}

func (p *dparser) errf(format string, args ...any) error {
	return fmt.Errorf("at %d: %s", p.pos+1, fmt.Sprintf(format, args...))
}

func (p *dparser) peek() byte {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
	if p.pos == len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

func (p *dparser) expr() (*dnode, error) {
	l, err := p.term()
	for err == nil {
		c := p.peek()
		if c != '+' && c != '-' {
			return l, nil
		}
		p.pos++
		var r *dnode
		if r, err = p.term(); err == nil {
			l = &dnode{op: c, l: l, r: r}
		}
	}
	return nil, err
}

func (p *dparser) term() (*dnode, error) {
	l, err := p.factor()
	for err == nil && p.peek() == '/' {
		p.pos++
		var r *dnode
		if r, err = p.factor(); err == nil {
			l = &dnode{op: '/', l: l, r: r}
		}
	}
	return l, err
}

func (p *dparser) factor() (*dnode, error) {
	switch c := p.peek(); {
	case c == '(':
		p.pos++
		n, err := p.expr()
		if err != nil {
			return nil, err
		}
		if p.peek() != ')' {
			return nil, p.errf("missing )")
		}
		p.pos++
		return n, nil
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		start := p.pos
		for p.pos < len(p.src) && (p.src[p.pos] == '_' || p.src[p.pos] >= 'a' && p.src[p.pos] <= 'z' ||
			p.src[p.pos] >= 'A' && p.src[p.pos] <= 'Z' || p.src[p.pos] >= '0' && p.src[p.pos] <= '9') {
			p.pos++
		}
		name := p.src[start:p.pos]
		for _, f := range p.mapped {
			if f == name || shortName(f) == name {
				if histogramFamilies[f] {
					return nil, fmt.Errorf("at %d: %s is a histogram", start+1, name)
				}
				return &dnode{family: f}, nil
			}
		}
		return nil, fmt.Errorf("at %d: %q is not a family this mapping maps (signals and earlier derivations)", start+1, name)
	case c == 0:
		return nil, p.errf("expression ends early")
	default:
		return nil, p.errf("unexpected %q", string(c))
	}
}

// derive adds the mapping's derived families to o, per dependency, from
// the families o holds.
func (m *custom) derive(o *out) {
	if len(m.Derived) == 0 {
		return
	}
	m.g.begin()
	defer m.g.end()
	for _, d := range m.Derived {
		// Per dependency: each operand the sum of its family's series.
		vals := map[string]map[string]float64{}
		var deps []string
		for _, f := range d.node.operands(nil) {
			fam := o.fams[f]
			if fam == nil {
				continue
			}
			for _, s := range fam.Samples {
				dep := s.Labels.Get(model.LabelDependency)
				if vals[dep] == nil {
					vals[dep] = map[string]float64{}
					deps = append(deps, dep)
				}
				vals[dep][f] += s.Value
			}
		}
		sort.Strings(deps)
		for _, dep := range deps {
			ls := model.Labels{{Name: model.LabelDependency, Value: dep}}
			if counterFamilies[d.Family] {
				co := map[string]float64{}
				d.node.linear(1, co)
				var plus, minus float64
				ok := true
				for f, c := range co {
					v, has := vals[dep][f]
					ok = ok && has
					if c > 0 {
						plus += c * v
					} else {
						minus -= c * v
					}
				}
				if ok {
					o.derived(d.Family, ls, &m.g, d.Family, ls, plus, minus)
				}
			} else if v, ok := d.node.eval(vals[dep]); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				o.gauge(d.Family, ls, math.Max(v, 0))
			}
		}
		if f := o.fams[d.Family]; f != nil {
			f.Help = "derived: " + d.Expr
		}
	}
}

// ShortName is a contract family's name in derived expressions and in
// reports' derived marks: without retry_ and _total ("retries").
func ShortName(family string) string { return shortName(family) }

// deriver is a built-in dialect that derives some contract families from
// others (family -> how), as a custom mapping's derived: section does.
type deriver interface{ Derived() map[string]string }

// DerivedByDialect lists, per dialect name (built-in, then cfg's custom
// mappings), the families it derives rather than reads, by short name
// (ShortName), with how: what a report marks as derived
// (analysis.ReportOptions.Derived, ui.Options.Derived). Nil when none
// derives anything.
func DerivedByDialect(cfg Config) map[string]map[string]string {
	var out map[string]map[string]string
	add := func(dialect string, fams map[string]string) {
		for f, expr := range fams {
			if out == nil {
				out = map[string]map[string]string{}
			}
			if out[dialect] == nil {
				out[dialect] = map[string]string{}
			}
			out[dialect][shortName(f)] = expr
		}
	}
	regMu.RLock()
	for _, e := range registry {
		if d, ok := e.proto.(deriver); ok {
			add(e.name, d.Derived())
		}
	}
	regMu.RUnlock()
	for _, m := range cfg.Custom {
		add(m.Name, m.DerivedFamilies())
	}
	return out
}

// DerivedFamilies lists the families a mapping derives (for a report to
// mark them), with their expressions.
func (m Mapping) DerivedFamilies() map[string]string {
	out := make(map[string]string, len(m.Derived))
	for _, d := range m.Derived {
		out[d.Family] = d.Expr
	}
	return out
}
