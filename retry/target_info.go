package retry

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// ServiceInfo names the service a process is, the way OpenTelemetry's
// resource does. RegisterTargetInfo exports it so that retrytop (and any
// OpenTelemetry-aware tool) can tell which service a scrape target is and
// link its callers' dependency labels to it, without anyone typing names.
type ServiceInfo struct {
	// Name is service.name: the name callers use as their dependency
	// label for this service ("checkout", "payments"). Required.
	Name string
	// Namespace is service.namespace (a Kubernetes namespace, a team);
	// optional.
	Namespace string
	// Instance is service.instance.id (a pod, a host:port); optional.
	Instance string
}

// RegisterTargetInfo registers target_info{service_name, service_namespace,
// service_instance_id} 1 on reg, the series OpenTelemetry's Prometheus
// exporter writes for a resource. It is an option on one registry, never
// the global one, so a process serving several registries names each.
// Empty optional fields are left out. It returns the registration error
// (a second call on the same registry conflicts).
func RegisterTargetInfo(reg prometheus.Registerer, s ServiceInfo) error {
	if s.Name == "" {
		return errEmptyServiceName
	}
	labels := prometheus.Labels{"service_name": s.Name}
	if s.Namespace != "" {
		labels["service_namespace"] = s.Namespace
	}
	if s.Instance != "" {
		labels["service_instance_id"] = s.Instance
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "target_info",
		Help:        "Target metadata: the service this process is (OpenTelemetry resource attributes).",
		ConstLabels: labels,
	})
	g.Set(1)
	return reg.Register(g)
}

var errEmptyServiceName = errors.New("retry: ServiceInfo.Name must not be empty")
