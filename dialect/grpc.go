package dialect

import (
	"strings"

	"github.com/retrytop/retrytop/model"
)

// gRPC's OpenTelemetry client metrics (gRFC A66, retry histograms of A96)
// as the OTel Prometheus exporter writes them: dots become underscores,
// unit "s" adds _seconds, counters get _total (older exporters omit it),
// scope labels otel_scope_*. Exporters with UTF-8 names may keep the dots
// ("grpc.client.attempt.started_total", label "grpc.method"); both forms
// are read.
const (
	grAttemptStarted  = "grpc_client_attempt_started_total"
	grAttemptStarted2 = "grpc_client_attempt_started" // no _total
	grAttemptDuration = "grpc_client_attempt_duration_seconds"
	grCallDuration    = "grpc_client_call_duration_seconds"
	grCallRetries     = "grpc_client_call_retries"
	grTargetLabel     = "grpc_target"
	grStatusLabel     = "grpc_status"
)

type grpcOTel struct{ g guard }

func (*grpcOTel) Name() string { return NameGRPC }

func (*grpcOTel) Families() []string { return []string{"grpc_client_*", "grpc.client.*"} }

// Detect: an attempt-started or call-duration family, in either naming.
func (*grpcOTel) Detect(fams []model.Family) bool {
	r := grpcIndex(fams)
	return r.has(grAttemptStarted, grAttemptStarted2, grCallDuration)
}

// grpcIndex indexes families by their name with dots turned into
// underscores.
func grpcIndex(fams []model.Family) raw {
	r := make(raw, len(fams))
	for i := range fams {
		n := fams[i].Name
		if !strings.HasPrefix(n, "grpc") {
			continue
		}
		r[strings.ReplaceAll(n, ".", "_")] = &fams[i]
	}
	return r
}

// grpcLabels normalises label names (dots to underscores).
func grpcLabels(ls model.Labels) model.Labels {
	for _, l := range ls {
		if strings.IndexByte(l.Name, '.') >= 0 {
			out := make(model.Labels, len(ls))
			for i, l := range ls {
				out[i] = model.Label{Name: strings.ReplaceAll(l.Name, ".", "_"), Value: l.Value}
			}
			out.Sort()
			return out
		}
	}
	return ls
}

func (d *grpcOTel) Translate(snap *model.Snapshot) *model.Snapshot {
	r := grpcIndex(snap.Families)
	o := newOut()
	d.g.begin()
	defer d.g.end()

	type call struct {
		ls                  model.Labels
		calls, attempts     float64
		hasCalls, hasAttmpt bool
	}
	calls := map[string]*call{}
	var order []string
	var key []byte
	at := func(ls model.Labels) *call {
		key = ls.AppendKey(key[:0])
		c := calls[string(key)]
		if c == nil {
			c = &call{ls: ls}
			calls[string(key)] = c
			order = append(order, string(key))
		}
		return c
	}
	each := func(name string, fn func(f *model.Family, s *model.Sample, ls model.Labels, status string)) {
		f := r[name]
		if f == nil {
			return
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			ls := grpcLabels(s.Labels)
			target := ls.Get(grTargetLabel)
			if target == "" {
				continue
			}
			fn(f, s, relabel(ls, target, grTargetLabel, grStatusLabel), ls.Get(grStatusLabel))
		}
	}
	// Originals: completed calls (call duration's count), one per RPC the
	// application made, by final status.
	each(grCallDuration, func(f *model.Family, s *model.Sample, ls model.Labels, status string) {
		o.counter(model.MetricOriginals, ls, scalar(f, s))
		o.seed(model.MetricResults, ls, model.LabelResult, allResults...)
		res := grpcResult(status)
		o.counter(model.MetricResults, ls.With(model.LabelResult, res), scalar(f, s))
		c := at(ls)
		c.calls += scalar(f, s)
		c.hasCalls = true
		if f.Type == model.Histogram {
			o.histogram(model.MetricRequestDuration, ls.With(model.LabelResultClass, resultClass(res)), s, 1)
		}
	})
	// Attempts: completed attempts by status (attempt duration's count);
	// without that histogram, attempts started (in-flight ones included),
	// without an outcome.
	if r[grAttemptDuration] != nil {
		each(grAttemptDuration, func(f *model.Family, s *model.Sample, ls model.Labels, status string) {
			c := at(ls)
			c.attempts += scalar(f, s)
			c.hasAttmpt = true
			o.seed(model.MetricAttempts, ls, model.LabelOutcome, allOutcomes...)
			if out := grpcOutcome(status); out != "" {
				ls = ls.With(model.LabelOutcome, out)
			}
			o.counter(model.MetricAttempts, ls, scalar(f, s))
			if f.Type == model.Histogram {
				o.histogram(model.MetricAttemptDuration, ls, s, 1)
			}
		})
	} else {
		name := grAttemptStarted
		if r[name] == nil {
			name = grAttemptStarted2
		}
		each(name, func(f *model.Family, s *model.Sample, ls model.Labels, _ string) {
			o.counter(model.MetricAttempts, ls, scalar(f, s))
		})
	}
	// Retries: the opt-in retries histogram's sum (calls without retries
	// are not observed, so its count is not the calls), else completed
	// attempts minus completed calls.
	if r[grCallRetries] != nil {
		each(grCallRetries, func(f *model.Family, s *model.Sample, ls model.Labels, _ string) {
			if f.Type == model.Histogram || f.Type == model.Summary {
				o.counter(model.MetricRetries, ls, s.Sum)
			}
		})
		// A96 counts a hedging policy's extra attempts apart from the
		// retries; the contract's retries include them.
		each(grCallHedges, func(f *model.Family, s *model.Sample, ls model.Labels, _ string) {
			if f.Type == model.Histogram || f.Type == model.Summary {
				o.counter(model.MetricRetries, ls, s.Sum)
			}
		})
	} else {
		for _, k := range order {
			if c := calls[k]; c.hasCalls && c.hasAttmpt {
				o.derived(model.MetricRetries, c.ls, &d.g, model.MetricRetries, c.ls, c.attempts, c.calls)
			}
		}
	}
	// Hedges: the opt-in hedges histogram's sum (calls without hedges are
	// not observed).
	each(grCallHedges, func(f *model.Family, s *model.Sample, ls model.Labels, _ string) {
		if f.Type == model.Histogram || f.Type == model.Summary {
			o.counter(model.MetricHedges, ls, s.Sum)
		}
	})
	return o.snapshot(snap)
}
