package testpeer

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRequireFindsAProgramOnPath(t *testing.T) {
	if got := Require(t, "sh", "dash"); filepath.Base(got) != "sh" {
		t.Errorf("Require(sh) = %q, want a path ending in sh", got)
	}
}

func TestRequiredFollowsTheEnvironment(t *testing.T) {
	t.Setenv(EnvRequire, "1")
	if !Required() {
		t.Error("Required() false with the variable set to 1")
	}
	t.Setenv(EnvRequire, "")
	if Required() {
		t.Error("Required() true with the variable empty")
	}
}

// TestRunChromiumDumpsAPage: headless Chromium renders a file:// page and
// --dump-dom prints its DOM (skipped without chromium).
func TestRunChromiumDumpsAPage(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "p.html")
	if err := os.WriteFile(page, []byte("<!doctype html><title>t</title><p id=x>hello</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, _ := RunChromium(t, ctx, "--dump-dom", "file://"+page)
	if !strings.Contains(out, `<p id="x">hello</p>`) {
		t.Errorf("dump-dom lacks the paragraph:\n%s", out)
	}
}

func TestFreePortRunIsFree(t *testing.T) {
	base := FreePortRun(t, 4)
	for i := range 4 {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
		if err != nil {
			t.Fatalf("port %d of the run: %v", base+i, err)
		}
		l.Close()
	}
}

// TestBackfilledPrometheusAnswers: two samples backfilled with promtool
// are what the started Prometheus answers at their time.
func TestBackfilledPrometheusAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := BackfilledPrometheus(t, ctx, "c_total{job=\"x\"} 10 1767225600\nc_total{job=\"x\"} 25 1767225601\n# EOF\n")
	resp, err := http.Get(base + "/api/v1/query?query=c_total&time=1767225601")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if want := `"value":[1767225601,"25"]`; !strings.Contains(string(body), want) {
		t.Errorf("answer %s, want %s", body, want)
	}
}
