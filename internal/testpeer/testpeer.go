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
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
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
	return startServer(tb, ctx, bin, "prometheus.yml", config, func(cfg, data, addr string) []string {
		return []string{"--config.file=" + cfg, "--storage.tsdb.path=" + data, "--web.listen-address=" + addr, "--log.level=warn"}
	})
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
	return startServer(tb, ctx, bin, "scrape.yml", config, func(cfg, data, addr string) []string {
		return append([]string{"-promscrape.config=" + cfg, "-storageDataPath=" + data, "-httpListenAddr=" + addr, "-loggerLevel=ERROR"}, extra...)
	})
}

// startServer writes config into a fresh directory as cfgName, starts bin
// with the flags args gives for the config's path, a data directory and
// a free loopback address, and kills it when the test ends, logging its
// output if the test failed.
func startServer(tb testing.TB, ctx context.Context, bin, cfgName, config string, args func(cfg, data, addr string) []string) (baseURL string, pid int) {
	tb.Helper()
	dir := tb.TempDir()
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
