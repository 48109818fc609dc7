package dialect

import (
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Istio's standard metrics, exported by each sidecar's Envoy next to its
// cluster stats (Istio tag names: cluster_name, codes left in stat names).
const (
	istioRequests = "istio_requests_total"
	istioDuration = "istio_request_duration_milliseconds"
)

type istio struct{ g guard }

func (*istio) Name() string { return NameIstio }

func (*istio) Families() []string {
	return append([]string{istioRequests, istioDuration}, envoyFamilies...)
}

// Detect: istio_requests_total is present.
func (*istio) Detect(fams []model.Family) bool { return index(fams).has(istioRequests) }

// Supersedes: an Istio sidecar's Envoy stats are read by this dialect.
func (*istio) Supersedes() []string { return []string{NameEnvoy} }

// istioLabels are consumed (or identify the dependency) and not kept.
var istioLabels = []string{"reporter", "response_code", "response_flags", "grpc_response_status",
	"destination_service", "destination_service_name", "destination_service_namespace"}

// istioDependency names the destination the way Envoy's outbound cluster
// does: its FQDN (destination_service), else its short name.
func istioDependency(ls model.Labels) string {
	d := ls.Get("destination_service")
	if d == "" || d == "unknown" {
		d = ls.Get("destination_service_name")
	}
	return d
}

// istioResult classifies one reported request from its response code and
// Envoy response flags (comma-joined, "-" for none).
func istioResult(code, flags string) (result, reason string) {
	has := func(f string) bool {
		for _, x := range strings.Split(flags, ",") {
			if x == f {
				return true
			}
		}
		return false
	}
	switch {
	case has("UO"):
		// Upstream overflow: a circuit breaker refused the request (a
		// local 503), or refused a retry and the upstream's error was
		// forwarded; the two cannot be told apart.
		return model.ResultCapacityRejected, "concurrency"
	case has("RL"):
		return model.ResultCapacityRejected, "rate"
	case has("OM"):
		return model.ResultCapacityRejected, "concurrency"
	case has("UT"):
		return model.ResultDeadlineExhausted, ""
	case has("DC"):
		return model.ResultCancelled, ""
	case has("URX"), has("UF"), has("UH"), has("UC"), has("UR"):
		return model.ResultProviderError, ""
	case has("NR"), has("NC"):
		return model.ResultPermanentError, ""
	}
	switch code {
	case "0", "":
		return model.ResultCancelled, ""
	case "429":
		return model.ResultProviderError, ""
	}
	switch statusClass(code) {
	case '1', '2', '3', '4':
		return model.ResultSuccess, ""
	case '5':
		return model.ResultProviderError, ""
	}
	return model.ResultPermanentError, ""
}

func (d *istio) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	d.g.begin()
	defer d.g.end()
	if f := r[istioRequests]; f != nil {
		for i := range f.Samples {
			s := &f.Samples[i]
			v := scalar(f, s)
			switch s.Labels.Get("reporter") {
			case "source":
				dep := istioDependency(s.Labels)
				if dep == "" {
					continue
				}
				ls := relabel(s.Labels, dep, istioLabels...)
				o.counter(model.MetricOriginals, ls, v)
				o.seed(model.MetricResults, ls, model.LabelResult, allResults...)
				res, reason := istioResult(s.Labels.Get("response_code"), s.Labels.Get("response_flags"))
				o.counter(model.MetricResults, ls.With(model.LabelResult, res), v)
				if reason != "" {
					o.counter(model.MetricAdmissionRejected, ls.With(model.LabelReason, reason), v)
				}
			case "destination":
				// Requests this workload received, every caller's
				// attempts: the server-side family analysis joins onto
				// the callers' rows.
				o.counter(model.MetricServerReceived, relabelNoDep(s.Labels, istioLabels...), v)
			}
		}
	}
	if f := r[istioDuration]; f != nil && f.Type == model.Histogram {
		for i := range f.Samples {
			s := &f.Samples[i]
			switch s.Labels.Get("reporter") {
			case "source":
				dep := istioDependency(s.Labels)
				if dep == "" {
					continue
				}
				res, _ := istioResult(s.Labels.Get("response_code"), s.Labels.Get("response_flags"))
				ls := relabel(s.Labels, dep, istioLabels...).With(model.LabelResultClass, resultClass(res))
				o.histogram(model.MetricRequestDuration, ls, s, 0.001)
			case "destination":
				o.histogram(model.MetricServerServiceTime, relabelNoDep(s.Labels, istioLabels...), s, 0.001)
			}
		}
	}
	if f := r[istioRequests]; f != nil {
		istioIdentity(f, o)
	}
	translateEnvoy(r, o, &d.g, envoyParts{})
	istioStatsOff(r, o)
	return o.snapshot(snap)
}

// istioIdentity says which workload the sidecar belongs to, as
// OpenTelemetry's target_info would (analysis.Identities): the source of
// what it sent, or else the destination of what it received; the
// canonical service first, then the app label, then the workload. Callers
// name it by its Kubernetes service (destination_service), which the
// linker ties to this name and namespace.
func istioIdentity(f *model.Family, o *out) {
	pick := func(ls model.Labels, side string) (string, string) {
		for _, k := range []string{side + "_canonical_service", side + "_app", side + "_workload"} {
			if v := ls.Get(k); v != "" && v != "unknown" {
				return v, ls.Get(side + "_workload_namespace")
			}
		}
		return "", ""
	}
	for _, side := range []string{"source", "destination"} {
		for i := range f.Samples {
			ls := f.Samples[i].Labels
			if ls.Get("reporter") != side {
				continue
			}
			if name, ns := pick(ls, side); name != "" {
				id := model.LabelsFromPairs("service_name", name)
				if ns != "" {
					id = id.With("service_namespace", ns)
				}
				o.gauge(model.MetricTargetInfo, id, 1)
				return
			}
		}
	}
}

// relabelNoDep is relabel without a dependency label (server-side series).
func relabelNoDep(ls model.Labels, drop ...string) model.Labels {
	out := relabel(ls, "", drop...)
	return out.Without(model.LabelDependency)
}
