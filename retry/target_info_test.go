package retry

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRegisterTargetInfo(t *testing.T) {
	tests := []struct {
		name string
		info ServiceInfo
		want string
	}{
		{"name only", ServiceInfo{Name: "checkout"}, `target_info{service_name="checkout"} 1`},
		{"every attribute", ServiceInfo{Name: "checkout", Namespace: "shop", Instance: "pod-7"},
			`target_info{service_instance_id="pod-7",service_name="checkout",service_namespace="shop"} 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			if err := RegisterTargetInfo(reg, tt.info); err != nil {
				t.Fatal(err)
			}
			want := "# HELP target_info Target metadata: the service this process is (OpenTelemetry resource attributes).\n# TYPE target_info gauge\n" + tt.want + "\n"
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "target_info"); err != nil {
				t.Error(err)
			}
			if err := RegisterTargetInfo(reg, tt.info); err == nil {
				t.Error("a second target_info on one registry was accepted")
			}
		})
	}
	if err := RegisterTargetInfo(prometheus.NewRegistry(), ServiceInfo{}); err == nil || !strings.Contains(err.Error(), "Name") {
		t.Errorf("empty name: err = %v", err)
	}
}
