package ui

import (
	"cmp"
	"math"
	"strings"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// worstRow is the row the dashboard follows until the user moves the
// cursor: the one with the most severe finding about it, then the
// largest amplification × failing attempts/s (provider errors plus
// timeouts), which is how much extra load a struggling provider gets.
// Rows with neither are never chosen (ok false: keep the cursor where
// it is). Findings name a row by its target or by the service the
// target belongs to (findings are evaluated per service).
func worstRow(f *model.Frame, fs []analysis.Finding) (model.Key, bool) {
	if f == nil || len(f.Rows) == 0 {
		return model.Key{}, false
	}
	svc := make(map[string]string, len(f.Targets))
	for i := range f.Targets {
		svc[f.Targets[i].Name] = f.Targets[i].Service
	}
	best, bestSev, bestScore, found := -1, analysis.Severity(0), 0.0, false
	for i := range f.Rows {
		r := &f.Rows[i]
		sev := analysis.Severity(0)
		for j := range fs {
			fd := &fs[j]
			if fd.Chain != "" || fd.Dependency != r.Dependency {
				continue
			}
			if fd.Target == r.Target || (svc[r.Target] != "" && fd.Target == svc[r.Target]) {
				sev = max(sev, fd.Severity)
			}
		}
		score := failLoad(r)
		if sev == 0 && score <= 0 {
			continue
		}
		better := !found || sev > bestSev || (sev == bestSev && score > bestScore)
		if !better && sev == bestSev && score == bestScore {
			// Equal rows: the first by name, so the choice is stable.
			b := &f.Rows[best]
			better = cmp.Or(strings.Compare(r.Target, b.Target), strings.Compare(r.Dependency, b.Dependency)) < 0
		}
		if better {
			best, bestSev, bestScore, found = i, sev, score, true
		}
	}
	if !found {
		return model.Key{}, false
	}
	return f.Rows[best].Key(), true
}

// failLoad is amplification × failing attempts/s; absent signals count
// as nothing known (0), never as a reason to choose a row.
func failLoad(r *model.Signals) float64 {
	ok := func(v model.Value) float64 {
		if !v.OK() || math.IsNaN(v.V()) || math.IsInf(v.V(), 0) || v.V() < 0 {
			return 0
		}
		return v.V()
	}
	return ok(r.Amplification) * (ok(r.ProviderErrorsPerS) + ok(r.TimeoutsPerS))
}
