package dialect_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
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
		case w != w && v.OK():
			t.Errorf("%s = %v, want absent", name, v.V())
		case w == w && !v.OK():
			t.Errorf("%s absent, want %v", name, w)
		case w == w && (v.V()-w > 1e-9 || w-v.V() > 1e-9):
			t.Errorf("%s = %v, want %v", name, v.V(), w)
		}
	}
}

// A TCP-proxy cluster (Consul's local_app) counts connections in its
// upstream_rq_* stats and never completes an HTTP response: none of it is
// read as requests (a real exposition showed 17.6 attempts/s, 0
// originals and 0 % success). The HTTP cluster beside it is read as before.
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
		{"local_app", map[string]float64{"originals": nan, "attempts": nan, "attempt_success": nan, "provider_errors": nan, "retries": nan,
			"temporary_errors": nan, "permanent_errors": nan}},
		// Envoy counts no error per attempt (they read 0 and attempt
		// success 0 % once): absent, whatever upstream_rq_total does.
		{"billing", map[string]float64{"originals": 40, "attempts": 42, "retries": 2, "attempt_success": nan, "provider_errors": nan, "timeouts": 0.3,
			"temporary_errors": nan, "permanent_errors": nan}},
	} {
		t.Run(tc.dependency, func(t *testing.T) {
			sig := windowSignals(t, fams, tc.dependency)
			checkSignals(t, map[string]model.Value{"originals": sig.OriginalsPerS, "attempts": sig.AttemptsPerS,
				"attempt_success": sig.AttemptSuccess, "provider_errors": sig.ProviderErrorsPerS,
				"retries": sig.RetriesPerS, "timeouts": sig.TimeoutsPerS,
				"temporary_errors": sig.TemporaryErrorsPerS, "permanent_errors": sig.PermanentErrorsPerS}, tc.want)
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

// HAProxy 2.3.10 (a real dump): responses with code="other" (a stream
// freed without a status: the client left first) are cancelled results,
// and a 1xx (101, a WebSocket tunnel whose outcome no counter tells) is no
// result, so that a tunnel backend does not show 100 % success while its
// response errors grow.
func TestHAProxyOtherAndTunnels(t *testing.T) {
	s := translate(t, dialect.NameHAProxy, "haproxy_2.3.10.prom")
	contractOnly(t, s)
	for _, tc := range []struct {
		proxy                                         string
		originals, success, cancelled, capacity, prov float64
	}{
		// 2xx+3xx+4xx, other, connection errors, 5xx - connection
		// errors: together the 31527507 requests, of which 1 was a
		// tunnel (1xx), so within 1 of the originals.
		{"proxy1", 31527507 - 1, 21338013 + 10004 + 10170758, 5657, 1, 3074},
		// The 4130401 tunnels are in no result, nor in the originals.
		{"proxy2", 0, 3, 1, 1, 0},
	} {
		t.Run(tc.proxy, func(t *testing.T) {
			p := []string{dep, tc.proxy}
			want(t, s, tc.originals, model.MetricOriginals, p...)
			want(t, s, tc.success, model.MetricResults, append(p, res, model.ResultSuccess)...)
			want(t, s, tc.cancelled, model.MetricResults, append(p, res, model.ResultCancelled)...)
			want(t, s, tc.capacity, model.MetricResults, append(p, res, model.ResultCapacityRejected)...)
			want(t, s, tc.prov, model.MetricResults, append(p, res, model.ResultProviderError)...)
		})
	}
	fams := load(t, "haproxy_2.3.10.prom")
	nan := nan()
	for _, tc := range []struct {
		proxy string
		want  map[string]float64
	}{
		// Every original has its result: effective success is the
		// share of 2xx-4xx among them.
		{"proxy1", map[string]float64{"completed": 3152750.7, "effective_success": 31518775.0 / 31527507, "cancelled": 565.7, "attempt_success": nan,
			"amplification": (19864884 + 11661922 - 1) / (31527507 - 1.0)}},
		// Only the five non-tunnel requests have a result. Its attempts
		// less one per tunnel leave 1323 connections for 4 admitted
		// requests: 1322 sessions never sent an HTTP request (sessions
		// 4131723, requests 4130401), which HAProxy counts as connection
		// attempts all the same.
		{"proxy2", map[string]float64{"completed": 0.5, "effective_success": 0.6, "cancelled": 0.1, "attempt_success": nan,
			"originals": 0, "attempts": 132.3, "amplification": 1323.0 / 4}},
	} {
		t.Run(tc.proxy+"/signals", func(t *testing.T) {
			sig := windowSignals(t, fams, tc.proxy)
			checkSignals(t, map[string]model.Value{"completed": sig.CompletedPerS, "effective_success": sig.EffectiveSuccess,
				"cancelled": sig.ResultsPerS[model.ResultCancelled], "attempt_success": sig.AttemptSuccess,
				"originals": sig.OriginalsPerS, "attempts": sig.AttemptsPerS, "amplification": sig.Amplification}, tc.want)
		})
	}
}

// Linkerd 2.17: an EgressNetwork is many destinations; its series are keyed
// by hostname when the proxy labels them, by the network without it, and a
// Service parent keeps its name (not every destination of the network
// one row, all-egress-traffic).
func TestLinkerdEgressByHostname(t *testing.T) {
	s := translate(t, dialect.NameLinkerd, "linkerd_egress.prom")
	contractOnly(t, s)
	for _, tc := range []struct {
		dependency                  string
		originals, success, provErr float64
	}{
		// -1: no series (the route status series is created on its first
		// response; analysis reads a result the family lacks as 0).
		{"httpbin.org", 697 + 45 + 63, 697 + 45 + 63, -1}, // a 403 is an answer
		{"api.github.com", 100, 90, 10},
		{"all-egress-traffic", 30, 30, -1}, // hostname="": the network
		{"books", 50, 50, -1},
	} {
		t.Run(tc.dependency, func(t *testing.T) {
			d := []string{dep, tc.dependency}
			want(t, s, tc.originals, model.MetricOriginals, d...)
			want(t, s, tc.success, model.MetricResults, append(d, res, model.ResultSuccess)...)
			if tc.provErr < 0 {
				absent(t, s, model.MetricResults, append(d, res, model.ResultProviderError)...)
			} else {
				want(t, s, tc.provErr, model.MetricResults, append(d, res, model.ResultProviderError)...)
			}
		})
	}
	// The hostname is consumed; the network stays as an identity label.
	want(t, s, 100, model.MetricOriginals, dep, "api.github.com", "parent_name", "all-egress-traffic", "hostname", "!")
}

// Pools: where the acquire timer is a summary or a count and a sum (mean
// only), the window's mean wait is pool_wait_mean_s and the quantiles stay
// absent; pending threads are the queue depth.
func TestPoolWaitMeanAndQueueDepth(t *testing.T) {
	nan := nan()
	for _, tc := range []struct {
		fixture, dependency string
		want                map[string]float64
	}{
		// Micrometer's timer: 3000 acquisitions, 1.5 s; 2 threads waiting.
		{"resilience4j_spring.prom", "HikariPool-1", map[string]float64{"mean": 0.0005, "p50": nan, "p99": nan, "queue_depth": 2}},
		// HikariCP's own tracker, a summary in nanoseconds: 100, 5 ms.
		{"pools_hikari_native.prom", "db", map[string]float64{"mean": 0.00005, "p50": nan, "p99": nan, "queue_depth": 1}},
		// database/sql: 40 waits, 2 s; no gauge of threads waiting.
		{"pools_gosql.prom", "orders", map[string]float64{"mean": 0.05, "p50": nan, "p99": nan, "queue_depth": nan}},
		// A proxy's pending queue is a queue depth too.
		{"envoy.prom", "payments", map[string]float64{"mean": nan, "queue_depth": 3}},
		{"haproxy_2.6.12.prom", "provider", map[string]float64{"mean": nan, "queue_depth": 0}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			sig := windowSignals(t, load(t, tc.fixture), tc.dependency)
			checkSignals(t, map[string]model.Value{"mean": sig.PoolWaitMean, "p50": sig.PoolWaitP50,
				"p99": sig.PoolWaitP99, "queue_depth": sig.QueueDepth}, tc.want)
			// The JSON report names them so.
			b, err := json.Marshal(sig)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			for key, v := range map[string]model.Value{"pool_wait_mean_s": sig.PoolWaitMean, "queue_depth": sig.QueueDepth} {
				got, ok := m[key]
				if !ok || (v.OK() && got != v.V()) || (!v.OK() && got != nil) {
					t.Errorf("JSON %s = %v (present %v), want %v", key, got, ok, v)
				}
			}
		})
	}
}
