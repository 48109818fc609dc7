package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseConfig: any retrytop.yaml gives a config or an error naming
// the file, never a panic; an accepted config's targets parse or fail
// with an error.
func FuzzParseConfig(f *testing.F) {
	files, _ := filepath.Glob("testdata/config/*.yaml")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("targets:\n  - name: a\n    url: http://127.0.0.1:1/metrics\nchains:\n  - [a, b]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig("fuzz.yaml", b)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		_, _ = c.ScrapeTargets()
	})
}
