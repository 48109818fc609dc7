package expo

import (
	"strings"
	"testing"
)

// A shape TestNotAnExposition missed: a plain-text page that
// answers 200 where metrics were expected ("OK" from a health check, a
// proxy's "404 page not found" with the wrong status) passed a family
// filter unread, up with 0 series, while the unfiltered path refused it.
// The first line that is not blank is read on both paths: a comment or
// the start of a sample, or the body is not an exposition.
func TestPlainTextPageIsNotAnExposition(t *testing.T) {
	filter := func(name string) bool { return strings.HasPrefix(name, "retry_") }
	for _, c := range []struct{ body, want string }{
		{"OK\n", `not a Prometheus exposition: "OK" is neither a comment nor a sample`},
		{"ok", `"ok" is neither`},
		{"404 page not found\n", `"404 page not found" is neither`},
		{"\n\n  Hello world\nretry_originals_total 1\n", `line 3: not a Prometheus exposition: "Hello world"`},
		{"healthy: true\n", `"healthy: true" is neither`},
		{"go-version 1\n", `"go-version 1" is neither`},
		{strings.Repeat("a", 100) + " b\n", `"` + strings.Repeat("a", 40) + `" is neither`},
		// White space other than the text format's blanks is no blank:
		// it was trimmed away, and the empty line read past its end.
		{"\v", `"\v" is neither`},
		{"\n\f\n", `line 2: not a Prometheus exposition: "\f"`},
		{"\u00a0 retry_originals_total 1\n", `"\u00a0 retry_originals_total 1" is neither`},
	} {
		for _, f := range []func(string) bool{nil, filter} {
			_, err := ExpfmtParser{}.Parse("t", []byte(c.body), "text/plain; charset=utf-8", f)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%.30q (filtered %v): err = %v, want %q", c.body, f != nil, err, c.want)
			}
		}
	}
	// Real first lines, which the check must let through.
	for _, ok := range []string{
		"",
		"\n\n",
		"# HELP retry_originals_total Originals.\nretry_originals_total 1\n",
		"retry_originals_total 1\n",
		"retry_originals_total{dependency=\"a\"} 1\n",
		"  retry_originals_total\t+Inf 1700000000000\n",
		"retry_budget_balance NaN\n",
		"retry:originals_total -1.5e3\n",
		"{\"retry.originals_total\",dependency=\"a\"} 1\n",
	} {
		for _, f := range []func(string) bool{nil, filter} {
			if _, err := (ExpfmtParser{}).Parse("t", []byte(ok), "text/plain; version=0.0.4", f); err != nil {
				t.Errorf("%q (filtered %v): %v", ok, f != nil, err)
			}
		}
	}
}
