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
		"slots":       s.Slots,
		"queue_depth": s.QueueDepth,
		"queue_limit": s.QueueLimit,
		"oldest":      s.QueueOldestAge,
		"wait_p99":    s.QueueWaitP99,
		"wait_mean":   s.QueueWaitMean,
		"svc_p50":     s.ServiceTimeP50,
		"svc_p99":     s.ServiceTimeP99,
		"ok_p50":      s.SuccessServiceTimeP50,
		"ok_p99":      s.SuccessServiceTimeP99,
		"err_p50":     s.ErrorServiceTimeP50,
		"err_p99":     s.ErrorServiceTimeP99,
		"2xx":         s.Responses2xxPerS,
		"429":         s.Responses429PerS,
		"503":         s.Responses503PerS,
		"503ra":       s.Responses503RetryAfterPerS,
		"other5xx":    s.ResponsesOther5xxPerS,
		"5xx":         s.Responses5xxPerS,
		"wac":         s.WorkAfterCancelPerS,
		"cancelled":   s.CancelledPerS,
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

// ladder returns the flat series of a histogram with buckets at les (and
// +Inf): counts gives, per bucket and then for +Inf (also the _count),
// the cumulative counts per scrape as notation.
func ladder(name string, labels []string, les []string, counts ...string) []ts {
	with := func(extra ...string) []string { return append(append([]string{}, labels...), extra...) }
	var out []ts
	for i, le := range les {
		out = append(out, ts{name + "_bucket", with("le", le), counts[i]})
	}
	inf := counts[len(les)]
	return append(out, ts{name + "_bucket", with("le", "+Inf"), inf}, ts{name + "_count", labels, inf})
}

// The sim provider as it exports itself now: every family of the contract's
// service half.
func TestServiceSignalsSim(t *testing.T) {
	times := every(0, 1000, 6) // 5 s
	series := []ts{
		{model.MetricServerReceived, nil, "0+20x5"},
		{model.MetricServiceCompleted, nil, "0+12x5"},
		{model.MetricServerWorkAfterCancel, nil, "0+2x5"},
		{model.MetricServiceErrorsInjected, nil, "0+1x5"},
		{model.MetricServiceRejected, []string{"reason", "queue_full"}, "0+3x5"},
		{model.MetricServiceRejected, []string{"reason", "safety_cap"}, "0x5"},
		{model.MetricServiceResponses, []string{"code", "200"}, "0+10x5"},
		{model.MetricServiceResponses, []string{"code", "503"}, "0+4x5"},
		{model.MetricServiceCancelled, []string{"stage", "queued"}, "0+2x5"},
		{model.MetricServiceCancelled, []string{"stage", "executing"}, "0+1x5"},
		{model.MetricServiceInFlight, nil, "4 4 4 4 4 4"},
		{model.MetricServiceSlots, nil, "4x5"},
		{model.MetricServiceQueueDepth, nil, "0 0 0 0 5 7"},
		{model.MetricServiceQueueLimit, nil, "0x5"},
		{model.MetricServiceQueueOldestAge, nil, "0 0 0 0 0.5 1.25"},
		{model.MetricServiceQueueWait + "_sum", nil, "0+7.5x5"},
	}
	series = append(series, hist(model.MetricServiceQueueWait, "2", "0+10x5")...)
	series = append(series, hist(model.MetricServerServiceTime, "0.1", "0+12x5")...)
	st := load(t, nil, "provider", times, series...)
	s := ServiceSignalsFor(st, "provider", 0, 5000)
	if s.Source != model.ServiceSourceSim {
		t.Errorf("source %q", s.Source)
	}
	// Responses by code: 429 and other 5xx are 0, not absent (the family
	// is there, those codes never happened); 503 with Retry-After are the
	// rejections; the sim does not split its service time by outcome.
	checkService(t, s, map[string]float64{
		"received": 20, "in_flight": 4, "slots": 4, "queue_depth": 7, "queue_limit": 0, "oldest": 1.25,
		"wait_p99": 1.98, "wait_mean": 0.75, "svc_p50": 0.05, "svc_p99": 0.099,
		"2xx": 10, "429": 0, "503": 4, "503ra": 3, "other5xx": 0, "5xx": 4, "wac": 2, "cancelled": 3,
	})
	if got := Services(st); !slices.Equal(got, []string{"provider"}) {
		t.Errorf("Services = %v", got)
	}
}

// A recording made before sim_provider_responses_total existed: 2xx and
// 503 are derived from completed, work after cancel, injected errors and
// rejections; 429 and the other 5xx are unknown.
func TestServiceSignalsSimDerived(t *testing.T) {
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
		"2xx": 10, "503": 4, "503ra": 3, "wac": 2,
	})
}

// Families a dialect writes for a proxy that counts responses by class
// only (HAProxy, Envoy): the class rates are there, the codes inside a
// class-only class are absent, "other" counts in the total only.
func TestServiceSignalsClassOnly(t *testing.T) {
	times := every(0, 1000, 3) // 2 s
	code := func(c string) []string { return []string{"proxy", "fe", "code", c} }
	st := load(t, nil, "edge", times,
		ts{model.MetricServerReceived, []string{"proxy", "fe"}, "0+30x2"},
		ts{model.MetricServiceResponses, code("1xx"), "0x2"},
		ts{model.MetricServiceResponses, code("2xx"), "0+20x2"},
		ts{model.MetricServiceResponses, code("3xx"), "0x2"},
		ts{model.MetricServiceResponses, code("4xx"), "0+4x2"},
		ts{model.MetricServiceResponses, code("5xx"), "0+5x2"},
		ts{model.MetricServiceResponses, code("other"), "0+1x2"},
		ts{model.MetricServiceInFlight, []string{"proxy", "be", "server", "s1"}, "3 3 2"},
		ts{model.MetricServiceInFlight, []string{"proxy", "be", "server", "s2"}, "3 3 4"},
		ts{model.MetricServiceSlots, []string{"proxy", "be"}, "8x2"},
		ts{model.MetricServiceQueueDepth, []string{"proxy", "be"}, "0 1 2"},
		ts{model.MetricServiceQueueDepth, []string{"proxy", "be", "server", "s1"}, "0 0 1"},
	)
	s := ServiceSignalsFor(st, "edge", 0, 2000)
	checkService(t, s, map[string]float64{
		"received": 30, "in_flight": 6, "slots": 8, "queue_depth": 3,
		"2xx": 20, "5xx": 5,
	})
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
	// Durations on one ladder, by code: successes in (0.05, 0.2], errors
	// (429 and 5xx) in (0, 0.05].
	les := []string{"0.05", "0.2"}
	series = append(series, ladder(model.MetricPromHTTPDuration, []string{"code", "200"}, les, "0x4", "0+40x4", "0+40x4")...)
	series = append(series, ladder(model.MetricPromHTTPDuration, []string{"code", "429"}, les, "0+1x4", "0+1x4", "0+1x4")...)
	series = append(series, ladder(model.MetricPromHTTPDuration, []string{"code", "500"}, les, "0+1x4", "0+1x4", "0+1x4")...)
	st := load(t, nil, "api", times, series...)
	// A target with no service family at all.
	st = load(t, st, "client", times, ts{model.MetricOriginals, []string{"dependency", "api"}, "0+1x4"})
	s := ServiceSignalsFor(st, "api", 0, 4000)
	if s.Source != model.ServiceSourcePromHTTP {
		t.Errorf("source %q", s.Source)
	}
	// 429 appears at the second scrape: its increase counts from there
	// (4 over 4 s), as every counter does; no 503 was answered: 0.
	// All 168 durations: 8 below 0.05, p50 at rank 84 -> 0.05 + 0.15 x
	// 76/160; p99 at rank 166.32 -> 0.05 + 0.15 x 158.32/160. Successes
	// alone: 0.05 + 0.15 x 0.5 and x 0.99; errors alone: 0.025, 0.0495.
	// Retry-After is not in the promhttp shape: absent.
	checkService(t, s, map[string]float64{
		"received": 41 + 1, "in_flight": 6, "svc_p50": 0.05 + 0.15*76/160, "svc_p99": 0.05 + 0.15*158.32/160,
		"ok_p50": 0.125, "ok_p99": 0.1985, "err_p50": 0.025, "err_p99": 0.0495,
		"2xx": 40, "429": 1, "503": 0, "other5xx": 1, "5xx": 1,
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
	// The split: 200 is a success, 503 and 502 errors; all in (0, 0.5].
	checkService(t, s, map[string]float64{
		"received": 11, "in_flight": 5, "svc_p50": 0.25, "svc_p99": 0.495,
		"ok_p50": 0.25, "ok_p99": 0.495, "err_p50": 0.25, "err_p99": 0.495,
		"2xx": 8, "429": 0, "503": 2, "other5xx": 1, "5xx": 3,
	})
}

// Durations without a code label, or with one that is not an exact code,
// cannot be split: the overall quantiles are there, the split is absent.
// An exact-coded family with no error series has no error quantiles.
func TestServiceTimeSplit(t *testing.T) {
	times := every(0, 1000, 3)
	les := []string{"0.1"}
	for _, tc := range []struct {
		name   string
		series []ts
		want   map[string]float64
	}{
		{"no code", ladder(model.MetricPromHTTPDuration, []string{"method", "get"}, les, "0+10x2", "0+10x2"),
			map[string]float64{"svc_p50": 0.05, "svc_p99": 0.099}},
		{"a series without one", append(
			ladder(model.MetricPromHTTPDuration, []string{"code", "200"}, les, "0+10x2", "0+10x2"),
			ladder(model.MetricPromHTTPDuration, []string{"code", ""}, les, "0+10x2", "0+10x2")...),
			map[string]float64{"svc_p50": 0.05, "svc_p99": 0.099}},
		{"successes only", ladder(model.MetricOTelServerDuration, []string{model.LabelOTelStatusCode, "404"}, les, "0+10x2", "0+10x2"),
			map[string]float64{"svc_p50": 0.05, "svc_p99": 0.099, "ok_p50": 0.05, "ok_p99": 0.099,
				"received": 10, "2xx": 0, "429": 0, "503": 0, "other5xx": 0, "5xx": 0}},
	} {
		st := load(t, nil, "svc", times, tc.series...)
		s := ServiceSignalsFor(st, "svc", 0, 2000)
		s.Target = tc.name
		checkService(t, s, tc.want)
	}
}

func TestParseCode(t *testing.T) {
	for _, tc := range []struct {
		in    string
		code  int
		class byte
	}{
		{"200", 200, '2'}, {"429", 429, '4'}, {"503", 503, '5'}, {"5xx", 0, '5'}, {"2xx", 0, '2'},
		{"other", 0, 0}, {"", 0, 0}, {"600", 0, 0}, {"0", 0, 0}, {"20", 0, 0}, {"2x5", 0, 0}, {"xx5", 0, 0},
	} {
		if code, class := parseCode(tc.in); code != tc.code || class != tc.class {
			t.Errorf("parseCode(%q) = %d, %q; want %d, %q", tc.in, code, class, tc.code, tc.class)
		}
	}
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

// The mean queue wait per bin: exact from _sum/_count, and absent in a bin
// where nobody was granted a slot (no observation, no mean).
func TestServiceTimelineQueueWaitMean(t *testing.T) {
	times := every(0, 1000, 7) // 6 s
	w := model.MetricServiceQueueWait
	st := load(t, nil, "provider", times,
		ts{w + "_count", nil, "0+10x2 20 20 30 40"},
		ts{w + "_sum", nil, "0+0.05x2 0.1 0.1 5.1 15.1"},
		ts{w + "_bucket", []string{"le", "+Inf"}, "0+10x2 20 20 30 40"},
	)
	tl := ServiceTimeline(st, "provider", 2*time.Second, 0, 6000)
	if len(tl) != 3 {
		t.Fatalf("%d bins", len(tl))
	}
	checkValue(t, "bin 0 mean", tl[0].QueueWaitMean, 0.005)
	checkValue(t, "bin 1 mean", tl[1].QueueWaitMean, absent) // 20 -> 20
	checkValue(t, "bin 2 mean", tl[2].QueueWaitMean, 15.0/20)
	checkValue(t, "bin 2 p99 (+Inf bucket only)", tl[2].QueueWaitP99, absent)
}
