package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHugeTargetBoundedByMemoryLimit: a target serving 700,000 contract
// series in 29 MB (under the 32 MiB body limit) is refused by analyze at
// --memory-limit 256MiB with an error naming the series, and the process
// stays under 300 MB of resident memory (the limit plus the body's own
// bytes and the runtime), where parsing it all took over 500 MB.
func TestHugeTargetBoundedByMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and serves a 29 MB body: not in -short")
	}
	const series = 700000
	// The target is a process of its own, built without -race: served from
	// this (race-enabled) test process the body trickles in, and the
	// measurement would be of the race detector's pace, not of retrytop.
	srvDir := t.TempDir()
	src := `package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
)

func main() {
	var b strings.Builder
	b.WriteString("# TYPE retry_originals_total counter\n")
	for i := range ` + strconv.Itoa(series) + ` {
		fmt.Fprintf(&b, "retry_originals_total{dependency=\"%x\"} 1\n", i)
	}
	body := []byte(b.String())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Addr().String(), len(body))
	os.Stdout.Sync()
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
}
`
	if err := os.WriteFile(filepath.Join(srvDir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(srvDir, "go.mod"), []byte("module hugetarget\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", "hugetarget", ".")
	build.Dir = srvDir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the target: %v\n%s", err, out)
	}
	srv := exec.Command(filepath.Join(srvDir, "hugetarget"))
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	var addr string
	var size int
	if _, err := fmt.Fscan(stdout, &addr, &size); err != nil {
		t.Fatalf("the target did not say where it listens: %v", err)
	}
	if size >= 32<<20 {
		t.Fatalf("the body is %d bytes: over the body limit, which would refuse it for another reason", size)
	}
	bin := filepath.Join(t.TempDir(), "retrytop")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil { // no -race: its shadow memory would be measured
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// One read of the body is measured: at --interval 30s its scrape does
	// not time out on a busy machine. Scrapes of it timing out one after
	// another raise the peak further (docs/limits.md, "Not bounded yet").
	cmd := exec.Command(bin, "analyze", "huge=http://"+addr+"/metrics", "--interval", "30s", "--window", "1s", "--memory-limit", "256MiB")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitNoData {
		t.Fatalf("exit: %v, want %d\n%s", err, exitNoData, out)
	}
	if want := fmt.Sprintf("parsing %d series: needs", series+1); !strings.Contains(string(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	maxRSS := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	if maxRSS > 300<<20 {
		t.Errorf("peak RSS %d MiB, over 300 MiB", maxRSS>>20)
	}
	t.Logf("peak RSS %d MiB", maxRSS>>20)
}

// TestSlowTargetFollowsTheIntervalFlag: a target that answers in 2 s is
// scraped fine at --interval 5s given on the command line: the timeout
// follows the interval (it used to stay at the default 1 s).
func TestSlowTargetFollowsTheIntervalFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2 s target scraped over a 5 s window: not in -short")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second): // the slow target itself, not a wait for the test
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"db\"} 1\n"))
	}))
	defer srv.Close()
	stdout, stderr, err := execute(t, "analyze", "slow="+srv.URL+"/metrics", "--interval", "5s", "--window", "5s")
	if err != nil {
		t.Fatalf("analyze: %v (exit %d)\n%s\n%s", err, exitCode(err), stdout, stderr)
	}
	if !strings.Contains(stdout, "slow up") || strings.Contains(stdout+stderr, "timed out") {
		t.Errorf("the slow target is not up:\n%s\n%s", stdout, stderr)
	}
}
