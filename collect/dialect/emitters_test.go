package dialect_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/collect"
	"github.com/retrytop/retrytop/collect/dialect"
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
	fams, err := collect.ExpfmtParser{}.Parse("t", []byte(body), "text/plain; version=0.0.4", nil)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
