package scrape

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/retrytop/retrytop/model"
)

func TestParseTargetDialect(t *testing.T) {
	tests := []struct {
		in, name, url, dialect string
	}{
		{in: "edge=http://h:9901/stats/prometheus@envoy", name: "edge", url: "http://h:9901/stats/prometheus", dialect: "envoy"},
		{in: "http://h:8404/metrics@haproxy", name: "h:8404", url: "http://h:8404/metrics", dialect: "haproxy"},
		{in: "http://h:1/?x=1@native", name: "h:1", url: "http://h:1/?x=1", dialect: "native"},
		{in: "app=http://h:1/m@acme-client.v2", name: "app", url: "http://h:1/m", dialect: "acme-client.v2"},
		// An '@' in the authority is user information, not a dialect.
		{in: "http://user:pw@h:1/metrics", name: "h:1", url: "http://user:pw@h:1/metrics"},
		{in: "http://user@h:1", name: "h:1", url: "http://user@h:1"},
		{in: "a=http://u:p@h:1/m@linkerd", name: "a", url: "http://u:p@h:1/m", dialect: "linkerd"},
		// Not a dialect name: kept in the URL.
		{in: "http://h:1/path@x/y", name: "h:1", url: "http://h:1/path@x/y"},
		{in: "http://h:1/path@", name: "h:1", url: "http://h:1/path@"},
		{in: "http://h:1/p@9x", name: "h:1", url: "http://h:1/p@9x"},
	}
	for _, tc := range tests {
		got, err := ParseTarget(tc.in)
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", tc.in, err)
			continue
		}
		if got.Name != tc.name || got.URL != tc.url || got.Dialect != tc.dialect {
			t.Errorf("ParseTarget(%q) = name %q url %q dialect %q; want %q %q %q", tc.in, got.Name, got.URL, got.Dialect, tc.name, tc.url, tc.dialect)
		}
	}
}

func TestTranslateHook(t *testing.T) {
	srv := serve(t, exposition("# TYPE raw_calls_total counter\nraw_calls_total{up=\"db\"} 7\n"))
	var mu sync.Mutex
	var calls []string
	translate := func(d string, snap *model.Snapshot) (*model.Snapshot, string, error) {
		mu.Lock()
		calls = append(calls, snap.Target+"/"+d)
		mu.Unlock()
		if d == "broken" {
			return nil, "", errors.New(`unknown dialect "broken"`)
		}
		out := &model.Snapshot{Target: snap.Target, Time: snap.Time, Families: []model.Family{{
			Name: model.MetricOriginals, Type: model.Counter,
			Samples: []model.Sample{{Labels: model.LabelsFromPairs(model.LabelDependency, "db"), Value: snap.Families[0].Samples[0].Value}},
		}}}
		if d == "" {
			d = "detected\x1b[31m" // sanitised in the status
			out.SetAside = []string{"traefik: mine reads \x1b[31mthe same families"}
		}
		return out, d, nil
	}
	auto, forced, broken := target("auto", srv.URL), target("forced", srv.URL), target("broken", srv.URL)
	forced.Dialect, broken.Dialect = "acme", "broken"
	s := NewScraper([]Target{auto, forced, broken}, nil, Options{Clock: stepClock(), Translate: translate})
	before := s.Statuses()
	if st := statusOf(t, before, "forced"); st.Dialect != "acme" {
		t.Errorf("forced dialect before any scrape = %q, want acme", st.Dialect)
	}
	if st := statusOf(t, before, "auto"); st.Dialect != "" {
		t.Errorf("auto dialect before any scrape = %q, want empty", st.Dialect)
	}
	sts := s.ScrapeOnce(context.Background())
	if st := statusOf(t, sts, "auto"); !st.Up || st.Dialect != `detected\x1b[31m` || st.Series != 1 ||
		len(st.DialectsSetAside) != 1 || st.DialectsSetAside[0] != `traefik: mine reads \x1b[31mthe same families` {
		t.Errorf("auto: %+v", st)
	}
	if st := statusOf(t, sts, "forced"); !st.Up || st.Dialect != "acme" || st.DialectsSetAside != nil {
		t.Errorf("forced: %+v", st)
	}
	if st := statusOf(t, sts, "broken"); st.Up || st.LastError != `dialect: unknown dialect "broken"` {
		t.Errorf("broken: %+v", st)
	}
	// The translated snapshot is what is stored; the raw one is not.
	if ss := s.Store().Select("auto", model.MetricOriginals, nil); len(ss) != 1 {
		t.Errorf("stored contract series: %d, want 1", len(ss))
	}
	if ss := s.Store().Select("auto", "raw_calls_total", nil); len(ss) != 0 {
		t.Errorf("raw series stored: %d", len(ss))
	}
	if len(calls) != 3 {
		t.Errorf("translate called %d times: %q", len(calls), calls)
	}
}
