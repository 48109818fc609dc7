package dialect_test

import (
	"testing"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

// TestProxyIdentity: HAProxy is named by its one frontend that
// serves traffic, an Envoy sidecar by the host of its inbound cluster when
// the cluster carries one (Istio before 1.10); otherwise no name is made
// up and the target keeps its job or host:port.
func TestProxyIdentity(t *testing.T) {
	for _, c := range []struct {
		name, dialect, body string
		want                []string // service_name, service_namespace; nil: no target_info
	}{
		{"haproxy real 2.6.12: fe, prometheus frontend skipped", dialect.NameHAProxy, "", []string{"fe"}},
		{"haproxy two service frontends", dialect.NameHAProxy, `# TYPE haproxy_backend_http_requests_total counter
haproxy_backend_http_requests_total{proxy="be"} 10
# TYPE haproxy_frontend_http_requests_total counter
haproxy_frontend_http_requests_total{proxy="shop"} 5
haproxy_frontend_http_requests_total{proxy="pay"} 5
haproxy_frontend_http_requests_total{proxy="stats"} 5
`, nil},
		{"envoy inbound with host (Istio < 1.10)", dialect.NameEnvoy, `# TYPE envoy_cluster_upstream_rq_total counter
envoy_cluster_upstream_rq_total{envoy_cluster_name="inbound|9080|http|reviews.default.svc.cluster.local"} 10
envoy_cluster_upstream_rq_total{envoy_cluster_name="outbound|9080||ratings.default.svc.cluster.local"} 10
`, []string{"reviews", "default"}},
		{"envoy inbound without host (Istio >= 1.10)", dialect.NameEnvoy, `# TYPE envoy_cluster_upstream_rq_total counter
envoy_cluster_upstream_rq_total{cluster_name="inbound|80||"} 904
`, nil},
		{"envoy two inbound services", dialect.NameEnvoy, `# TYPE envoy_cluster_upstream_rq_total counter
envoy_cluster_upstream_rq_total{envoy_cluster_name="inbound|9080|http|reviews.default.svc.cluster.local"} 10
envoy_cluster_upstream_rq_total{envoy_cluster_name="inbound|9090|grpc|ratings.default.svc.cluster.local"} 10
`, nil},
		{"plain envoy", dialect.NameEnvoy, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := dialect.New(c.dialect)
			if err != nil {
				t.Fatal(err)
			}
			var fams []model.Family
			switch {
			case c.body != "":
				if fams, err = (expo.ExpfmtParser{}).Parse("fixture", []byte(c.body), "text/plain; version=0.0.4", nil); err != nil {
					t.Fatal(err)
				}
			case c.dialect == dialect.NameHAProxy:
				fams = load(t, "haproxy_2.6.12.prom")
			default:
				fams = load(t, "envoy.prom")
			}
			s := d.Translate(snapOf(fams))
			if c.want == nil {
				absent(t, s, model.MetricTargetInfo)
				return
			}
			pairs := []string{"service_name", c.want[0]}
			if len(c.want) > 1 {
				pairs = append(pairs, "service_namespace", c.want[1])
			}
			want(t, s, 1, model.MetricTargetInfo, pairs...)
		})
	}
}
