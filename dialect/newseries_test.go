package dialect_test

import (
	"testing"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

var acme = dialect.Mapping{
	Name:            "acme",
	DependencyLabel: "upstream",
	Signals: []dialect.Signal{
		{Family: model.MetricOriginals, Metric: "acme_calls_total"},
		{Family: model.MetricAdmissionRejected, Metric: "acme_rejected_total", Labels: map[string]string{"reason": "queue"}},
		{Family: model.MetricRequestDuration, Metric: "acme_call_latency_ms", Scale: 0.001},
	},
}

func parseOM(t *testing.T, body string) []model.Family {
	t.Helper()
	fams, err := expo.ExpfmtParser{}.Parse("t", []byte(body), "application/openmetrics-text; version=1.0.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// TestTranslateCarriesRestartSignals: process_start_time_seconds leaves the
// translated snapshot as its ProcessStart; created timestamps reach the
// contract series (the earliest of a sum's parts, unknown if one part's
// is); a dialect detected late on families the target already had marks
// its first snapshot Baseline.
func TestTranslateCarriesRestartSignals(t *testing.T) {
	tr, err := dialect.NewTranslator(dialect.Config{Custom: []dialect.Mapping{acme}})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Filter(model.MetricProcessStart) {
		t.Error("the filter drops process_start_time_seconds")
	}
	fams := parseOM(t, `# TYPE acme_calls counter
acme_calls_total{upstream="billing",code="200"} 10
acme_calls_created{upstream="billing",code="200"} 1700000100
acme_calls_total{upstream="billing",code="503"} 2
acme_calls_created{upstream="billing",code="503"} 1700000050.5
acme_calls_total{upstream="search"} 1
# TYPE acme_rejected counter
acme_rejected_total{upstream="billing"} 3
acme_rejected_created{upstream="billing"} 1700000200
# TYPE acme_call_latency_ms histogram
acme_call_latency_ms_bucket{upstream="billing",le="+Inf"} 4
acme_call_latency_ms_count{upstream="billing"} 4
acme_call_latency_ms_sum{upstream="billing"} 40
acme_call_latency_ms_created{upstream="billing"} 1700000300
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1699999999.5
# EOF
`)
	out, _, err := tr.Translate("", &model.Snapshot{Target: "a", Time: t0, Families: fams})
	if err != nil {
		t.Fatal(err)
	}
	if out.ProcessStart != 1699999999.5 || out.Baseline {
		t.Errorf("ProcessStart %v Baseline %v, want 1699999999.5 false", out.ProcessStart, out.Baseline)
	}
	created := map[string]int64{}
	for _, f := range out.Families {
		if f.Name == model.MetricProcessStart {
			t.Errorf("%s stored: it is only the restart signal", f.Name)
		}
		for _, s := range f.Samples {
			created[f.Name+s.Labels.String()] = s.CreatedMs
		}
	}
	for k, want := range map[string]int64{
		`retry_originals_total{code="200",dependency="billing"}`:              1700000100000,
		`retry_originals_total{code="503",dependency="billing"}`:              1700000050500,
		`retry_originals_total{dependency="search"}`:                          0,
		`retry_admission_rejected_total{dependency="billing",reason="queue"}`: 1700000200000,
		`retry_request_duration_seconds{dependency="billing"}`:                1700000300000,
	} {
		if got, ok := created[k]; !ok || got != want {
			t.Errorf("%s created %d (present %v), want %d", k, got, ok, want)
		}
	}

	// A sum of parts: the earliest, unknown when one is unknown.
	m := acme
	m.Name = "acme2"
	m.DependencyLabel, m.Dependency = "", "all"
	tr2, _ := dialect.NewTranslator(dialect.Config{Custom: []dialect.Mapping{m}})
	out, _, _ = tr2.Translate("", &model.Snapshot{Target: "a", Time: t0, Families: fams})
	for _, f := range out.Families {
		if f.Name == model.MetricOriginals {
			for _, s := range f.Samples {
				if s.Labels.Get("code") == "" && s.CreatedMs != 0 {
					t.Errorf("%s: created %d, want 0 (one part has none)", s.Labels, s.CreatedMs)
				}
			}
		}
	}
}

// TestTranslateBaselineOnLateDetection: Istio's dialect, detected when
// istio_requests_total first shows, reads Envoy stats the target already
// had; its first snapshot is a baseline. A dialect whose families are all
// new is not.
func TestTranslateBaselineOnLateDetection(t *testing.T) {
	envoy := load(t, "envoy.prom")
	istio := load(t, "istio_sidecar.prom")
	var istioOnly []model.Family
	for _, f := range istio {
		if f.Name == "istio_requests_total" {
			istioOnly = append(istioOnly, f)
		}
	}
	tests := []struct {
		name   string
		scrape [][]model.Family
		want   []bool
	}{
		{"istio after envoy stats", [][]model.Family{envoy, append(append([]model.Family{}, envoy...), istioOnly...), envoy}, []bool{false, true, false}},
		{"a dialect on new families", [][]model.Family{nil, envoy, envoy}, []bool{false, false, false}},
		{"first scrape", [][]model.Family{istio}, []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := dialect.Auto()
			for i, fams := range tt.scrape {
				out, _, err := tr.Translate("", &model.Snapshot{Target: "a", Time: t0.Add(time.Duration(i) * time.Second), Families: fams})
				if err != nil {
					t.Fatal(err)
				}
				if out.Baseline != tt.want[i] {
					t.Errorf("scrape %d: Baseline %v, want %v", i, out.Baseline, tt.want[i])
				}
			}
		})
	}
}

// TestDerivedFirstLateIsBaseline: a difference of counters a dialect
// derives first on a target it already translated (one side appeared
// beside an older other) is marked Baseline, so its first value, which
// holds the older side's history, is not counted as an increase; one
// derived at the target's first scrape is not marked (nothing to count
// from then anyway).
func TestDerivedFirstLateIsBaseline(t *testing.T) {
	before := `# TYPE haproxy_backend_http_requests_total counter
haproxy_backend_http_requests_total{proxy="p"} 1000
# TYPE haproxy_backend_connection_attempts_total counter
haproxy_backend_connection_attempts_total{proxy="p"} 900
# TYPE haproxy_backend_http_responses_total counter
haproxy_backend_http_responses_total{proxy="p",code="2xx"} 700
haproxy_backend_http_responses_total{proxy="p",code="5xx"} 250
`
	after := before + `# TYPE haproxy_backend_connection_errors_total counter
haproxy_backend_connection_errors_total{proxy="p"} 3
`
	parse := func(s string) []model.Family {
		fams, err := expo.ExpfmtParser{}.Parse("t", []byte(s), "text/plain; version=0.0.4", nil)
		if err != nil {
			t.Fatal(err)
		}
		return fams
	}
	tests := []struct {
		name    string
		scrapes []string
		want    map[string]bool // series -> Baseline at the last scrape
	}{
		{"errors appear late", []string{before, after}, map[string]bool{
			`retry_results_total{dependency="p",result="provider_error"}`:   true,
			`retry_retries_total{dependency="p"}`:                           true,
			`retry_admission_rejected_total{dependency="p",reason="queue"}`: false, // a raw series of its own
		}},
		{"all there at the first scrape", []string{after}, map[string]bool{
			`retry_results_total{dependency="p",result="provider_error"}`: false,
			`retry_retries_total{dependency="p"}`:                         false,
		}},
		{"all there from the start", []string{after, after}, map[string]bool{
			`retry_results_total{dependency="p",result="provider_error"}`: false,
			`retry_retries_total{dependency="p"}`:                         false,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := dialect.Auto()
			var out *model.Snapshot
			for i, body := range tt.scrapes {
				var err error
				out, _, err = tr.Translate("", &model.Snapshot{Target: "a", Time: t0.Add(time.Duration(i) * time.Second), Families: parse(body)})
				if err != nil {
					t.Fatal(err)
				}
			}
			got := map[string]bool{}
			for _, f := range out.Families {
				for _, s := range f.Samples {
					got[f.Name+s.Labels.String()] = s.Baseline
				}
			}
			for k, want := range tt.want {
				if b, ok := got[k]; !ok || b != want {
					t.Errorf("%s: Baseline %v (present %v), want %v", k, b, ok, want)
				}
			}
		})
	}
}
