package expo

import (
	"strings"
	"testing"
)

// A page that is not metrics is an error naming what it is, on the
// filtered path as on the unfiltered one (an HTML page must not count
// as "up, 0 series" with analyze exiting 0).
func TestNotAnExposition(t *testing.T) {
	filter := func(name string) bool { return strings.HasPrefix(name, "retry_") }
	tests := []struct {
		name, contentType, body, want string
	}{
		{"html by type", "text/html; charset=utf-8", "<!DOCTYPE html><html><body>hi</body></html>",
			`line 1: not a Prometheus exposition: it starts with '<', a web page (content type "text/html; charset=utf-8")`},
		{"html without a type", "", "\n  <html><body>Directory listing</body></html>", "it starts with '<', a web page"},
		{"html as text/plain", "text/plain; version=0.0.4", "<html></html>", "it starts with '<', a web page"},
		{"json by type", "application/json", `{"status":"ok"}`, `it starts with '{', a JSON document (content type "application/json")`},
		{"json without a type", "application/octet-stream", `[1, 2]`, `it starts with '[', a JSON document`},
	}
	for _, tt := range tests {
		for _, f := range []func(string) bool{nil, filter} {
			_, err := ExpfmtParser{}.Parse("t", []byte(tt.body), tt.contentType, f)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s (filtered %v): err = %v, want %q", tt.name, f != nil, err, tt.want)
			}
		}
	}
	// Real expositions, including one opening with a UTF-8 name, still parse.
	for _, ok := range []struct{ contentType, body string }{
		{"text/plain; version=0.0.4", "retry_originals_total{dependency=\"a\"} 1\n"},
		{"text/plain; version=1.0.0; escaping=allow-utf-8", "{\"retry_originals_total\",dependency=\"a\"} 1\n"},
		{"", "# HELP x y\nretry_originals_total 1\n"},
	} {
		if _, err := (ExpfmtParser{}).Parse("t", []byte(ok.body), ok.contentType, filter); err != nil {
			t.Errorf("%q: %v", ok.body, err)
		}
	}
}
