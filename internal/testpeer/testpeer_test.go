package testpeer

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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

// TestRunChromiumDumpsAPage: headless Chromium renders a file:// page and
// --dump-dom prints its DOM (skipped without chromium).
func TestRunChromiumDumpsAPage(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "p.html")
	if err := os.WriteFile(page, []byte("<!doctype html><title>t</title><p id=x>hello</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, _ := RunChromium(t, ctx, "--dump-dom", "file://"+page)
	if !strings.Contains(out, `<p id="x">hello</p>`) {
		t.Errorf("dump-dom lacks the paragraph:\n%s", out)
	}
}

func TestFreePortRunIsFree(t *testing.T) {
	base := FreePortRun(t, 4)
	for i := range 4 {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
		if err != nil {
			t.Fatalf("port %d of the run: %v", base+i, err)
		}
		l.Close()
	}
}
