package scrape

import (
	"strings"
	"testing"
	"time"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in       string
		name     string
		url      string
		errStart string
	}{
		{in: "http://localhost:9090/metrics", name: "localhost:9090", url: "http://localhost:9090/metrics"},
		{in: "https://example.com/stats/prometheus", name: "example.com:443", url: "https://example.com/stats/prometheus"},
		{in: "http://example.com", name: "example.com:80", url: "http://example.com"},
		{in: "http://[::1]:8080/m", name: "[::1]:8080", url: "http://[::1]:8080/m"},
		{in: "api=http://10.0.0.1:8080/metrics", name: "api", url: "http://10.0.0.1:8080/metrics"},
		{in: " edge = http://h:1/metrics?a=b ", name: "edge", url: "http://h:1/metrics?a=b"},
		{in: "http://h:1/metrics?x=y=z", name: "h:1", url: "http://h:1/metrics?x=y=z"},
		{in: "HTTP://h:1/", name: "h:1", url: "HTTP://h:1/"},
		{in: "", errStart: "target: empty"},
		{in: "=http://h/", errStart: `target "=http://h/": empty name before '='`},
		{in: "localhost:9090", errStart: `target URL "localhost:9090": missing scheme; did you mean http://localhost:9090/metrics?`},
		{in: "api=/metrics", errStart: `target "api": target URL "/metrics": missing scheme`},
		{in: "127.0.0.1:9102", errStart: `target URL "127.0.0.1:9102": missing scheme; did you mean http://127.0.0.1:9102/metrics?`},
		{in: "ftp://u:secret-pw@h/x", errStart: `target URL "ftp://h/x": scheme "ftp" not supported`},
		{in: "http:///metrics", errStart: `target URL "http:///metrics": missing host`},
		{in: "http://u:pa%zz@h/", errStart: `target URL "http://h/": not a valid URL`},
		{in: "a\x1bb=http://h/", errStart: `target "a\x1bb": name contains control`},
		{in: strings.Repeat("n", 200) + "=http://h/", errStart: "target \"nnnn"},
	}
	for _, tc := range tests {
		got, err := ParseTarget(tc.in)
		if tc.errStart != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.errStart) {
				t.Errorf("ParseTarget(%q) error = %v, want prefix %q", tc.in, err, tc.errStart)
			}
			if err != nil && strings.Contains(err.Error(), "secret-pw") {
				t.Errorf("ParseTarget(%q) error shows the password: %v", tc.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", tc.in, err)
			continue
		}
		if got.Name != tc.name || got.URL != tc.url || got.Interval != time.Second || got.ScrapeTimeout() != time.Second ||
			!got.HTTP.FollowRedirects || !got.HTTP.EnableHTTP2 {
			t.Errorf("ParseTarget(%q) = %+v", tc.in, got)
		}
	}
}

func TestSafeURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://h:1/metrics", "http://h:1/metrics"},
		{"http://user:pass@h:1/metrics?x=1", "http://h:1/metrics?x=1"},
		{"https://user@h/#frag", "https://h/"},
		{"http://u:p%zz@h/path", "http://h/path"},             // does not parse
		{"http://u:p@ss@h/path", "http://h/path"},             // '@' in the password
		{"u:p@h:1/metrics", "h:1/metrics"},                    // no scheme
		{"http://h/\x1b[2J", `http://h/\x1b[2J`},              // does not parse: sanitised
		{"%zz://u:p@h/\x1b", `%zz://h/\x1b`},                  // unparseable, sanitised
		{"http://h/" + strings.Repeat("a", 600), "http://h/"}, // capped (prefix checked)
	}
	for _, tc := range tests {
		got := SafeURL(tc.in)
		if !strings.HasPrefix(got, tc.want) || len(got) > maxTextLen {
			t.Errorf("SafeURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, "pass") || strings.Contains(got, "u:p") {
			t.Errorf("SafeURL(%q) = %q shows credentials", tc.in, got)
		}
	}
}

func TestRedact(t *testing.T) {
	got := redact("auth abc-secret failed for abc-secret; pw ab kept", []string{"abc-secret", "ab", ""})
	if got != "auth <secret> failed for <secret>; pw ab kept" {
		t.Errorf("redact = %q", got)
	}
}

func TestParseChainFlag(t *testing.T) {
	ts, names, err := ParseChainFlag("browser=http://127.0.0.1:1/metrics,app=http://127.0.0.1:2/metrics")
	if err != nil || strings.Join(names, ",") != "browser,app" || len(ts) != 2 || ts[1].URL != "http://127.0.0.1:2/metrics" {
		t.Fatalf("ParseChainFlag = %v %v %v", ts, names, err)
	}
	for _, bad := range []string{"", ",", "app=notaurl"} {
		if _, _, err := ParseChainFlag(bad); err == nil || !strings.Contains(err.Error(), "--chain") {
			t.Errorf("ParseChainFlag(%q) error = %v", bad, err)
		}
	}
}

// TestScrapeTimeoutFollowsInterval: a target parsed from the command line
// or from --chain and given its interval afterwards (as the flag does)
// times out at that interval, not at the default interval it was parsed
// with; an explicit timeout stays.
func TestScrapeTimeoutFollowsInterval(t *testing.T) {
	tg, err := ParseTarget("app=http://127.0.0.1:9100/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if got := tg.ScrapeTimeout(); got != DefaultInterval {
		t.Errorf("parsed: timeout %v, want the default interval %v", got, DefaultInterval)
	}
	tg.Interval = 5 * time.Second
	if got := tg.ScrapeTimeout(); got != 5*time.Second {
		t.Errorf("--interval 5s: timeout %v, want 5s", got)
	}
	ts, _, err := ParseChainFlag("a=http://127.0.0.1:1/metrics,b=http://127.0.0.1:2/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ts {
		c.Interval = 3 * time.Second
		if got := c.ScrapeTimeout(); got != 3*time.Second {
			t.Errorf("--chain %s at 3s: timeout %v, want 3s", c.Name, got)
		}
	}
	tg.Timeout = 2 * time.Second
	if got := tg.ScrapeTimeout(); got != 2*time.Second {
		t.Errorf("explicit timeout: %v, want 2s", got)
	}
}
