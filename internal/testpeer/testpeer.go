// Package testpeer finds the real programs (tmux, haproxy, prometheus,
// promtool, victoria-metrics, chromium) that integration tests talk to,
// starts Prometheus and VictoriaMetrics for them and runs Chromium
// headless.
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
	bin := Require(tb, "prometheus", "prometheus")
	return startServer(tb, ctx, bin, tb.TempDir(), "prometheus.yml", config, prometheusArgs)
}

// prometheusArgs are Prometheus' flags for a config, a data directory and
// an address.
func prometheusArgs(cfg, data, addr string) []string {
	return []string{"--config.file=" + cfg, "--storage.tsdb.path=" + data, "--web.listen-address=" + addr, "--log.level=warn"}
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
	bin := Require(tb, "prometheus", "prometheus")
	base, _ := startServer(tb, ctx, bin, dir, "prometheus.yml", "global:\n  scrape_interval: 1m\n", prometheusArgs)
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

// StartVictoriaMetrics starts a real VictoriaMetrics single node (Debian's
// victoria-metrics package; see Require) on a free port of 127.0.0.1
// scraping what the given Prometheus-style scrape configuration names
// (its -promscrape.config), with a fresh -storageDataPath, and returns
// its base URL and process id at once, as StartPrometheus does. extra
// are more of its flags.
func StartVictoriaMetrics(tb testing.TB, ctx context.Context, config string, extra ...string) (baseURL string, pid int) {
	tb.Helper()
	bin := Require(tb, "victoria-metrics", "victoria-metrics")
	return startServer(tb, ctx, bin, tb.TempDir(), "scrape.yml", config, func(cfg, data, addr string) []string {
		return append([]string{"-promscrape.config=" + cfg, "-storageDataPath=" + data, "-httpListenAddr=" + addr, "-loggerLevel=ERROR"}, extra...)
	})
}

// startServer writes config into dir as cfgName, starts bin with the
// flags args gives for the config's path, dir/data and a free loopback
// address, and kills it when the test ends, logging its output if the
// test failed.
func startServer(tb testing.TB, ctx context.Context, bin, dir, cfgName, config string, args func(cfg, data, addr string) []string) (baseURL string, pid int) {
	tb.Helper()
	cfgPath := filepath.Join(dir, cfgName)
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		tb.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.CommandContext(ctx, bin, args(cfgPath, filepath.Join(dir, "data"), addr)...)
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	name := filepath.Base(bin)
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if tb.Failed() {
			tb.Logf("%s output:\n%s", name, log.String())
		}
	})
	return "http://" + addr, cmd.Process.Pid
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
