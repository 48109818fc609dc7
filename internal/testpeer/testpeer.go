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
	dir := tb.TempDir()
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
	prom := exec.CommandContext(ctx, bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
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
