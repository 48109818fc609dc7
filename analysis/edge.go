package analysis

import (
	"slices"

	"github.com/retrytop/retrytop/model"
)

// A mesh edge seen from both ends (kiali's source and destination
// reporters): the caller's sidecar counts each request once
// (reporter="source", the row's originals), the callee's sidecar counts
// every attempt that reached it, by the caller's workload
// (reporter="destination", the dependency's received series). Their
// ratio is the edge's amplification, derived without the Envoy retry
// stats Istio keeps off by default.

// sourced is one received series of a server and its caller's workload.
type sourced struct {
	key string
	pts points
}

// workloadKey names the workload a series' requests came from (Istio's
// source_workload in source_workload_namespace); "" when unknown.
func workloadKey(ls model.Labels) string {
	w, ns := ls.Get("source_workload"), ls.Get("source_workload_namespace")
	if w == "" || w == "unknown" {
		return ""
	}
	return ns + "/" + w
}

// addSource records the workload a row's originals come from.
func (r *row) addSource(ls model.Labels) {
	if k := workloadKey(ls); k != "" && !slices.Contains(r.sources, k) {
		r.sources = append(r.sources, k)
	}
}

// edge fills EdgeReceivedPerS and EdgeAmplification: what the dependency
// received from this row's workload over the same range, and that over
// the originals. Absent unless both ends name the workload.
func (r *row) edge(s *model.Signals, w *window) {
	sv := r.server
	if sv == nil || len(r.sources) == 0 || len(sv.bySource) == 0 {
		return
	}
	sw := sv.window(w)
	var total float64
	matched, seen := false, false
	for _, b := range sv.bySource {
		if !slices.Contains(r.sources, b.key) {
			continue
		}
		matched = true
		if inc, ok := sw.increase(b.pts); ok {
			total += inc
			seen = true
		}
	}
	if !matched {
		return
	}
	s.EdgeReceivedPerS = sw.rate(total, seen)
	s.EdgeAmplification = ratio(s.EdgeReceivedPerS, s.OriginalsPerS)
}
