package main

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
)

func TestVersionPrintsGoVersion(t *testing.T) {
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"version"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "retrytop ") || !strings.HasPrefix(lines[1], "commit: ") {
		t.Fatalf("unexpected version output:\n%s", out.String())
	}
	if want := "go: " + runtime.Version(); lines[2] != want {
		t.Errorf("go line = %q, want %q", lines[2], want)
	}
}

// With no verb, arguments are watch's targets: a word that is neither a
// command nor a URL is a usage error naming it, before any terminal setup.
func TestUnknownWordIsAUsageError(t *testing.T) {
	cmd := newRootCmd()
	cmd.SetArgs([]string{"frobnicate"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.Execute()
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), "frobnicate") {
		t.Fatalf("error = %v, want a usage error (exit %d) naming the word", err, exitUsage)
	}
}
