package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A CLI that fits people's habits: a mistyped verb or flag is a usage
// error that suggests the verb or flag, an address without a scheme
// suggests the URL, a file of no known format suggests --input-format, and
// --version works.
func TestCLIHabits(t *testing.T) {
	page := filepath.Join(t.TempDir(), "index.html")
	if err := os.WriteFile(page, []byte("<!doctype html>\n<html><body>metrics</body></html>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args     []string
		wantCode int
		want     string
	}{
		{[]string{"anlyze"}, exitUsage, `unknown command "anlyze" for "retrytop"; did you mean analyze?`},
		{[]string{"recrod", "x"}, exitUsage, "did you mean record?"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"analyze", "127.0.0.1:9102", "--window", "1s"}, exitUsage, "did you mean http://127.0.0.1:9102/metrics?"},
		{[]string{"analyze", "x.rtd", "--windw", "1m"}, exitUsage, "unknown flag: --windw; did you mean --window?"},
		{[]string{"analyze", "x.rtd", "--fail", "warning"}, exitUsage, "unknown flag: --fail; did you mean --fail-on?"},
		{[]string{"analyze", "x.rtd", "--form", "json"}, exitUsage, "unknown flag: --form; did you mean --format?"},
		{[]string{"analyze", "x.rtd", "--bin", "-10s"}, exitUsage, "--bin -10s: want a positive width"},
		{[]string{"record", "x", "--outptu", "x.rtd"}, exitUsage, "unknown flag: --outptu; did you mean --output?"},
		{[]string{"--intervl", "1s", "x"}, exitUsage, "unknown flag: --intervl; did you mean --interval?"},
		{[]string{"replay", page}, exitNoData, "; use --input-format"},
		{[]string{"analyze", page}, exitNoData, "; use --input-format"},
	}
	for _, tt := range tests {
		_, _, err := execute(t, tt.args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != tt.wantCode || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("retrytop %s: err %v, want exit %d saying %q", strings.Join(tt.args, " "), err, tt.wantCode, tt.want)
		}
	}
	out, _, err := execute(t, "--version")
	if err != nil || !strings.HasPrefix(out, "retrytop ") || !strings.Contains(out, "commit") {
		t.Errorf("--version: %q, %v", out, err)
	}
}

// `analyze missing.rtd` says the file is missing, not that a
// URL lacks its scheme, and exits 2 like replay and export: a file that
// could not be read (docs/cli.md).
func TestAnalyzeMissingRecording(t *testing.T) {
	for _, arg := range []string{"missing.rtd", "dumps/incident.om", t.TempDir() + "/nope"} {
		_, _, err := execute(t, "analyze", arg)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitNoData || !strings.Contains(err.Error(), "no such file") {
			t.Errorf("analyze %s: %v, want exit 2 saying no such file", arg, err)
		}
	}
}

// TestErrorTextIsSafe: what main prints for an error keeps its lines but
// no escape sequence, control or bidi character from quoted input.
func TestErrorTextIsSafe(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"config x.yaml: line 3: bad \x1b]0;pwned\x07 key", `config x.yaml: line 3: bad \x1b]0;pwned\x07 key`},
		{"two\nlines \u202eevil", `two` + "\n" + `lines \u202eevil`},
	} {
		if got := errorText(errors.New(c.in)); got != c.want {
			t.Errorf("errorText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
