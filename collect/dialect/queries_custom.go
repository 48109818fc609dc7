package dialect

import (
	"slices"
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
	return out
}
