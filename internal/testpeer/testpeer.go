// Package testpeer finds the real programs (tmux, haproxy, prometheus,
// promtool) that integration tests talk to.
//
// A missing program skips the test with a message saying what to install,
// so `go test ./...` passes on a fresh machine; with RETRYTOP_REQUIRE_PEERS=1
// (set by .ci/run, which installs them) a missing program fails the test.
package testpeer

import (
	"os"
	"os/exec"
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
