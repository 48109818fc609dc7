package dialect_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

// without returns fams without the named families.
func without(fams []model.Family, names ...string) []model.Family {
	var out []model.Family
	for _, f := range fams {
		drop := false
		for _, n := range names {
			drop = drop || f.Name == n
		}
		if !drop {
			out = append(out, f)
		}
	}
	return out
}

// Kubernetes client-go: attempts per try, retries from their own counter
// (unknown without it), originals from the latency histogram's count.
func TestClientGo(t *testing.T) {
	s := translate(t, dialect.NameClientGo, "clientgo.prom")
	contractOnly(t, s)
	api := []string{dep, "10.96.0.1:443"}
	want(t, s, 1000, model.MetricAttempts, api...)
	// A host with "<error>" tries has no outcome on any attempt.
	absent(t, s, model.MetricAttempts, append(api, out, model.OutcomeTemporaryError)...)
	want(t, s, 34, model.MetricRetries, api...)
	want(t, s, 966, model.MetricOriginals, api...)
	want(t, s, 906, model.MetricOriginals, append(api, "verb", "GET")...)
	h := histogramOf(t, s, model.MetricPoolWait, api...)
	if h.Count != 940 || h.Sum != 1.88 {
		t.Errorf("rate limiter wait = %+v, want 940 tries, 1.88 s", h)
	}
	mk := []string{dep, "192.168.49.2:8443"}
	want(t, s, 40, model.MetricAttempts, append(mk, out, model.OutcomeSuccess)...)
	want(t, s, 0, model.MetricAttempts, append(mk, out, model.OutcomeTemporaryError)...)
	want(t, s, 0, model.MetricRetries, mk...) // the family exists: none yet
	for _, f := range []string{model.MetricResults, model.MetricBudgetDenied, model.MetricAdmissionRejected, model.MetricRescued} {
		absent(t, s, f)
	}

	fams := load(t, "clientgo.prom")
	nan := nan()
	for _, tc := range []struct {
		name, dependency string
		fams             []model.Family
		want             map[string]float64
	}{
		{"api server", "10.96.0.1:443", fams, map[string]float64{"attempts": 100, "originals": 96.6, "retries": 3.4,
			"provider_errors": nan, "timeouts": nan, "attempt_success": nan, "results": nan, "pool_wait_mean": 0.002}},
		{"no transport errors", "192.168.49.2:8443", fams, map[string]float64{"attempts": 4, "originals": 4, "retries": 0,
			"provider_errors": 0, "timeouts": 0, "attempt_success": 1, "results": nan}},
		// client-go < 1.27, or a registry without the retries vector:
		// retries unknown, not 0.
		{"no retries family", "192.168.49.2:8443", without(fams, "rest_client_request_retries_total"),
			map[string]float64{"attempts": 4, "originals": 4, "retries": nan}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig := windowSignals(t, tc.fams, tc.dependency)
			checkSignals(t, map[string]model.Value{"attempts": sig.AttemptsPerS, "originals": sig.OriginalsPerS,
				"retries": sig.RetriesPerS, "provider_errors": sig.ProviderErrorsPerS, "timeouts": sig.TimeoutsPerS,
				"attempt_success": sig.AttemptSuccess, "results": sig.SuccessesPerS, "pool_wait_mean": sig.PoolWaitMean}, tc.want)
		})
	}
}

// The first "<error>" of a host turns its attempts into unsplit series
// holding the host's history: a baseline, never a burst.
func TestClientGoFirstTransportErrorIsBaseline(t *testing.T) {
	d, _ := dialect.New(dialect.NameClientGo)
	scrape := func(ok, errs float64) *model.Snapshot {
		var b strings.Builder
		b.WriteString("# TYPE rest_client_requests_total counter\n")
		b.WriteString("rest_client_requests_total{code=\"200\",host=\"h\",method=\"GET\"} " + ftoa(ok) + "\n")
		if errs > 0 {
			b.WriteString("rest_client_requests_total{code=\"<error>\",host=\"h\",method=\"GET\"} " + ftoa(errs) + "\n")
		}
		return snapOf(parse(t, b.String()))
	}
	for i, st := range []struct {
		ok, errs float64
		split    bool
		total    float64
		baseline bool
	}{
		{10, 0, true, 10, false},
		{20, 1, false, 21, true},
		{30, 2, false, 32, false},
	} {
		s := d.Translate(scrape(st.ok, st.errs))
		f := family(s, model.MetricAttempts)
		if f == nil {
			t.Fatalf("step %d: no attempts", i)
		}
		want(t, s, st.total, model.MetricAttempts, dep, "h")
		for _, sm := range f.Samples {
			if sm.Labels.Has(model.LabelOutcome) != st.split {
				t.Errorf("step %d: %v, want split %v", i, sm.Labels, st.split)
			}
			if !st.split && sm.Baseline != st.baseline {
				t.Errorf("step %d: baseline %v, want %v", i, sm.Baseline, st.baseline)
			}
		}
	}
}

// parse reads a text exposition written by a test.
func parse(t *testing.T, body string) []model.Family {
	t.Helper()
	fams, err := expo.ExpfmtParser{}.Parse("t", []byte(body), "text/plain; version=0.0.4", nil)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Traefik: originals and results per router request, attempts per service
// try; the retries counter is read only once it moved.
func TestTraefik(t *testing.T) {
	s := translate(t, dialect.NameTraefik, "traefik.prom")
	contractOnly(t, s)
	w := []string{dep, "whoami@docker"}
	want(t, s, 975, model.MetricOriginals, w...)
	want(t, s, 987, model.MetricAttempts, w...)
	want(t, s, 950, model.MetricAttempts, append(w, out, model.OutcomeSuccess)...)
	want(t, s, 35, model.MetricAttempts, append(w, out, model.OutcomeTemporaryError)...)
	want(t, s, 2, model.MetricAttempts, append(w, out, model.OutcomeCancelled)...)
	want(t, s, 950, model.MetricResults, append(w, res, model.ResultSuccess)...)
	want(t, s, 8+5, model.MetricResults, append(w, res, model.ResultProviderError)...)
	want(t, s, 10, model.MetricResults, append(w, res, model.ResultCapacityRejected)...)
	// The router's 429s the service never answered: rateLimit's 10.
	want(t, s, 10, model.MetricAdmissionRejected, w...)
	want(t, s, 2, model.MetricResults, append(w, res, model.ResultCancelled)...)
	want(t, s, 975, model.MetricResults, w...)
	if h := histogramOf(t, s, model.MetricRequestDuration, w...); h.Count != 975 {
		t.Errorf("router latency count %v, want 975", h.Count)
	}
	absent(t, s, model.MetricRetries)
	for _, f := range []string{model.MetricBudgetDenied, model.MetricRescued, model.MetricActiveCalls} {
		absent(t, s, f)
	}

	base := load(t, "traefik.prom")
	retries := func(v string) []model.Family {
		return append(without(base), parse(t, "# TYPE traefik_service_retries_total counter\ntraefik_service_retries_total{service=\"whoami@docker\"} "+v+"\n")...)
	}
	nan := nan()
	for _, tc := range []struct {
		name string
		fams []model.Family
		want map[string]float64
	}{
		{"no retries family", base, map[string]float64{"originals": 97.5, "attempts": 98.7, "retries": nan,
			"effective_success": 950.0 / 975, "provider_errors": 3.5, "timeouts": 0, "attempt_success": 950.0 / 987}},
		// The counter sits at 0 in every Traefik so far: unknown.
		{"retries at 0", retries("0"), map[string]float64{"retries": nan}},
		// A Traefik that counts them.
		{"retries counted", retries("22"), map[string]float64{"retries": 2.2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig := windowSignals(t, tc.fams, "whoami@docker")
			checkSignals(t, map[string]model.Value{"originals": sig.OriginalsPerS, "attempts": sig.AttemptsPerS,
				"retries": sig.RetriesPerS, "effective_success": sig.EffectiveSuccess, "provider_errors": sig.ProviderErrorsPerS,
				"timeouts": sig.TimeoutsPerS, "attempt_success": sig.AttemptSuccess}, tc.want)
		})
	}
}

// go-grpc-middleware v2's prometheus provider (and go-grpc-prometheus):
// calls started are originals, calls handled by grpc-go's code names are
// results; attempts are not counted.
func TestGRPCPrometheus(t *testing.T) {
	s := translate(t, dialect.NameGRPCPrometheus, "grpc_middleware_v2.prom")
	contractOnly(t, s)
	g := []string{dep, "helloworld.Greeter"}
	want(t, s, 120, model.MetricOriginals, g...)
	want(t, s, 120, model.MetricOriginals, append(g, "grpc_method", "SayHello")...)
	for result, v := range map[string]float64{
		model.ResultSuccess:       101, // OK and NotFound: the server's answer
		model.ResultProviderError: 12, model.ResultDeadlineExhausted: 5, model.ResultCancelled: 2,
		model.ResultPermanentError: 0, model.ResultCapacityRejected: 0,
	} {
		want(t, s, v, model.MetricResults, append(g, res, result)...)
	}
	if h := histogramOf(t, s, model.MetricRequestDuration, g...); h.Count != 120 || bucketAt(t, h, 0.05) != 110 {
		t.Errorf("handling time = %+v", h)
	}
	want(t, s, 10, model.MetricOriginals, dep, "grpc.health.v1.Health")
	for _, f := range []string{model.MetricAttempts, model.MetricRetries, model.MetricBudgetDenied, model.MetricAdmissionRejected} {
		absent(t, s, f)
	}
	sig := windowSignals(t, load(t, "grpc_middleware_v2.prom"), "helloworld.Greeter")
	nan := nan()
	checkSignals(t, map[string]model.Value{"originals": sig.OriginalsPerS, "effective_success": sig.EffectiveSuccess,
		"attempts": sig.AttemptsPerS, "amplification": sig.Amplification, "retries": sig.RetriesPerS},
		map[string]float64{"originals": 12, "effective_success": 101.0 / 120, "attempts": nan, "amplification": nan, "retries": nan})
}

// Polly v8: executions are originals, ExecutionAttempt durations attempts
// by attempt.handled, OnRetry events retries (else the attempts numbered
// 1 and up; else unknown).
func TestPolly(t *testing.T) {
	s := translate(t, dialect.NamePolly, "polly_v8.prom")
	contractOnly(t, s)
	p := []string{dep, "catalog-standard"}
	want(t, s, 200, model.MetricOriginals, p...)
	want(t, s, 230, model.MetricAttempts, p...)
	want(t, s, 191, model.MetricAttempts, append(p, out, model.OutcomeSuccess)...)
	want(t, s, 34, model.MetricAttempts, append(p, out, model.OutcomeTemporaryError)...)
	want(t, s, 5, model.MetricAttempts, append(p, out, model.OutcomePermanentError)...)
	want(t, s, 30, model.MetricRetries, p...)
	want(t, s, 3, model.MetricRequestTimeouts, p...)
	h := histogramOf(t, s, model.MetricAttemptDuration, append(p, out, model.OutcomePermanentError)...)
	if h.Count != 5 || h.Sum != 0.15 || bucketAt(t, h, 0.025) != 2 {
		t.Errorf("attempt duration (ms scaled) = %+v", h)
	}
	absent(t, s, model.MetricResults) // a returned 503 ends without an exception: no results
	absent(t, s, model.MetricAdmissionRejected)

	fams := load(t, "polly_v8.prom")
	events := "resilience_polly_strategy_events_total"
	attempts := "resilience_polly_strategy_attempt_duration_milliseconds"
	firstOnly := func() []model.Family {
		out := without(fams, events)
		for i := range out {
			if out[i].Name != attempts {
				continue
			}
			f := out[i]
			f.Samples = nil
			for _, sm := range out[i].Samples {
				if sm.Labels.Get("attempt_number") == "0" {
					f.Samples = append(f.Samples, sm)
				}
			}
			out[i] = f
		}
		return out
	}()
	nan := nan()
	for _, tc := range []struct {
		name string
		fams []model.Family
		want map[string]float64
	}{
		{"OnRetry", fams, map[string]float64{"originals": 20, "attempts": 23, "retries": 3, "amplification": 23.0 / 20,
			"attempt_success": 191.0 / 230, "provider_errors": 3.9, "timeouts": 0, "results": nan}},
		// OnRetry silenced by a severity provider: the attempt numbers.
		{"no OnRetry", without(fams, events), map[string]float64{"retries": 3}},
		{"only first tries", firstOnly, map[string]float64{"retries": 0, "attempts": 20}},
		{"no retry strategy", without(fams, events, attempts), map[string]float64{"retries": nan, "attempts": nan, "originals": 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig := windowSignals(t, tc.fams, "catalog-standard")
			checkSignals(t, map[string]model.Value{"originals": sig.OriginalsPerS, "attempts": sig.AttemptsPerS,
				"retries": sig.RetriesPerS, "amplification": sig.Amplification, "attempt_success": sig.AttemptSuccess,
				"provider_errors": sig.ProviderErrorsPerS, "timeouts": sig.TimeoutsPerS, "results": sig.SuccessesPerS}, tc.want)
		})
	}
}

// Kong 3.x: one series per request Kong answered, source telling Kong's
// own answers (a 429: the rate-limiting plugin) from the upstream's;
// Kong's balancer retries are nowhere.
func TestKong(t *testing.T) {
	s := translate(t, dialect.NameKong, "kong_3.x.prom")
	contractOnly(t, s)
	k := []string{dep, "orders"}
	want(t, s, 1000, model.MetricOriginals, k...)
	for result, v := range map[string]float64{
		model.ResultSuccess: 925, model.ResultProviderError: 35, model.ResultCapacityRejected: 40,
		model.ResultCancelled: 0, model.ResultDeadlineExhausted: 0,
	} {
		want(t, s, v, model.MetricResults, append(k, res, result)...)
	}
	want(t, s, 40, model.MetricAdmissionRejected, append(k, rsn, "rate")...)
	if h := histogramOf(t, s, model.MetricRequestDuration, k...); h.Count != 1000 || h.Sum != 42 || bucketAt(t, h, 0.1) != 950 {
		t.Errorf("request latency (ms scaled) = %+v", h)
	}
	for _, f := range []string{model.MetricAttempts, model.MetricRetries, model.MetricBudgetDenied} {
		absent(t, s, f)
	}
	// 2.x: kong_http_status has no source; a 429 is the provider's.
	old := parse(t, "# TYPE kong_http_status counter\nkong_http_status{code=\"429\",service=\"orders\",route=\"r\"} 4\nkong_http_status{code=\"200\",service=\"orders\",route=\"r\"} 6\n")
	d, _ := dialect.New(dialect.NameKong)
	s2 := d.Translate(snapOf(old))
	want(t, s2, 10, model.MetricOriginals, k...)
	want(t, s2, 4, model.MetricResults, append(k, res, model.ResultProviderError)...)
	absent(t, s2, model.MetricAdmissionRejected)
}

// APISIX: one series per request; a failure without an upstream node is
// APISIX's own refusal (limit-count's 503), one with a node the upstream's.
func TestAPISIX(t *testing.T) {
	s := translate(t, dialect.NameAPISIX, "apisix_3.x.prom")
	contractOnly(t, s)
	r := []string{dep, "1"}
	want(t, s, 880, model.MetricOriginals, r...)
	for result, v := range map[string]float64{
		model.ResultSuccess: 800, model.ResultProviderError: 30, model.ResultCapacityRejected: 50, model.ResultCancelled: 0,
	} {
		want(t, s, v, model.MetricResults, append(r, res, result)...)
	}
	absent(t, s, model.MetricOriginals, append(r, "node", "10.0.0.7")...) // node is per request, not identity
	h := histogramOf(t, s, model.MetricRequestDuration, r...)
	if h.Count != 880 || h.Sum != 106.05 || bucketAt(t, h, 0.02) != 750 {
		t.Errorf("request latency (type request, ms scaled) = %+v", h)
	}
	for _, f := range []string{model.MetricAttempts, model.MetricRetries, model.MetricAdmissionRejected} {
		absent(t, s, f)
	}
	sig := windowSignals(t, load(t, "apisix_3.x.prom"), "1")
	checkSignals(t, map[string]model.Value{"originals": sig.OriginalsPerS, "effective_success": sig.EffectiveSuccess,
		"attempts": sig.AttemptsPerS}, map[string]float64{"originals": 88, "effective_success": 800.0 / 880, "attempts": nan()})
}

// aws-sdk-go-v2: the call duration's count is originals, the attempts
// counter attempts, both by rpc.service with the operations summed;
// errors are not read, so attempts have no outcome and retries are
// unknown. Over the window (counters doubled, 10 s) DynamoDB's
// amplification is 130/100.
func TestAWSSDK(t *testing.T) {
	s := translate(t, dialect.NameAWSSDK, "aws_sdk_go_v2.prom")
	contractOnly(t, s)
	d := []string{dep, "DynamoDB"}
	want(t, s, 100, model.MetricOriginals, d...)
	want(t, s, 130, model.MetricAttempts, d...)
	want(t, s, 40, model.MetricOriginals, dep, "S3")
	want(t, s, 40, model.MetricAttempts, dep, "S3")
	h := histogramOf(t, s, model.MetricRequestDuration, d...)
	if h.Count != 100 || bucketAt(t, h, 0.1) != 80 {
		t.Errorf("DynamoDB request duration = %+v, want 100 calls, 80 within 100 ms", h)
	}
	absent(t, s, model.MetricRetries)
	absent(t, s, model.MetricResults)
	sig := windowSignals(t, load(t, "aws_sdk_go_v2.prom"), "DynamoDB")
	nan := nan()
	checkSignals(t, map[string]model.Value{"originals": sig.OriginalsPerS, "attempts": sig.AttemptsPerS,
		"attempts_per_original": sig.AttemptsPerOriginal, "retries": sig.RetriesPerS, "provider_errors": sig.ProviderErrorsPerS},
		map[string]float64{"originals": 10, "attempts": 13, "attempts_per_original": 1.3, "retries": nan, "provider_errors": nan})
}
