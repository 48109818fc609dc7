package dialect

import (
	"regexp"
	"slices"
	"strconv"

	"github.com/retrytop/retrytop/model"
)

// Exprs: connection pools as Translate reads them: the pool (HikariCP's
// pool label, database/sql's db_name) is the dependency unless Attach
// names another, which label_replace sets pool by pool (from the raw label, so
// attachments never chain).
func (p *Pools) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	attached := make([]string, 0, len(p.Attach))
	for pool := range p.Attach {
		attached = append(attached, pool)
	}
	slices.Sort(attached)
	dep := func(label string) func(mk func(string) string) string {
		return func(mk func(string) string) string {
			e := setDep(mk(label+`!=""`), label)
			for _, pool := range attached {
				if d := p.Attach[pool]; d != "" {
					e = `label_replace(` + e + `, "dependency", ` + strconv.Quote(replacement(d)) + `, ` + strconv.Quote(label) + `, ` + strconv.Quote(regexp.QuoteMeta(pool)) + `)`
				}
			}
			return e
		}
	}
	hikari, goSQL := dep("pool"), dep("db_name")
	level := func(raw string) string { return hikari(func(m string) string { return q.sel(raw, m) }) }
	var out []Expr
	// Micrometer's acquire timer (a summary by default: mean only) in
	// seconds, HikariCP's own tracker in nanoseconds.
	out = append(out, q.histExprs(model.MetricPoolWait, hkAcquire, true, 1, nil, hikari)...)
	out = append(out, q.histExprs(model.MetricPoolWait, hkNativeAcquire, true, 1e-9, nil, hikari)...)
	out = append(out,
		Expr{Name: model.MetricPendingCalls, PromQL: level(hkPending)},
		Expr{Name: model.MetricPendingCalls, PromQL: level(hkNativePending)},
		// The first timeout counter the target has.
		Expr{Name: model.MetricAdmissionRejected, Labels: []string{model.LabelReason}, PromQL: setLabel(hikari(func(m string) string {
			return or(q.inc(hkTimeout, m),
				q.unlessHas(q.inc(hkNativeTimeout, m), q.sel(hkTimeout)),
				q.unlessHas(q.unlessHas(q.inc(hkNativeTimeout0, m), q.sel(hkTimeout)), q.sel(hkNativeTimeout)))
		}), model.LabelReason, "queue")},
	)
	// database/sql: a histogram without buckets of the waits and the time
	// waited, where the target exports both.
	waits := func(m string) string { return q.inc(goSQLWaitCount, m) + " and " + q.sel(goSQLWaitSeconds, m) }
	out = append(out,
		Expr{Name: model.MetricPoolWait + "_bucket", PromQL: goSQL(func(m string) string { return setLabel("("+waits(m)+")", "le", "+Inf") })},
		Expr{Name: model.MetricPoolWait + "_count", PromQL: goSQL(waits)},
		Expr{Name: model.MetricPoolWait + "_sum", PromQL: goSQL(func(m string) string { return q.inc(goSQLWaitSeconds, m) + " and " + q.sel(goSQLWaitCount, m) })},
	)
	return out
}

// replacement escapes a constant for label_replace's replacement, where
// $ starts a group reference.
func replacement(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '$' {
			out = append(out, '$')
		}
		out = append(out, s[i])
	}
	return string(out)
}
