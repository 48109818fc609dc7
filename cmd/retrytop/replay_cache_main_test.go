package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives the package's tests, and the binaries and tmux servers
// they start (which inherit the environment), a cache directory of their
// own: replay writes its seek index under $XDG_CACHE_HOME/retrytop, and
// tests must not fill, or read, the user's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "retrytop-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
