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
			e := q.sel(f.name)
			if f.name == model.MetricServiceQueueLimit {
				e = q.fleetQueueLimit(e)
			}
			out = append(out, Expr{Name: f.name, PromQL: e, Labels: f.labels})
		case model.Histogram:
			for _, suf := range []string{"_bucket", "_count", "_sum"} {
				out = append(out, Expr{Name: f.name + suf, PromQL: q.inc(f.name + suf), Labels: f.labels})
			}
		}
	}
	return out
}

// fleetQueueLimit makes the summed queue limit of a target 0 (unbounded)
// when any of its replicas' is: a replica that queues without bound makes
// the fleet's queue unbounded, and a sum of the others would read as a
// bound. Each series is multiplied by 1 when every replica's limit is
// above 0, by 0 otherwise.
func (q qctx) fleetQueueLimit(sel string) string {
	by := groupList(q.By)
	// group_left's empty label list is written out: a parenthesis after
	// it would be read as the list.
	return sel + " * on (" + by + ") group_left () (min by (" + by + ") (" + sel + ") > bool 0)"
}
