package dialect_test

import (
	"testing"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
)

// OpenTelemetry HTTP client: one try per measurement, its outcome from
// the status, else error.type; originals and retries only where the
// tries carry http.request.resend_count; UTF-8 names read alike.
func TestOTelHTTP(t *testing.T) {
	const body = `# TYPE http_client_request_duration_seconds histogram
http_client_request_duration_seconds_bucket{server_address="api",server_port="443",http_request_method="GET",http_response_status_code="200",le="+Inf"} 90
http_client_request_duration_seconds_sum{server_address="api",server_port="443",http_request_method="GET",http_response_status_code="200"} 9
http_client_request_duration_seconds_count{server_address="api",server_port="443",http_request_method="GET",http_response_status_code="200"} 90
http_client_request_duration_seconds_bucket{server_address="api",server_port="443",http_request_method="GET",http_response_status_code="503",error_type="503",le="+Inf"} 6
http_client_request_duration_seconds_sum{server_address="api",server_port="443",http_request_method="GET",http_response_status_code="503",error_type="503"} 0.6
http_client_request_duration_seconds_count{server_address="api",server_port="443",http_request_method="GET",http_response_status_code="503",error_type="503"} 6
http_client_request_duration_seconds_bucket{server_address="api",server_port="443",http_request_method="GET",error_type="*net.OpError",le="+Inf"} 3
http_client_request_duration_seconds_sum{server_address="api",server_port="443",http_request_method="GET",error_type="*net.OpError"} 0.3
http_client_request_duration_seconds_count{server_address="api",server_port="443",http_request_method="GET",error_type="*net.OpError"} 3
http_client_request_duration_seconds_bucket{server_address="api",server_port="443",http_request_method="GET",error_type="context.DeadlineExceeded",le="+Inf"} 1
http_client_request_duration_seconds_sum{server_address="api",server_port="443",http_request_method="GET",error_type="context.DeadlineExceeded"} 2
http_client_request_duration_seconds_count{server_address="api",server_port="443",http_request_method="GET",error_type="context.DeadlineExceeded"} 1
`
	d, _ := dialect.New(dialect.NameOTelHTTP)
	fams := parse(t, body)
	if !d.Detect(fams) {
		t.Fatal("not detected")
	}
	s := d.Translate(snapOf(fams))
	contractOnly(t, s)
	a := []string{dep, "api"}
	want(t, s, 100, model.MetricAttempts, a...)
	for outcome, v := range map[string]float64{model.OutcomeSuccess: 90, model.OutcomeTemporaryError: 9, model.OutcomeTimeout: 1, model.OutcomeCancelled: 0} {
		want(t, s, v, model.MetricAttempts, append(a, out, outcome)...)
	}
	for _, f := range []string{model.MetricOriginals, model.MetricRetries, model.MetricResults} {
		absent(t, s, f)
	}
	if h := histogramOf(t, s, model.MetricAttemptDuration, append(a, out, model.OutcomeTimeout)...); h.Count != 1 || h.Sum != 2 {
		t.Errorf("timeout try duration = %+v", h)
	}

	// The real client's fixture (otelhttptest): tries numbered by
	// http.request.resend_count.
	s2 := translate(t, dialect.NameOTelHTTP, "otel_http_client.prom")
	contractOnly(t, s2)
	l := []string{dep, "127.0.0.1"}
	orig, okO := sum(s2, model.MetricOriginals, l...)
	retr, okR := sum(s2, model.MetricRetries, l...)
	att, okA := sum(s2, model.MetricAttempts, l...)
	tmp, _ := sum(s2, model.MetricAttempts, append(l, out, model.OutcomeTemporaryError)...)
	if !okO || !okR || !okA || orig+retr != att || retr == 0 || tmp == 0 {
		t.Errorf("originals %v + retries %v != attempts %v (temporary errors %v)", orig, retr, att, tmp)
	}

	// UTF-8 names (an exporter keeping the dots): the same reading.
	utf := `# TYPE "http.client.request.duration" histogram
{"http.client.request.duration_bucket","server.address"="api","http.response.status_code"="200",le="+Inf"} 4
{"http.client.request.duration_sum","server.address"="api","http.response.status_code"="200"} 0.4
{"http.client.request.duration_count","server.address"="api","http.response.status_code"="200"} 4
`
	s3 := d.Translate(snapOf(parse(t, utf)))
	want(t, s3, 4, model.MetricAttempts, append(a, out, model.OutcomeSuccess)...)
}
