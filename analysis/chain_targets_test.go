package analysis

import (
	"fmt"
	"testing"

	"github.com/retrytop/retrytop/model"
)

func TestChainOfTargets(t *testing.T) {
	rows := []model.Signals{
		{Target: "browser", Dependency: "app"},
		{Target: "app", Dependency: "client"},
		{Target: "client", Dependency: "provider"},
		{Target: "client", Dependency: "cache"},
	}
	tests := []struct {
		targets []string
		want    string
	}{
		{[]string{"browser", "app", "client"}, "[{browser app} {app client} {client cache}]"},
		{[]string{"browser", "app"}, "[{browser app} {app client}]"},
		{[]string{"ghost"}, "[]"},
		{nil, "[]"},
	}
	for _, tt := range tests {
		c := ChainOfTargets("c", tt.targets, rows)
		if got := fmt.Sprint(c.Hops); got != tt.want && !(tt.want == "[]" && len(c.Hops) == 0) {
			t.Errorf("ChainOfTargets(%v) = %s, want %s", tt.targets, got, tt.want)
		}
	}
}
