package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/ui"
)

// TestConfigLook: a config's theme: and keys: reach the
// dashboard (--theme wins over theme:); mistakes are usage errors naming
// the file.
func TestConfigLook(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "theme: light\nkeys:\n  findings: [F2]\n  quit: [x]\n")
	var f dashboardFlags
	var opts ui.Options
	if err := f.look(&opts, good); err != nil {
		t.Fatal(err)
	}
	light, _ := ui.ParseTheme("light")
	if opts.Theme == nil || *opts.Theme != light || opts.Keys == nil || opts.Keys.Findings.Keys()[0] != "F2" {
		t.Errorf("theme %v, keys %+v", opts.Theme, opts.Keys)
	}
	f.theme = "dark"
	opts = ui.Options{}
	if err := f.look(&opts, good); err != nil || opts.Theme != nil {
		t.Errorf("--theme given: config's theme applied anyway (%v, %v)", opts.Theme, err)
	}
	for _, c := range []struct{ body, want string }{
		{"theme: neon\n", "theme: unknown theme \"neon\""},
		{"keys:\n  fnd: [z]\n", `unknown action "fnd"`},
		{"keys:\n  info: [s]\n", `"s" is bound to both sort and info`},
	} {
		p := write("bad.yaml", c.body)
		if err := (&dashboardFlags{}).look(&ui.Options{}, p); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.yaml") {
			t.Errorf("%q: %v, want %q naming the file", c.body, err, c.want)
		}
	}
}

// TestAnalyzeFileWithDialectsOnlyConfig: analyze FILE --config
// F works when F has only dialects: (a recording names its own targets);
// before, it said "no targets".
func TestAnalyzeFileWithDialectsOnlyConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "dialects.yaml")
	if err := os.WriteFile(cfg, []byte("dialects:\n  - name: acme\n    dependency_label: upstream\n    signals:\n      - family: retry_originals_total\n        metric: acme_calls_total\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := writeTestDump(t, 20, "app")
	out, stderr, err := execute(t, "analyze", path, "--config", cfg, "--format", "json")
	if err != nil || !strings.Contains(out, `"dependencies"`) {
		t.Errorf("analyze FILE --config (dialects only): %v\n%s%.200s", err, stderr, out)
	}
}
