package analysis

import (
	"strings"

	"github.com/retrytop/retrytop/model"
)

// TargetDialects lists the dialects a target is read with, from its
// status' Dialect ("envoy+pools", "prometheus-api:istio+envoy", ""): in
// detection order, without the "prometheus-api" source prefix, never nil
// (an empty list: no dialect read it, or a recording that does not say).
// It is what reports show as targets[].dialects.
func TargetDialects(t model.TargetStatus) []string {
	s := t.Dialect
	if rest, ok := strings.CutPrefix(s, "prometheus-api"); ok {
		s = strings.TrimPrefix(rest, ":")
	}
	out := []string{}
	for _, n := range strings.Split(s, "+") {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}
