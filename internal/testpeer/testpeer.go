// Package testpeer finds the real programs (tmux, haproxy, prometheus,
// promtool, chromium) that integration tests talk to, starts Prometheus
// for them and runs Chromium headless.
//
// A missing program skips the test with a message saying what to install,
// so `go test ./...` passes on a fresh machine; with RETRYTOP_REQUIRE_PEERS=1
// (set by .ci/run, which installs them) a missing program fails the test.
package testpeer

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// EnvRequire is the variable that turns a missing peer into a failure.
const EnvRequire = "RETRYTOP_REQUIRE_PEERS"

// Required reports whether missing peers must fail rather than skip.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// Require returns the path of the named program, or skips (fails when
// Required) the test when it is not on PATH. pkg names the Debian package
// that provides it, for the skip message.
func Require(tb testing.TB, name, pkg string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if Required() {
			tb.Fatalf("%s is required (%s=1) but not on PATH; install Debian's %s package", name, EnvRequire, pkg)
		}
		tb.Skipf("%s not installed; skipping (apt-get install %s, or set %s=1 to make this a failure)", name, pkg, EnvRequire)
	}
	return path
}

// StartPrometheus starts a real Prometheus (see Require) on a free port of
// 127.0.0.1 with the given prometheus.yml text and a fresh data directory,
// and returns its base URL and process id at once: waiting for the targets
// a test needs is the test's own business. It is killed when the test ends
// (and when ctx is done), its output logged if the test failed.
func StartPrometheus(tb testing.TB, ctx context.Context, config string) (baseURL string, pid int) {
	tb.Helper()
	dir := tb.TempDir()
	return startPrometheus(tb, ctx, dir, config, filepath.Join(dir, "data"))
}

// BackfilledPrometheus writes openMetrics (an OpenMetrics text ending in
// "# EOF") into TSDB blocks with the real `promtool tsdb
// create-blocks-from openmetrics`, starts the real Prometheus on them
// with no scrape targets, and returns its base URL once its readiness
// endpoint answers (polled until ctx is done). Skips (fails when
// Required) without promtool or prometheus. Prometheus is killed when the
// test ends.
func BackfilledPrometheus(tb testing.TB, ctx context.Context, openMetrics string) string {
	tb.Helper()
	promtool := Require(tb, "promtool", "prometheus")
	Require(tb, "prometheus", "prometheus")
	dir := tb.TempDir()
	in, data := filepath.Join(dir, "series.om"), filepath.Join(dir, "data")
	if err := os.WriteFile(in, []byte(openMetrics), 0o644); err != nil {
		tb.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, promtool, "tsdb", "create-blocks-from", "openmetrics", in, data).CombinedOutput(); err != nil {
		tb.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}
	base, _ := startPrometheus(tb, ctx, dir, "global:\n  scrape_interval: 1m\n", data)
	WaitReady(tb, ctx, base)
	return base
}

// WaitReady polls Prometheus' readiness endpoint at base until it answers
// 200, failing the test when ctx ends first (the bound on the wait).
func WaitReady(tb testing.TB, ctx context.Context, base string) {
	tb.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/-/ready", nil)
		if err != nil {
			tb.Fatal(err)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("prometheus at %s not ready: %v", base, ctx.Err())
		case <-tick.C:
		}
	}
}

// startPrometheus starts Prometheus with config (written into dir) on
// the TSDB at data; see StartPrometheus.
func startPrometheus(tb testing.TB, ctx context.Context, dir, config, data string) (baseURL string, pid int) {
	tb.Helper()
	bin := Require(tb, "prometheus", "prometheus")
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		tb.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	prom := exec.CommandContext(ctx, bin, "--config.file="+cfgPath, "--storage.tsdb.path="+data,
		"--web.listen-address="+addr, "--log.level=warn")
	var log syncBuffer
	prom.Stdout, prom.Stderr = &log, &log
	if err := prom.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = prom.Process.Kill()
		_ = prom.Wait()
		if tb.Failed() {
			tb.Logf("prometheus output:\n%s", log.String())
		}
	})
	return "http://" + addr, prom.Process.Pid
}

// syncBuffer is a buffer the child's output goroutines may write while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
