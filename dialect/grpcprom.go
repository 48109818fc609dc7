package dialect

import (
	"strings"

	"github.com/retrytop/retrytop/model"
)

// go-grpc-middleware v2's prometheus provider
// (providers/prometheus, ClientMetrics) and the legacy go-grpc-prometheus:
// the same client families, counted by a client interceptor around
// whatever is below it in the chain. The gRPC service called
// (grpc_service, "pkg.Service") is the dependency; there is no target
// label.
const (
	gpStarted  = "grpc_client_started_total"    // {grpc_method, grpc_service, grpc_type}: when the call starts
	gpHandled  = "grpc_client_handled_total"    // + grpc_code: when it ends
	gpHandling = "grpc_client_handling_seconds" // opt-in histogram, no grpc_code
	gpService  = "grpc_service"
	gpCode     = "grpc_code"
)

type grpcProm struct{}

func (grpcProm) Name() string { return NameGRPCPrometheus }

func (grpcProm) Families() []string { return []string{gpStarted, gpHandled, gpHandling} }

// Detect: grpc_client_started_total or grpc_client_handled_total.
func (grpcProm) Detect(fams []model.Family) bool { return index(fams).has(gpStarted, gpHandled) }

// Translate reads the interceptor's calls as the originals, which holds
// when the metrics interceptor is outside the retry interceptor (chained
// before it) and for grpc-go's own retries (service config), which run
// below every interceptor. Chained the other way round, these are
// attempts; nothing in the metrics says which (docs/dialects.md).
func (grpcProm) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	each := func(name string, fn func(f *model.Family, s *model.Sample, ls model.Labels)) {
		f := r[name]
		if f == nil {
			return
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			if svc := s.Labels.Get(gpService); svc != "" {
				fn(f, s, relabel(s.Labels, svc, gpService, gpCode))
			}
		}
	}
	each(gpStarted, func(f *model.Family, s *model.Sample, ls model.Labels) {
		o.counter(model.MetricOriginals, ls, scalar(f, s))
	})
	each(gpHandled, func(f *model.Family, s *model.Sample, ls model.Labels) {
		o.seed(model.MetricResults, ls, model.LabelResult, allResults...)
		o.counter(model.MetricResults, ls.With(model.LabelResult, grpcResult(gpCanonical(s.Labels.Get(gpCode)))), scalar(f, s))
	})
	each(gpHandling, func(f *model.Family, s *model.Sample, ls model.Labels) {
		if f.Type == model.Histogram {
			o.histogram(model.MetricRequestDuration, ls, s, 1)
		}
	})
	return o.snapshot(snap)
}

// gpCanonical turns grpc-go's code names (codes.Code.String(): "OK",
// "DeadlineExceeded", "Canceled"), which the interceptor writes, into the
// canonical ones grpcOutcome knows ("DEADLINE_EXCEEDED", "CANCELLED").
func gpCanonical(code string) string {
	if code == "Canceled" {
		return "CANCELLED"
	}
	var b strings.Builder
	for i, c := range code {
		if i > 0 && c >= 'A' && c <= 'Z' && code[i-1] >= 'a' && code[i-1] <= 'z' {
			b.WriteByte('_')
		}
		b.WriteRune(c)
	}
	return strings.ToUpper(b.String())
}

// gpGoName is the inverse of gpCanonical for a canonical name or number
// (numbers stay).
func gpGoName(canonical string) string {
	if canonical == "CANCELLED" {
		return "Canceled"
	}
	if canonical == "" || canonical == "OK" || canonical[0] >= '0' && canonical[0] <= '9' {
		return canonical
	}
	var b strings.Builder
	for _, w := range strings.Split(canonical, "_") {
		b.WriteString(w[:1] + strings.ToLower(w[1:]))
	}
	return b.String()
}
