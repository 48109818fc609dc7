package discovery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A prometheus.yml whose scrape_configs list holds a null entry ("-"
// alone) made LoadPrometheus panic (found by FuzzLoadPrometheus while
// auditing the parsers; its input is in testdata/fuzz). It is an error
// naming the file, like any other config without the job asked for.
func TestPrometheusConfigWithANullJobIsNoPanic(t *testing.T) {
	for _, body := range []string{"scrape_configs:\n-", "scrape_configs:\n-\n- job_name: app\n  static_configs:\n  - targets: [127.0.0.1:9100]\n"} {
		path := filepath.Join(t.TempDir(), "prometheus.yml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadPrometheus(path, []string{"checkout"}); err == nil || !strings.Contains(err.Error(), `prometheus.yml: no job "checkout"`) {
			t.Errorf("%q: err = %v, want no job \"checkout\" named with the file", body, err)
		}
	}
}
