package dialect

import (
	"slices"
	"strconv"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Exprs: a custom mapping is declarative, so its PromQL is generated:
// each signal selects its metric with its matchers (PromQL's own syntax
// and anchoring), takes the dependency from the dependency label (else the
// fixed name), sets its contract labels and scales its unit. A counter
// signal on a histogram or summary metric counts observations (_count), a
// histogram signal on a summary keeps its mean (only the +Inf bucket).
func (m *custom) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	var out []Expr
	for i := range m.Signals {
		sig := &m.Signals[i]
		var ms []string
		for _, mt := range sig.matchers {
			op := "="
			switch {
			case mt.re != nil && mt.neg:
				op = "!~"
			case mt.re != nil:
				op = "=~"
			case mt.neg:
				op = "!="
			}
			ms = append(ms, mt.name+op+quote(mt.value))
		}
		match := strings.Join(ms, ", ")
		// Only the family's contract labels are kept by the queries; one
		// it does not have would be summed over by analysis anyway.
		fam := familyOf(sig.Family)
		if fam == nil {
			fam = familyOf(sig.Family + "_count")
		}
		var names []string
		for n := range sig.Labels {
			if fam != nil && slices.Contains(fam.labels, n) {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		wrap := func(mk func(string) string) string {
			var parts []string
			if l := m.DependencyLabel; l != "" {
				parts = append(parts, setDep(mk(join(l+`!=""`, match)), l))
				if m.Dependency != "" {
					parts = append(parts, setLabel(mk(join(l+`=""`, match)), model.LabelDependency, m.Dependency))
				}
			} else {
				parts = append(parts, setLabel(mk(match), model.LabelDependency, m.Dependency))
			}
			e := or(parts...)
			for _, n := range names {
				e = setLabel(e, n, sig.Labels[n])
			}
			return e
		}
		scale := sig.Scale
		if scale == 0 {
			scale = 1
		}
		switch {
		case counterFamilies[sig.Family]:
			out = append(out, Expr{Name: sig.Family, Labels: names, PromQL: wrap(func(x string) string {
				return or(q.inc(sig.Metric, join(`quantile=""`, x)), q.inc(sig.Metric+"_count", x))
			})})
		case histogramFamilies[sig.Family]:
			out = append(out, q.histExprs(sig.Family, sig.Metric, true, scale, names, wrap)...)
		default:
			out = append(out, Expr{Name: sig.Family, Labels: names, PromQL: wrap(func(x string) string {
				return scaled(q.sel(sig.Metric, join(`quantile=""`, x)), scale)
			})})
		}
	}
	return append(out, m.derivedExprs(q, out)...)
}

// derivedExprs: each derivation's expression over the operands' queries,
// each operand summed by (<by>, instance, dependency) as Translate sums
// it per target and dependency, clamped at 0. A counter's terms are
// increases, so the derived increase is the difference of theirs (no
// monotonic hold across steps: a step where the difference falls reads 0).
func (m *custom) derivedExprs(q qctx, have []Expr) []Expr {
	group := groupList(append(append([]string{}, q.By...), "instance", model.LabelDependency))
	var out []Expr
	for _, d := range m.Derived {
		operand := func(f string) string {
			var parts []string
			for _, e := range append(have, out...) {
				if e.Name == f {
					parts = append(parts, setLabel(e.PromQL, partLabel, strconv.Itoa(len(parts)+1)))
				}
			}
			return "sum by (" + group + ") (" + or(parts...) + ")"
		}
		var render func(n *dnode) string
		render = func(n *dnode) string {
			if n.family != "" {
				return operand(n.family)
			}
			return "(" + render(n.l) + " " + string(n.op) + " " + render(n.r) + ")"
		}
		out = append(out, Expr{Name: d.Family, PromQL: "clamp_min(" + render(d.node) + ", 0)"})
	}
	return out
}
