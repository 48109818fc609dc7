package testpeer

import (
	"path/filepath"
	"testing"
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
