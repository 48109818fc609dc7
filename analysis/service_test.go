package analysis

import (
	"slices"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// checkService compares every signal of s with want (NaN: absent).
func checkService(t *testing.T, s model.ServiceSignals, want map[string]float64) {
	t.Helper()
	got := map[string]model.Value{
		"received":    s.ReceivedPerS,
		"in_flight":   s.InFlight,
		"queue_depth": s.QueueDepth,
		"oldest":      s.QueueOldestAge,
		"wait_p99":    s.QueueWaitP99,
		"svc_p50":     s.ServiceTimeP50,
		"svc_p99":     s.ServiceTimeP99,
		"2xx":         s.Responses2xxPerS,
		"429":         s.Responses429PerS,
		"503":         s.Responses503PerS,
		"other5xx":    s.ResponsesOther5xxPerS,
		"wac":         s.WorkAfterCancelPerS,
	}
	for name, v := range got {
		w, ok := want[name]
		if !ok {
			w = absent
		}
		checkValue(t, s.Target+" "+name, v, w)
	}
}

// hist returns the flat series of a one-bucket-plus-Inf histogram whose
// observations all fall in (0, le]: count per scrape as notation.
func hist(name, le, counts string, labels ...string) []ts {
	with := func(extra ...string) []string { return append(append([]string{}, labels...), extra...) }
	return []ts{
		{name + "_bucket", with("le", le), counts},
		{name + "_bucket", with("le", "+Inf"), counts},
		{name + "_count", labels, counts},
	}
}

func TestServiceSignalsSim(t *testing.T) {
	times := every(0, 1000, 6) // 5 s
	series := []ts{
		{model.MetricServerReceived, nil, "0+20x5"},
		{model.MetricServiceCompleted, nil, "0+12x5"},
		{model.MetricServerWorkAfterCancel, nil, "0+2x5"},
		{model.MetricServiceErrorsInjected, nil, "0+1x5"},
		{model.MetricServiceRejected, []string{"reason", "queue_full"}, "0+3x5"},
		{model.MetricServiceInFlight, nil, "4 4 4 4 4 8"},
		{model.MetricServiceQueueDepth, nil, "0 0 0 0 5 7"},
		{model.MetricServiceQueueOldestAge, nil, "0 0 0 0 0.5 1.25"},
	}
	series = append(series, hist(model.MetricServiceQueueWait, "2", "0+10x5")...)
	series = append(series, hist(model.MetricServerServiceTime, "0.1", "0+12x5")...)
	st := load(t, nil, "provider", times, series...)
	s := ServiceSignalsFor(st, "provider", 0, 5000)
	if s.Source != model.ServiceSourceSim {
		t.Errorf("source %q", s.Source)
	}
	checkService(t, s, map[string]float64{
		"received": 20, "in_flight": 8, "queue_depth": 7, "oldest": 1.25,
		"wait_p99": 1.98, "svc_p50": 0.05, "svc_p99": 0.099,
		"2xx": 10, "503": 4, "wac": 2,
	})
	if got := Services(st); !slices.Equal(got, []string{"provider"}) {
		t.Errorf("Services = %v", got)
	}
}

func TestServiceSignalsPromHTTP(t *testing.T) {
	times := every(0, 1000, 5) // 4 s
	series := []ts{
		{model.MetricPromHTTPRequests, []string{"code", "200", "method", "get"}, "0+30x4"},
		{model.MetricPromHTTPRequests, []string{"code", "200", "method", "post"}, "0+10x4"},
		{model.MetricPromHTTPRequests, []string{"code", "429", "method", "get"}, "_ 0 1 2 4"},
		{model.MetricPromHTTPRequests, []string{"code", "500", "method", "get"}, "0+1x4"},
		{model.MetricPromHTTPInFlight, nil, "3 3 3 3 6"},
	}
	series = append(series, hist(model.MetricPromHTTPDuration, "0.2", "0+40x4", "code", "200")...)
	st := load(t, nil, "api", times, series...)
	// A target with no service family at all.
	st = load(t, st, "client", times, ts{model.MetricOriginals, []string{"dependency", "api"}, "0+1x4"})
	s := ServiceSignalsFor(st, "api", 0, 4000)
	if s.Source != model.ServiceSourcePromHTTP {
		t.Errorf("source %q", s.Source)
	}
	// 429 appears at the second scrape: its increase counts from there
	// (4 over 4 s), as every counter does; no 503 was answered: 0.
	checkService(t, s, map[string]float64{
		"received": 41 + 1, "in_flight": 6, "svc_p50": 0.1, "svc_p99": 0.198,
		"2xx": 40, "429": 1, "503": 0, "other5xx": 1,
	})
	if got := Services(st); !slices.Equal(got, []string{"api"}) {
		t.Errorf("Services = %v", got)
	}
	none := ServiceSignalsFor(st, "client", 0, 4000)
	checkService(t, none, nil)
	if none.Source != "" {
		t.Errorf("client source %q", none.Source)
	}
	checkService(t, ServiceSignalsFor(st, "nobody", 0, 4000), nil)
}

func TestServiceSignalsOTel(t *testing.T) {
	times := every(0, 2000, 3) // 4 s
	code := func(c string) []string { return []string{"http_request_method", "GET", "http_response_status_code", c} }
	var series []ts
	series = append(series, hist(model.MetricOTelServerDuration, "0.5", "0+16x2", code("200")...)...)
	series = append(series, hist(model.MetricOTelServerDuration, "0.5", "0+4x2", code("503")...)...)
	series = append(series, hist(model.MetricOTelServerDuration, "0.5", "0+2x2", code("502")...)...)
	series = append(series,
		ts{model.MetricOTelServerActive, []string{"http_request_method", "GET"}, "2 2 5"},
		ts{model.MetricOTelServerActive, []string{"http_request_method", "POST"}, "1 1 _"}, // stale at the end
	)
	st := load(t, nil, "otelsvc", times, series...)
	s := ServiceSignalsFor(st, "otelsvc", 0, 4000)
	if s.Source != model.ServiceSourceOTel {
		t.Errorf("source %q", s.Source)
	}
	checkService(t, s, map[string]float64{
		"received": 11, "in_flight": 5, "svc_p50": 0.25, "svc_p99": 0.495,
		"2xx": 8, "429": 0, "503": 2, "other5xx": 1,
	})
}

// A window with a single scrape has no rates, but its gauges are read.
func TestServiceSignalsOneScrape(t *testing.T) {
	times := every(0, 1000, 3)
	st := load(t, nil, "provider", times,
		ts{model.MetricServerReceived, nil, "0+5x2"},
		ts{model.MetricServiceQueueDepth, nil, "1 2 3"},
	)
	s := ServiceSignalsFor(st, "provider", 2000, 2000)
	checkService(t, s, map[string]float64{"queue_depth": 3})
}

func TestReportServices(t *testing.T) {
	times := every(0, 1000, 11) // 10 s
	st := load(t, nil, "provider", times,
		ts{model.MetricServerReceived, nil, "0+10x10"},
		ts{model.MetricServerWorkAfterCancel, nil, "0x5 1+1x4"},
	)
	st = load(t, st, "client", times,
		ts{model.MetricOriginals, []string{"dependency", "provider"}, "0+10x10"},
		ts{model.MetricAttempts, []string{"dependency", "provider"}, "0+10x10"},
	)
	rep := BuildReport(st, nil, ReportOptions{Window: 4 * time.Second, Bin: 2 * time.Second})
	if len(rep.Services) != 1 || rep.Services[0].Target != "provider" {
		t.Fatalf("services = %+v", rep.Services)
	}
	s := rep.Services[0]
	// The window is [6 s, 10 s]: work after cancel rose 1 -> 5.
	checkService(t, s, map[string]float64{"received": 10, "wac": 1})
}
