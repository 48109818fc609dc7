package dialect

import (
	"strings"

	"github.com/retrytop/retrytop/model"
)

// OpenTelemetry HTTP semantic conventions, client side (semconv 1.26+,
// stable since 1.23): http.client.request.duration, one measurement per
// HTTP request sent, with server.address, server.port,
// http.response.status_code and error.type, as the OTel Prometheus
// exporter writes it (http_client_request_duration_seconds; exporters
// with UTF-8 names keep the dots). go.opentelemetry.io/contrib's otelhttp
// Transport emits it (see integration/dialect/otelhttptest). The server
// address is the dependency.
//
// A measurement is one try when otelhttp is the transport under a retrying
// client (go-retryablehttp, a hand-written loop): attempts. Which tries
// were retries is told only by http.request.resend_count (semconv:
// "the ordinal number of request resending attempt"), which otelhttp
// does not set on metrics: an instrumentation adds it (otelhttp's
// WithMetricAttributesFn). On a target whose series carry it, tries
// with 0 (or none) are originals and the others retries; elsewhere both
// are unknown.
const (
	ohDuration   = "http_client_request_duration_seconds"
	ohDurationU  = "http_client_request_duration" // UTF-8 names without unit suffix, dots replaced
	ohServer     = "server_address"
	ohStatus     = "http_response_status_code"
	ohErrorType  = "error_type"
	ohResend     = "http_request_resend_count"
	ohFamilyDots = "http.client.request.duration"
)

type otelHTTP struct{}

func (otelHTTP) Name() string { return NameOTelHTTP }

func (otelHTTP) Families() []string {
	return []string{ohDuration, ohFamilyDots, ohFamilyDots + "_seconds"}
}

// Detect: the client request duration, in either naming.
func (otelHTTP) Detect(fams []model.Family) bool {
	r := ohIndex(fams)
	return r.has(ohDuration, ohDurationU)
}

// ohIndex indexes the client duration families by their name with dots
// turned into underscores.
func ohIndex(fams []model.Family) raw {
	r := raw{}
	for i := range fams {
		if n := fams[i].Name; strings.HasPrefix(n, "http") {
			r[strings.ReplaceAll(n, ".", "_")] = &fams[i]
		}
	}
	return r
}

// ohOutcome classifies one try: by its status when it has one (as
// httpOutcome), else by error.type: a timeout or deadline, a cancel, or
// another transport error (temporary). Neither: no outcome.
func ohOutcome(status, errType string) string {
	if status != "" {
		return httpOutcome(status)
	}
	e := strings.ToLower(errType)
	switch {
	case e == "":
		return ""
	case strings.Contains(e, "timeout") || strings.Contains(e, "deadline"):
		return model.OutcomeTimeout
	case strings.Contains(e, "cancel"):
		return model.OutcomeCancelled
	}
	return model.OutcomeTemporaryError
}

func (otelHTTP) Translate(snap *model.Snapshot) *model.Snapshot {
	r := ohIndex(snap.Families)
	o := newOut()
	f := r.first(ohDuration, ohDurationU)
	if f == nil || f.Type != model.Histogram {
		return o.snapshot(snap)
	}
	resend := false
	for i := range f.Samples {
		resend = resend || grpcLabels(f.Samples[i].Labels).Get(ohResend) != ""
	}
	for i := range f.Samples {
		s := &f.Samples[i]
		ls := grpcLabels(s.Labels)
		srv := ls.Get(ohServer)
		if srv == "" {
			continue
		}
		id := relabel(ls, srv, ohServer, ohStatus, ohErrorType, ohResend)
		v := scalar(f, s)
		o.seed(model.MetricAttempts, id, model.LabelOutcome, allOutcomes...)
		ols := id
		if out := ohOutcome(ls.Get(ohStatus), ls.Get(ohErrorType)); out != "" {
			ols = id.With(model.LabelOutcome, out)
		}
		o.counter(model.MetricAttempts, ols, v)
		o.histogram(model.MetricAttemptDuration, ols, s, 1)
		if resend {
			o.counter(model.MetricRetries, id, 0)
			if n := ls.Get(ohResend); n == "" || n == "0" {
				o.counter(model.MetricOriginals, id, v)
			} else {
				o.counter(model.MetricRetries, id, v)
			}
		}
	}
	return o.snapshot(snap)
}
