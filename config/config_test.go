package config

import (
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	c, err := LoadConfig("testdata/config/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := c.ScrapeTargets()
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 || ts[0].Name != "browser" || ts[0].Layer != "browser" || ts[1].Interval != 2*time.Second || ts[1].ScrapeTimeout() != 2*time.Second {
		t.Fatalf("targets = %+v", ts)
	}
	if ts[1].HTTP.BasicAuth == nil || ts[1].HTTP.BasicAuth.PasswordFile != "/run/secrets/scraper" {
		t.Errorf("basic auth not read: %+v", ts[1].HTTP.BasicAuth)
	}
	if !ts[0].HTTP.FollowRedirects || !ts[2].HTTP.TLSConfig.InsecureSkipVerify || ts[2].Dialect != "native" {
		t.Errorf("defaults or TLS not applied: %+v / %+v", ts[0].HTTP, ts[2])
	}
	if len(c.Chains) != 1 || strings.Join(c.Chains[0].Hops, ",") != "browser,app,client" {
		t.Errorf("chains = %+v", c.Chains)
	}
}

func TestParseConfigErrorsNameFileAndLine(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"typo", "targets:\n  - name: a\n    urll: http://x/metrics\n", []string{"bad.yaml", "line 3", "urll"}},
		{"no url", "targets:\n  - name: a\n", []string{"bad.yaml", "targets[0]", "url is required"}},
		{"bad scheme", "targets:\n  - url: ftp://x/metrics\n", []string{"bad.yaml", "targets[0]", "http"}},
		{"duplicate", "targets:\n  - {name: a, url: http://x/m}\n  - {name: a, url: http://y/m}\n", []string{"duplicate target name \"a\""}},
		{"unknown hop", "targets:\n  - {name: a, url: http://x/m}\nchains:\n  - {name: c, hops: [a, b]}\n", []string{"chain \"c\"", "\"b\""}},
		{"empty chain", "targets:\n  - {name: a, url: http://x/m}\nchains:\n  - {name: c}\n", []string{"no hops"}},
		{"not yaml", "targets: [\n", []string{"bad.yaml", "line"}},
	}
	for _, tt := range tests {
		_, err := ParseConfig("bad.yaml", []byte(tt.body))
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tt.name, err, w)
			}
		}
	}
	if c, err := ParseConfig("empty.yaml", nil); err != nil || len(c.Targets) != 0 {
		t.Errorf("empty config: %v, %+v", err, c)
	}
}

// TestConfigDialectsTyped: the dialects: section decodes into the
// translator's own mappings, strictly, and a mapping the translator would
// refuse is refused when the file is read, naming the file and the entry.
func TestConfigDialectsTyped(t *testing.T) {
	good := `
targets:
  - url: http://127.0.0.1:9100/metrics
dialects:
  - name: acme
    dependency_label: upstream
    signals:
      - family: retry_originals_total
        metric: acme_calls_total
      - family: retry_request_duration_seconds
        metric: acme_call_latency_ms
        scale: 0.001
`
	c, err := ParseConfig("retrytop.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Dialects) != 1 || c.Dialects[0].Name != "acme" || len(c.Dialects[0].Signals) != 2 || c.Dialects[0].Signals[1].Scale != 0.001 {
		t.Fatalf("dialects = %+v", c.Dialects)
	}
	for bad, want := range map[string]string{
		"dialects:\n  - name: a\n    dependency_lable: x\n    signals: [{family: retry_originals_total, metric: m}]\n": "line 3",
		"dialects:\n  - name: a\n    dependency_label: x\n    signals: [{family: retry_originals, metric: m}]\n":       "dialects[0]",
	} {
		_, err := ParseConfig("bad.yaml", []byte(bad))
		if err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfig(%q) = %v, want an error naming bad.yaml and %q", bad, err, want)
		}
	}
}

// TestConfigTimeoutFollowsInterval: a config target's timeout defaults to
// its interval and one longer than the interval is cut to it.
func TestConfigTimeoutFollowsInterval(t *testing.T) {
	c, err := ParseConfig("t.yaml", []byte(`
targets:
  - {name: a, url: "http://127.0.0.1:1/metrics", interval: 5s}
  - {name: b, url: "http://127.0.0.1:2/metrics", interval: 2s, timeout: 3s}
  - {name: c, url: "http://127.0.0.1:3/metrics", interval: 4s, timeout: 1s}
`))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := c.ScrapeTargets()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []time.Duration{5 * time.Second, 2 * time.Second, time.Second} {
		if got := ts[i].ScrapeTimeout(); got != want {
			t.Errorf("%s: timeout %v, want %v", ts[i].Name, got, want)
		}
	}
}
