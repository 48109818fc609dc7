package discovery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseFileSD: any file_sd file, JSON or YAML, gives groups or an
// error naming the file, never a panic.
func FuzzParseFileSD(f *testing.F) {
	for _, p := range []string{"targets.json", "targets.yaml", "bad_key.yaml", "bad_label.json", "bad_syntax.json", "bad_type.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(filepath.Ext(p) == ".json", b)
	}
	f.Fuzz(func(t *testing.T, asJSON bool, b []byte) {
		name := "sd.yaml"
		if asJSON {
			name = "sd.json"
		}
		groups, err := ParseFileSD(name, b)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		for _, g := range groups {
			if err := checkGroup(g); err != nil {
				t.Errorf("group accepted though invalid: %v", err)
			}
		}
	})
}

// FuzzLoadPrometheus: any prometheus.yml gives jobs or an error naming
// the file, never a panic.
func FuzzLoadPrometheus(f *testing.F) {
	for _, p := range []string{"prometheus.yml", "prometheus_bad_duration.yml", "prometheus_bad_type.yml", "prometheus_timeout.yml"} {
		b, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "prometheus.yml")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadPrometheus(path, nil); err != nil && !strings.Contains(err.Error(), "prometheus.yml") {
			t.Errorf("error does not name the file: %v", err)
		}
	})
}
