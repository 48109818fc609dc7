package analysis

import (
	"fmt"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Codes of the breaker, quota, method and settings rules
// (docs/findings.md).
const (
	CodeUnsafeRetries     = "UNSAFE_RETRIES"
	CodeBreakerStuckOpen  = "BREAKER_STUCK_OPEN"
	CodeQuotaNotRefilling = "QUOTA_NOT_REFILLING"
	CodeEmitterDataOff    = "EMITTER_DATA_OFF"
)

// quotaRefillShare is the share of what a retry quota lost during the
// failures that it must win back once they stop; less, after
// MetastableAfter of successes, is QUOTA_NOT_REFILLING. A token bucket
// refilled by successes (the AWS SDKs' retry quota, gRPC's throttling)
// wins back far more than a tenth in that time at any traffic worth a
// finding.
const quotaRefillShare = 0.1

// unsafeRetries fires when attempts of non-idempotent requests (POST,
// PATCH, where the emitter labels the method) exceed their originals:
// each extra attempt re-sent a request the provider may already have
// carried out (a second charge, a duplicate order).
func unsafeRetries(s *model.Signals, _ baseline, th Thresholds) (Finding, bool) {
	orig, ok1 := s.UnsafeOriginalsPerS.Get()
	att, ok2 := s.UnsafeAttemptsPerS.Get()
	if !ok1 || !ok2 || orig <= 0 {
		return Finding{}, false
	}
	extra := att - orig
	if extra < th.MinEventsPerS || extra < th.RetryingShare*orig {
		return Finding{}, false
	}
	f := Finding{Code: CodeUnsafeRetries, Severity: SeverityWarning}
	f.Message = fmt.Sprintf("%s: retries re-send a non-idempotent request: %s POST/PATCH attempts for %s originals (%s re-sent); make it idempotent (an Idempotency-Key the provider deduplicates) or stop retrying it",
		hop(s), perS(att), perS(orig), perS(extra))
	f.Evidence.add("unsafe_attempts_per_s", att)
	f.Evidence.add("unsafe_originals_per_s", orig)
	f.Evidence.add("resent_per_s", extra)
	return f, true
}

// settingText is what EMITTER_DATA_OFF says of each setting.
var settingText = map[string]string{
	model.SettingIstioProxyStats: "Istio's proxyStatsMatcher keeps Envoy's retry stats (upstream_rq_retry*) out of the sidecar's metrics: include them (proxyStatsMatcher.inclusionRegexps, docs/dialects.md \"Istio\")",
	model.SettingEnvoyUsedOnly:   "Envoy hides its zero stats (/stats/prometheus?usedonly or a stats matcher): retries and breakers are unknown until they first move; scrape without usedonly",
	model.SettingTraefikRouters:  "Traefik's router metrics are off, so its originals are unknown: set metrics.prometheus.addRoutersLabels=true",
	model.SettingTraefikServices: "Traefik's service metrics are off, so its attempts are unknown: set metrics.prometheus.addServicesLabels=true",
}

// emitterDataOff fires when a dialect recognised the emitter but a
// setting of the emitter switched off what retrytop needs: the retry
// signals are unknown, not 0, and the fix is a setting, not a mapping.
func emitterDataOff(s *model.Signals, _ baseline, _ Thresholds) (Finding, bool) {
	if len(s.SettingsOff) == 0 {
		return Finding{}, false
	}
	texts := make([]string, 0, len(s.SettingsOff))
	for _, k := range s.SettingsOff {
		t, ok := settingText[k]
		if !ok {
			t = "setting " + k + " hides retry data"
		}
		texts = append(texts, t)
	}
	f := Finding{Code: CodeEmitterDataOff, Severity: SeverityWarning}
	f.Message = fmt.Sprintf("%s: its retry data is switched off: %s", hop(s), strings.Join(texts, "; "))
	f.Evidence.add("settings_off", float64(len(s.SettingsOff)))
	return f, true
}

// timelineFindings are the rules that need a row's history: a breaker
// still open after its dependency answers again, a retry quota that does
// not refill after failures stopped.
func timelineFindings(k model.Key, tl []model.Signals, th Thresholds) []Finding {
	var out []Finding
	if f, ok := breakerStuckOpen(k, tl, th); ok {
		out = append(out, f)
	}
	if f, ok := quotaNotRefilling(k, tl, th); ok {
		out = append(out, f)
	}
	return out
}

// failing reports whether a bin's attempts fail: at least MinEventsPerS
// errors and timeouts, at least FailureShare of the attempts.
func failing(s *model.Signals, th Thresholds) bool {
	att, ok := s.AttemptsPerS.Get()
	if !ok || att <= 0 || (!s.ProviderErrorsPerS.OK() && !s.TimeoutsPerS.OK()) {
		return false
	}
	bad := s.ProviderErrorsPerS.Or(0) + s.TimeoutsPerS.Or(0)
	return bad >= th.MinEventsPerS && bad/att >= th.FailureShare
}

// answering reports whether a bin shows the dependency serving again:
// the attempts that got through (a breaker's probes, other callers
// sharing the row) succeed, at least MinEventsPerS of them with under
// FailureShare failing; or the dependency's own service time is measured
// and back at its baseline.
func answering(s *model.Signals, base model.Value, th Thresholds) bool {
	if att, ok := s.AttemptsPerS.Get(); ok && att >= th.MinEventsPerS && (s.ProviderErrorsPerS.OK() || s.TimeoutsPerS.OK()) {
		if (s.ProviderErrorsPerS.Or(0)+s.TimeoutsPerS.Or(0))/att < th.FailureShare {
			return true
		}
	}
	v := s.DependencyServiceTimeP50
	return v.OK() && base.OK() && s.DependencyReceivedPerS.Or(0) >= th.MinEventsPerS &&
		!rising(v, base, th.TriggerRise, th.LatencyRiseMin.Seconds())
}

// breakerStuckOpen fires when a row's breaker stays open (or half-open
// and still refusing) for at least MetastableAfter while its dependency
// answers: the calls it refuses would have succeeded. Critical when it is
// still so at the timeline's end.
func breakerStuckOpen(k model.Key, tl []model.Signals, th Thresholds) (Finding, bool) {
	base := model.Absent
	for i := range tl {
		base = minValue(base, tl[i].DependencyServiceTimeP50)
	}
	var best Finding
	found := false
	var longest float64
	for i := 0; i < len(tl); {
		if !stuckBin(&tl[i], base, th) {
			i++
			continue
		}
		j := i
		var refused, width float64
		for j < len(tl) && stuckBin(&tl[j], base, th) {
			w := rateSeconds(&tl[j])
			refused += tl[j].BreakerRejectedPerS.Or(0) * w
			width += w
			j++
		}
		held := float64(tl[j-1].EndMs-tl[i].StartMs) / 1000
		if held >= th.MetastableAfter.Seconds() && held > longest {
			longest, found = held, true
			best = Finding{Code: CodeBreakerStuckOpen, Severity: SeverityWarning, Target: k.Target, Dependency: k.Dependency,
				Start: msTime(tl[i].StartMs), End: msTime(tl[j-1].EndMs)}
			when := ", then closed"
			if j == len(tl) {
				best.Severity, when = SeverityCritical, " and still is"
			}
			counted := ""
			if countsRefusals(tl[i:j]) && width > 0 {
				counted = fmt.Sprintf(", refusing %s", perS(refused/width))
			}
			best.Message = fmt.Sprintf("%s -> %s: the circuit breaker stayed open for %s while %s answered again%s%s: shorten its open wait or let half-open probes close it",
				k.Target, k.Dependency, secs(held), k.Dependency, counted, when)
			best.Evidence.add("open_s", held)
			if counted != "" {
				best.Evidence.add("breaker_rejected_per_s", refused/width)
			}
			best.Evidence.addValue("breaker_state", tl[j-1].BreakerState)
		}
		i = j
	}
	return best, found
}

// stuckBin: the breaker is not closed, refuses calls (or its emitter
// counts no refusals), and the dependency answers.
func stuckBin(s *model.Signals, base model.Value, th Thresholds) bool {
	st, ok := s.BreakerState.Get()
	if !ok || st < model.BreakerHalfOpen {
		return false
	}
	if r, ok := s.BreakerRejectedPerS.Get(); ok && r < th.MinEventsPerS {
		return false
	}
	return answering(s, base, th)
}

// quotaNotRefilling fires when a retry quota (retry_budget_balance) fell
// during failures and, for at least MetastableAfter after the failures
// stopped with successes flowing, won back under quotaRefillShare of what
// it lost: retries stay refused after the dependency recovered.
func quotaNotRefilling(k model.Key, tl []model.Signals, th Thresholds) (Finding, bool) {
	first, last := -1, -1
	for i := range tl {
		if failing(&tl[i], th) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 || last == len(tl)-1 {
		return Finding{}, false
	}
	before := model.Absent
	for i := 0; i <= first; i++ {
		if v := tl[i].BudgetBalance; v.OK() && (!before.OK() || v.V() > before.V()) {
			before = v
		}
	}
	low := model.Absent
	for i := first; i <= last; i++ {
		low = minValue(low, tl[i].BudgetBalance)
	}
	end := tl[len(tl)-1].BudgetBalance
	if !before.OK() || !low.OK() || !end.OK() || before.V()-low.V() < th.BudgetBalanceLow || low.V() > before.V()/2 {
		return Finding{}, false
	}
	for i := last + 1; i < len(tl); i++ {
		if !tl[i].SuccessesPerS.OK() && !tl[i].AttemptSuccess.OK() {
			return Finding{}, false
		}
		if tl[i].SuccessesPerS.Or(0) < th.MinEventsPerS && tl[i].AttemptsPerS.Or(0)*tl[i].AttemptSuccess.Or(0) < th.MinEventsPerS {
			return Finding{}, false
		}
	}
	quiet := float64(tl[len(tl)-1].EndMs-tl[last].EndMs) / 1000
	refilled := end.V() - low.V()
	if quiet < th.MetastableAfter.Seconds() || refilled >= quotaRefillShare*(before.V()-low.V()) {
		return Finding{}, false
	}
	f := Finding{Code: CodeQuotaNotRefilling, Severity: SeverityWarning, Target: k.Target, Dependency: k.Dependency,
		Start: msTime(tl[last].EndMs), End: msTime(tl[len(tl)-1].EndMs)}
	f.Message = fmt.Sprintf("%s -> %s: the retry quota fell from %s to %s during the failures and is at %s %s after they stopped: it does not refill, so retries stay refused after the dependency recovered",
		k.Target, k.Dependency, num(before.V()), num(low.V()), num(end.V()), secs(quiet))
	f.Evidence.add("quota_before", before.V())
	f.Evidence.add("quota_low", low.V())
	f.Evidence.add("quota_now", end.V())
	f.Evidence.add("quiet_s", quiet)
	return f, true
}

// countsRefusals reports whether every bin counts the breaker's refusals.
func countsRefusals(tl []model.Signals) bool {
	for i := range tl {
		if !tl[i].BreakerRejectedPerS.OK() {
			return false
		}
	}
	return len(tl) > 0
}
