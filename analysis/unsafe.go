package analysis

import (
	"slices"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Sides of row.unsafe.
const (
	unsafeOriginals = iota
	unsafeAttempts
)

// methodLabels are the labels emitters name the request method by:
// the contract's and Traefik's method, OpenTelemetry's HTTP semantic
// conventions (http.request.method, and http.method before 1.21).
var methodLabels = []string{model.LabelMethod, "http_request_method", "http_method"}

// unsafeMethod reports whether a series counts requests whose method is
// not idempotent (RFC 9110: POST and PATCH; PUT and DELETE are).
func unsafeMethod(ls model.Labels) bool {
	for _, n := range methodLabels {
		switch strings.ToUpper(ls.Get(n)) {
		case "POST", "PATCH":
			return true
		}
	}
	return false
}

// breakersAndSettings fills the row's breaker, unsafe-method and
// setting signals over one window.
func (r *row) breakersAndSettings(s *model.Signals, w *window) {
	s.RetryLimitExceededPerS = w.rate(r.sum(cLimitExceeded, w))
	s.RequestTimeoutsPerS = w.rate(r.sum(cRequestTimeouts, w))
	s.BreakerState = r.gauge(gBreaker, w, maxOf)
	for _, b := range s.AdmissionRejectedBy {
		if b.Labels.Get(model.LabelReason) == model.ReasonCircuitOpen {
			s.BreakerRejectedPerS = model.Some(s.BreakerRejectedPerS.Or(0) + b.PerS)
		}
	}
	for side, out := range [2]*model.Value{&s.UnsafeOriginalsPerS, &s.UnsafeAttemptsPerS} {
		*out = w.rate(groupIncrease(r.unsafe[side], w))
	}
	for i, pts := range r.gauges[gSettingOff] {
		if v, ok := w.gauge(pts); ok && v > 0 && !slices.Contains(s.SettingsOff, r.settings[i]) {
			s.SettingsOff = append(s.SettingsOff, r.settings[i])
		}
	}
	slices.Sort(s.SettingsOff)
}
