package testpeer

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
)

// Chromium returns the path of Debian's chromium, or skips (fails when
// Required) the test when it is not installed.
func Chromium(tb testing.TB) string {
	tb.Helper()
	return Require(tb, "chromium", "chromium")
}

// ChromiumFlags are the flags of a headless, offline, throwaway Chromium:
// no sandbox (tests may run as root), no GPU, no QUIC, no first-run UI,
// no background networking, component updates or sync (nothing leaves the
// machine on its own), and a fresh profile in profileDir.
func ChromiumFlags(profileDir string) []string {
	return []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
		"--user-data-dir=" + profileDir,
	}
}

// RunChromium runs Chromium (see Chromium) headless with a fresh profile
// and the extra arguments, and returns its standard output and standard
// error. A non-zero exit fails the test with its output.
func RunChromium(tb testing.TB, ctx context.Context, args ...string) (stdout, stderr string) {
	tb.Helper()
	bin := Chromium(tb)
	cmd := exec.CommandContext(ctx, bin, append(ChromiumFlags(tb.TempDir()), args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		tb.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.String(), errb.String()
}
