package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: the contract read as it is. Counters are increases, gauges
// levels, histograms their _bucket, _count and _sum increases; every
// contract label of the family is kept as the emitter set it.
func (native) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	var out []Expr
	for _, f := range queryFamilies {
		switch f.typ {
		case model.Counter:
			out = append(out, Expr{Name: f.name, PromQL: q.inc(f.name), Labels: f.labels})
		case model.Gauge:
			out = append(out, Expr{Name: f.name, PromQL: q.sel(f.name), Labels: f.labels})
		case model.Histogram:
			for _, suf := range []string{"_bucket", "_count", "_sum"} {
				out = append(out, Expr{Name: f.name + suf, PromQL: q.inc(f.name + suf), Labels: f.labels})
			}
		}
	}
	return out
}
