package dialect_test

import (
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/collect/dialect"
	"github.com/retrytop/retrytop/model"
)

// windowSignals stores two scrapes of fams, the second with every counter
// doubled, 10 s apart, and returns the signals of one dependency over them.
func windowSignals(t *testing.T, fams []model.Family, dependency string) model.Signals {
	t.Helper()
	st := model.NewStore(model.StoreConfig{})
	tr := dialect.Auto()
	for i, k := range []float64{1, 2} {
		s, _, err := tr.Translate("", &model.Snapshot{Target: "t", Time: t0.Add(time.Duration(i) * 10 * time.Second), Families: scaled(fams, k)})
		if err != nil {
			t.Fatal(err)
		}
		st.Append(s)
	}
	return analysis.SignalsFor(st, "t", dependency, t0.UnixMilli(), t0.Add(10*time.Second).UnixMilli())
}

// checkSignals compares named signals with wanted values; a NaN want means
// absent.
func checkSignals(t *testing.T, got map[string]model.Value, wants map[string]float64) {
	t.Helper()
	for name, w := range wants {
		v := got[name]
		switch {
		case w != w && v.OK:
			t.Errorf("%s = %v, want absent", name, v.V)
		case w == w && !v.OK:
			t.Errorf("%s absent, want %v", name, w)
		case w == w && (v.V-w > 1e-9 || w-v.V > 1e-9):
			t.Errorf("%s = %v, want %v", name, v.V, w)
		}
	}
}

// A TCP-proxy cluster (Consul's local_app) counts connections in its
// upstream_rq_* stats and never completes an HTTP response: none of it is
// read as requests (issue 16: it showed 17.6 attempts/s, 0 originals and
// 0 % success). The HTTP cluster beside it is read as before.
func TestEnvoyTCPProxyCluster(t *testing.T) {
	s := translate(t, dialect.NameEnvoy, "envoy_tcp_proxy.prom")
	contractOnly(t, s)
	for _, f := range []string{model.MetricOriginals, model.MetricAttempts, model.MetricRetries, model.MetricRescued,
		model.MetricBudgetDenied, model.MetricAdmissionRejected, model.MetricActiveCalls, model.MetricPendingCalls,
		model.MetricRequestDuration} {
		absent(t, s, f, dep, "local_app")
	}
	b := []string{dep, "billing"}
	want(t, s, 400, model.MetricOriginals, b...)
	want(t, s, 420, model.MetricAttempts, b...)
	want(t, s, 3, model.MetricAttempts, append(b, out, model.OutcomeTimeout)...)
	want(t, s, 20, model.MetricRetries, b...)
	want(t, s, 2, model.MetricActiveCalls, b...)

	fams := load(t, "envoy_tcp_proxy.prom")
	nan := nan()
	for _, tc := range []struct {
		dependency string
		want       map[string]float64
	}{
		{"local_app", map[string]float64{"originals": nan, "attempts": nan, "attempt_success": nan, "provider_errors": nan, "retries": nan}},
		{"billing", map[string]float64{"originals": 40, "attempts": 42, "retries": 2, "attempt_success": nan, "provider_errors": nan, "timeouts": 0.3}},
	} {
		t.Run(tc.dependency, func(t *testing.T) {
			sig := windowSignals(t, fams, tc.dependency)
			checkSignals(t, map[string]model.Value{"originals": sig.OriginalsPerS, "attempts": sig.AttemptsPerS,
				"attempt_success": sig.AttemptSuccess, "provider_errors": sig.ProviderErrorsPerS,
				"retries": sig.RetriesPerS, "timeouts": sig.TimeoutsPerS}, tc.want)
		})
	}
}

// A cluster left out while its first requests were in flight is read from
// the scrape in which one completed; its counters then hold the requests
// of before, so they are baselines, not increases from 0.
func TestEnvoyClusterReadLateIsBaseline(t *testing.T) {
	d, _ := dialect.New(dialect.NameEnvoy)
	scrape := func(total, completed float64) *model.Snapshot {
		ls := model.LabelsFromPairs("envoy_cluster_name", "c")
		return snapOf([]model.Family{
			{Name: "envoy_cluster_upstream_rq_total", Type: model.Counter, Samples: []model.Sample{{Labels: ls, Value: total}}},
			{Name: "envoy_cluster_upstream_rq_completed", Type: model.Counter, Samples: []model.Sample{{Labels: ls, Value: completed}}},
		})
	}
	for i, st := range []struct {
		total, completed float64
		read, baseline   bool
	}{
		{0, 0, true, false},  // nothing moved: 0 attempts is a fact
		{5, 0, false, false}, // requests in flight or a TCP proxy: left out
		{9, 4, true, true},   // one completed: read, from a baseline
		{12, 7, true, false}, // read as usual
	} {
		s := d.Translate(scrape(st.total, st.completed))
		f := family(s, model.MetricAttempts)
		if !st.read {
			if f != nil {
				t.Errorf("step %d: attempts emitted for a cluster without a completed request", i)
			}
			continue
		}
		if f == nil || len(f.Samples) != 1 {
			t.Fatalf("step %d: attempts %+v", i, f)
		}
		if f.Samples[0].Value != st.total || f.Samples[0].Baseline != st.baseline {
			t.Errorf("step %d: attempts %v baseline %v, want %v %v", i, f.Samples[0].Value, f.Samples[0].Baseline, st.total, st.baseline)
		}
	}
}
