package analysis

import (
	"slices"
	"testing"

	"github.com/retrytop/retrytop/model"
)

func TestTargetDialects(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", []string{}},
		{"native", []string{"native"}},
		{"envoy+pools", []string{"envoy", "pools"}},
		{"prometheus-api", []string{}},
		{"prometheus-api:acme+istio+envoy", []string{"acme", "istio", "envoy"}},
		{"linkerd1+otel-http", []string{"linkerd1", "otel-http"}},
	} {
		got := TargetDialects(model.TargetStatus{Dialect: c.in})
		if got == nil || !slices.Equal(got, c.want) {
			t.Errorf("TargetDialects(%q) = %#v, want %#v", c.in, got, c.want)
		}
	}
}
