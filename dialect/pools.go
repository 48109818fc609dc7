package dialect

import (
	"github.com/retrytop/retrytop/model"
)

// Connection pools as pool-wait sources: HikariCP (Micrometer names with
// label pool, or HikariCP's own Prometheus tracker, nanoseconds) and Go's
// database/sql statistics (client_golang's DBStatsCollector, label
// db_name). A pool is its own dependency unless Attach names the
// dependency it serves.
const (
	hkAcquire        = "hikaricp_connections_acquire_seconds"
	hkPending        = "hikaricp_connections_pending"
	hkTimeout        = "hikaricp_connections_timeout_total"
	hkNativeAcquire  = "hikaricp_connection_acquired_nanos"
	hkNativePending  = "hikaricp_pending_threads"
	hkNativeTimeout  = "hikaricp_connection_timeout_total"
	hkNativeTimeout0 = "hikaricp_connection_timeout_count" // very old tracker
	goSQLWaitCount   = "go_sql_wait_count_total"
	goSQLWaitSeconds = "go_sql_wait_duration_seconds_total"
)

// Pools reads connection pools. Attach maps a pool name (HikariCP's pool
// label, database/sql's db_name) to the dependency whose calls wait on it.
type Pools struct {
	Attach map[string]string
}

func (*Pools) Name() string { return NamePools }

func (*Pools) Families() []string {
	return []string{hkAcquire, hkPending, hkTimeout, hkNativeAcquire, hkNativePending, hkNativeTimeout,
		hkNativeTimeout0, goSQLWaitCount, goSQLWaitSeconds}
}

// Detect: HikariCP's acquire timer (either tracker) or database/sql's wait
// counter.
func (*Pools) Detect(fams []model.Family) bool {
	return index(fams).has(hkAcquire, hkNativeAcquire, goSQLWaitCount)
}

func (p *Pools) dep(ls model.Labels, label string) (model.Labels, bool) {
	pool := ls.Get(label)
	if pool == "" {
		return nil, false
	}
	d := pool
	if a := p.Attach[pool]; a != "" {
		d = a
	}
	return relabel(ls, d, label), true
}

func (p *Pools) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	wait := func(name string, scale float64) {
		f := r[name]
		if f == nil {
			return
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			ls, ok := p.dep(s.Labels, "pool")
			if !ok {
				continue
			}
			switch f.Type {
			case model.Histogram:
				o.histogram(model.MetricPoolWait, ls, s, scale)
			case model.Summary:
				// Micrometer's default timer: count and sum only.
				o.countSum(model.MetricPoolWait, ls, s.Count, s.Sum*scale)
			}
		}
	}
	wait(hkAcquire, 1)
	wait(hkNativeAcquire, 1e-9)
	for _, name := range []string{hkPending, hkNativePending} {
		f := r[name]
		if f == nil {
			continue
		}
		for i := range f.Samples {
			if ls, ok := p.dep(f.Samples[i].Labels, "pool"); ok {
				o.gauge(model.MetricPendingCalls, ls, f.Samples[i].Value)
			}
		}
	}
	if f := r.first(hkTimeout, hkNativeTimeout, hkNativeTimeout0); f != nil {
		for i := range f.Samples {
			if ls, ok := p.dep(f.Samples[i].Labels, "pool"); ok {
				o.counter(model.MetricAdmissionRejected, ls.With(model.LabelReason, "queue"), scalar(f, &f.Samples[i]))
			}
		}
	}
	// database/sql: waits and the total time waited, as a histogram
	// without buckets (the mean is exact, quantiles absent).
	secs := map[string]float64{}
	var key []byte
	if f := r[goSQLWaitSeconds]; f != nil {
		for i := range f.Samples {
			if ls, ok := p.dep(f.Samples[i].Labels, "db_name"); ok {
				key = ls.AppendKey(key[:0])
				secs[string(key)] = scalar(f, &f.Samples[i])
			}
		}
	}
	if f := r[goSQLWaitCount]; f != nil {
		for i := range f.Samples {
			ls, ok := p.dep(f.Samples[i].Labels, "db_name")
			if !ok {
				continue
			}
			key = ls.AppendKey(key[:0])
			if sum, ok := secs[string(key)]; ok {
				o.countSum(model.MetricPoolWait, ls, scalar(f, &f.Samples[i]), sum)
			}
		}
	}
	return o.snapshot(snap)
}
