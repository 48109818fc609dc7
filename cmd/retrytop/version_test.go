package main

import (
	"bytes"
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

func TestUnknownCommandIsAnError(t *testing.T) {
	cmd := newRootCmd()
	cmd.SetArgs([]string{"frobnicate"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err == nil {
		t.Fatal("unknown command accepted")
	}
}
