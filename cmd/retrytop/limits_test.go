package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/internal/testpeer"
)

// hugeSeries is the huge target's size: 1,000,000 series of one family a
// dialect reads (the OTel gRPC dialect's grpc_client_*), in lines of 27
// bytes: a body of 26.9 MB, under the 32 MiB body limit.
const hugeSeries = 1000000

// hugeTargetSrc is the huge target, a process of its own built without
// -race: served from this (race-enabled) test process the body trickles
// in, and the measurement would be of the race detector's pace, not of
// retrytop. With "slow", every other request waits 1.5 s before it is
// answered, so the scrapes at the default 1 s interval time out one in two.
const hugeTargetSrc = `package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	slow := len(os.Args) > 2 && os.Args[2] == "slow"
	var b strings.Builder
	b.WriteString("# TYPE grpc_client_x counter\n")
	for i := range n {
		fmt.Fprintf(&b, "grpc_client_x{i=\"%x\"} 1\n", i)
	}
	body := []byte(b.String())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Addr().String(), len(body))
	os.Stdout.Sync()
	var calls atomic.Int64
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow && calls.Add(1)%2 == 1 {
			select {
			case <-time.After(1500 * time.Millisecond): // the slow target itself
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
}
`

// startHugeTarget builds and starts the huge target; it returns its
// address and its body's size.
func startHugeTarget(t *testing.T, mode string) (string, int) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(hugeTargetSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hugetarget\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", "hugetarget", ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the target: %v\n%s", err, out)
	}
	srv := exec.Command(filepath.Join(dir, "hugetarget"), strconv.Itoa(hugeSeries), mode)
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
	return addr, size
}

// buildPlainRetrytop builds the binary without -race: its shadow memory would
// be measured.
func buildPlainRetrytop(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "retrytop")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// maxRSSLimit is what the huge target tests hold retrytop to: under
// 300 MB resident at --memory-limit 256MiB.
const maxRSSLimit = 300_000_000

// peakRSSCommand runs bin with args under GNU time, which reports the
// peak resident memory of retrytop alone. The test process' own rusage
// of a child cannot: Go starts a child with vfork, and Linux counts the
// parent's resident pages (hundreds of MB for a test binary under -race)
// into the child's peak at its exec.
func peakRSSCommand(t *testing.T, bin string, args ...string) (*exec.Cmd, func() int64) {
	t.Helper()
	timeBin := testpeer.Require(t, "time", "time")
	file := filepath.Join(t.TempDir(), "maxrss")
	cmd := exec.Command(timeBin, append([]string{"-f", "%M", "-o", file, bin}, args...)...)
	return cmd, func() int64 {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("GNU time's report: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n") // "Command exited with non-zero status N" first
		kib, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
		if err != nil {
			t.Fatalf("GNU time's report %q: %v", b, err)
		}
		return kib << 10
	}
}

// checkPeakRSS holds the peak resident memory GNU time reported to 300 MB.
func checkPeakRSS(t *testing.T, rss int64) {
	t.Helper()
	if rss > maxRSSLimit {
		t.Errorf("peak RSS %d MB, over 300 MB", rss/1e6)
	} else {
		t.Logf("peak RSS %d MB", rss/1e6)
	}
}

// TestHugeTargetBoundedByMemoryLimit: a target serving 1,000,000 series
// in 26.9 MB is refused by analyze at --memory-limit 256MiB, scraped at
// --interval 30s (one read of its body), beside a small target that
// stays up: its error names the series, series_cap in the JSON counts
// them with what they needed and the scrapes' budget (half the limit),
// and the process stays under 300 MB resident (parsing it all took 533).
func TestHugeTargetBoundedByMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and serves a 27 MB body: not in -short")
	}
	addr, size := startHugeTarget(t, "fast")
	smallBody := []byte("# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"db\"} 1\n")
	small := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(smallBody)
	}))
	defer small.Close()
	cmd, peak := peakRSSCommand(t, buildPlainRetrytop(t), "analyze", "huge=http://"+addr+"/metrics", "small="+small.URL+"/metrics",
		"--interval", "30s", "--window", "1s", "--memory-limit", "256MiB", "--keep-going", "--format", "json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("analyze: %v\n%s", err, stderr.String())
	}
	var rep struct {
		Targets []struct {
			Name      string `json:"name"`
			Up        bool   `json:"up"`
			LastError string `json:"last_error"`
			SeriesCap *struct {
				ByMemory int   `json:"by_memory_limit"`
				Needed   int64 `json:"memory_needed_bytes"`
				Budget   int64 `json:"memory_budget_bytes"`
			} `json:"series_cap"`
		} `json:"targets"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Targets) != 2 {
		t.Fatalf("targets: %+v", rep.Targets)
	}
	huge, sm := rep.Targets[0], rep.Targets[1]
	if !sm.Up || sm.SeriesCap != nil {
		t.Errorf("the small target: %+v", sm)
	}
	// Its TYPE line counts: 1,000,001 lines of the family; the body is
	// read into a buffer of its announced length and one byte more. When
	// the small target's scrape ended first, the huge one took its idle
	// buffer (the scraper's buffers are shared, the latest first) and
	// grew it by that much: its capacity, the small body and a byte, is
	// held too.
	series, needed := hugeSeries+1, int64(size+1)+int64(hugeSeries+1)*512
	if c := huge.SeriesCap; c != nil && c.Needed == needed+int64(len(smallBody)+1) {
		needed = c.Needed
	}
	want := fmt.Sprintf("GET http://%s/metrics: parsing %d series: needs %.1f MiB, more than the scrapes' memory budget of 128 MiB leaves", addr, series, float64(needed)/(1<<20))
	if huge.Up || !strings.HasPrefix(huge.LastError, want) {
		t.Errorf("the huge target's error %q, want it to start %q", huge.LastError, want)
	}
	if c := huge.SeriesCap; c == nil || c.ByMemory != series || c.Needed != needed || c.Budget != 128<<20 {
		t.Errorf("series_cap %+v, want %d series, %d bytes needed, a budget of 128 MiB", c, series, needed)
	}
	checkPeakRSS(t, peak())
}

// TestHugeTargetTimingOutBoundedByMemoryLimit: the same target at the
// default 1 s interval, its scrapes timing out one in two (it answers
// every other request after 1.5 s) and refused for memory the others,
// for 10 s: a timed-out scrape never overlaps the next one of its target
// and holds its memory until it has ended, so retrytop stays under
// 300 MB resident all along. Each error line names the target once.
func TestHugeTargetTimingOutBoundedByMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and scrapes a 27 MB body for 10 s: not in -short")
	}
	addr, _ := startHugeTarget(t, "slow")
	cmd, peak := peakRSSCommand(t, buildPlainRetrytop(t), "analyze", "huge=http://"+addr+"/metrics", "--window", "10s", "--memory-limit", "256MiB")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitNoData {
		t.Fatalf("exit: %v, want %d\n%s", err, exitNoData, out)
	}
	timedOut := fmt.Sprintf("retrytop: huge: GET http://%s/metrics: timed out after 1s\n", addr)
	refused := fmt.Sprintf("retrytop: huge: GET http://%s/metrics: parsing %d series: needs ", addr, hugeSeries+1)
	if first, _, _ := strings.Cut(string(out), "retrytop: no target"); !strings.HasPrefix(first, timedOut) && !strings.HasPrefix(first, refused) {
		t.Errorf("the target's line is neither %q nor %q…:\n%s", timedOut, refused, out)
	}
	checkPeakRSS(t, peak())
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
