package main

import (
	"net"

	"github.com/retrytop/retrytop/internal/testdump"
	"github.com/retrytop/retrytop/internal/testpeer"
	"github.com/retrytop/retrytop/record"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/ui"
)

var recT0 = testdump.T0

// contractExposition is a retrying client's body at scrape n
// (testdump.Contract).
func contractExposition(n int) string { return testdump.Contract(n) }

// writeTestDump writes n scrapes at 1 s of targets to a dump file.
func writeTestDump(t *testing.T, n int, targets ...string) string {
	t.Helper()
	return testdump.Write(t, n, targets...)
}

// execute runs the command line in process.
func execute(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

// TestAnalyzeDump: analyze FILE prints the same JSON a live run would,
// with the timeline over the whole recording.
func TestAnalyzeDump(t *testing.T) {
	path := writeTestDump(t, 150, "app", "client")
	out, stderr, err := execute(t, "analyze", path, "--format", "json", "--window", "30s", "--bin", "10s")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var rep struct {
		StartUnix, EndUnix float64 `json:"-"`
		Start              float64 `json:"start_unix"`
		End                float64 `json:"end_unix"`
		Targets            []struct {
			Name    string `json:"name"`
			Up      bool   `json:"up"`
			Scrapes int    `json:"scrapes"`
		} `json:"targets"`
		Dependencies []struct {
			Target        string   `json:"target"`
			Dependency    string   `json:"dependency"`
			Amplification *float64 `json:"amplification"`
			Timeline      []struct {
				Start float64 `json:"start_unix"`
			} `json:"timeline"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Start != float64(recT0.Unix()) || rep.End != float64(recT0.Add(149*time.Second+10*time.Millisecond).UnixMilli())/1000 {
		t.Errorf("report spans %v..%v", rep.Start, rep.End)
	}
	if len(rep.Targets) != 2 || rep.Targets[0].Scrapes != 150 || !rep.Targets[0].Up {
		t.Errorf("targets %+v", rep.Targets)
	}
	if len(rep.Dependencies) != 2 || len(rep.Dependencies[0].Timeline) != 15 {
		t.Fatalf("dependencies %+v", rep.Dependencies)
	}
	// At the end: 50/s originals, no retries any more.
	if a := rep.Dependencies[0].Amplification; a == nil || *a != 1 {
		t.Errorf("amplification %v, want 1 after the incident", a)
	}
}

// TestRecordCommand records two loopback targets, one of them failing,
// and reads the dump back.
func TestRecordCommand(t *testing.T) {
	var mu sync.Mutex
	n := 0
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		fmt.Fprint(w, contractExposition(i))
	}))
	defer ok.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer bad.Close()
	path := filepath.Join(t.TempDir(), "rec.rtd")
	_, stderr, err := execute(t, "record", "app="+ok.URL, "db="+bad.URL, "-o", path, "--interval", "100ms", "--duration", "1s", "--progress", "300ms")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"recording 2 target(s)", "scrapes", "written", "db", "failed", "503"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("progress lacks %q:\n%s", want, stderr)
		}
	}
	var good, failed int
	for _, f := range readFrames(t, path) {
		if f.Err != "" {
			failed++
		} else if f.Target == "app" && strings.Contains(string(f.Body), "retry_originals_total") {
			good++
		}
	}
	if good < 3 || failed < 3 {
		t.Fatalf("%d good and %d failed frames", good, failed)
	}
	// A second run refuses to overwrite.
	if _, _, err := execute(t, "record", "app="+ok.URL, "-o", path, "--duration", "1ms"); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("overwrite: %v", err)
	}
}

// TestExportPromtool exports a dump as OpenMetrics, has promtool build
// TSDB blocks from it, and reads a value back with promtool tsdb dump.
func TestExportPromtool(t *testing.T) {
	promtool := testpeer.Require(t, "promtool", "prometheus")
	path := writeTestDump(t, 90, "app", "client")
	om := filepath.Join(t.TempDir(), "out.om")
	if _, stderr, err := execute(t, "export", path, "--format", "openmetrics", "-o", om); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	db := filepath.Join(t.TempDir(), "tsdb")
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, db).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool rejected the export: %v\n%s", err, out)
	}
	// Older promtool's dump wants a WAL directory even for blocks only.
	_ = os.MkdirAll(filepath.Join(db, "wal"), 0o755)
	out, err = exec.Command(promtool, "tsdb", "dump", `--match=retry_attempts_total{instance="client",outcome="temporary_error"}`, db).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool tsdb dump: %v\n%s", err, out)
	}
	// Scrape 80 of client: (80-60)*40 = 800 errors, at t0+80s+10ms.
	want := fmt.Sprintf(" 800 %d", recT0.Add(80*time.Second+10*time.Millisecond).UnixMilli())
	if !strings.Contains(string(out), want) {
		t.Fatalf("promtool tsdb dump lacks %q:\n%.2000s", want, out)
	}
	if got := strings.Count(string(out), "\n"); got != 90 {
		t.Errorf("%d samples of the series, want 90", got)
	}
}

func TestReplayFlagsValidation(t *testing.T) {
	path := writeTestDump(t, 5, "app")
	if _, _, err := execute(t, "replay", path, "--speed", "100"); err == nil || !strings.Contains(err.Error(), "--speed") {
		t.Errorf("speed 100: %v", err)
	}
	if _, _, err := execute(t, "replay", path, "--from", "yesterday"); err == nil || !strings.Contains(err.Error(), "--from") {
		t.Errorf("bad --from: %v", err)
	}
	// --input-format, and its old spelling --format (hidden, deprecated).
	for _, flag := range []string{"--input-format", "--format"} {
		if _, _, err := execute(t, "replay", path, flag, "csv"); err == nil || !strings.Contains(err.Error(), `unknown --input-format "csv"`) {
			t.Errorf("bad %s: %v", flag, err)
		}
	}
	if _, _, err := execute(t, "export", path, "--format", "csv", "-o", "-"); err == nil {
		t.Errorf("export --format csv accepted")
	}
	from, err := parseFrom("5m", recT0)
	if err != nil || !from.Equal(recT0.Add(5*time.Minute)) {
		t.Errorf("parseFrom 5m: %v %v", from, err)
	}
	from, err = parseFrom("2025-03-04T03:00:10Z", recT0)
	if err != nil || !from.Equal(recT0.Add(10*time.Second)) {
		t.Errorf("parseFrom RFC 3339: %v %v", from, err)
	}
}

// TestWatchRecordBadge: --record hooks the scraper and shows REC, and a
// write error at once in the badge.
func TestWatchRecordBadge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "watch.rtd")
	f := dashboardFlags{record: path}
	var opts ui.Options
	var copts scrape.Options
	closeRec, err := f.startRecording(&opts, &copts)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Status == nil || opts.Status() != "● REC" || copts.OnScrape == nil {
		t.Fatalf("no REC badge or hook")
	}
	copts.OnScrape("app", recT0, []byte(contractExposition(1)), "text/plain", nil)
	copts.OnScrape("app", recT0.Add(time.Second), nil, "", errors.New("connection refused"))
	if err := closeRec(); err != nil {
		t.Fatal(err)
	}
	// After close every append fails: the badge says so.
	copts.OnScrape("app", recT0.Add(2*time.Second), []byte("x 1\n"), "text/plain", nil)
	if s := opts.Status(); !strings.HasPrefix(s, "● REC ERROR: ") {
		t.Errorf("badge after a write error: %q", s)
	}
	r, err := dump.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Len() != 2 || !r.Info(1).Failed {
		t.Fatalf("%d frames", r.Len())
	}
	// An existing file is refused unless --record-force.
	if _, err := f.startRecording(&opts, &copts); err == nil || !strings.Contains(err.Error(), "--record-force") {
		t.Fatalf("existing file: %v", err)
	}
}

// TestFlagConvention: one meaning per flag across verbs.
// --format is the output format, --input-format the format of files read,
// -o the file written; analyze's old -o FORMAT still works and says so.
func TestFlagConvention(t *testing.T) {
	path := writeTestDump(t, 20, "app")
	// cobra prints the note with OutOrStderr: standard error when, as in
	// main, no output writer is set; here, where the test sets one, it
	// comes first on that writer.
	out, stderr, err := execute(t, "analyze", path, "-o", "json")
	note, body, _ := strings.Cut(out, "\n")
	if err != nil || note != "Flag shorthand -o has been deprecated, use --format; -o names the output file in record, export and report" ||
		!strings.HasPrefix(strings.TrimSpace(body), "{") {
		t.Errorf("analyze -o json: %v, stdout %.120q, stderr %q", err, out, stderr)
	}
	for _, verb := range []string{"analyze", "export", "report", "whatif", "replay"} {
		cmd, _, err := newRootCmd().Find([]string{verb})
		if err != nil {
			t.Fatal(err)
		}
		if f := cmd.Flags().Lookup("input-format"); f == nil {
			t.Errorf("%s has no --input-format", verb)
		}
		if f := cmd.Flags().Lookup("format"); verb != "replay" && (f == nil || f.Hidden) {
			t.Errorf("%s: --format is not its output format", verb)
		}
		if f := cmd.Flags().ShorthandLookup("o"); f != nil && verb != "analyze" && f.Name != "output" {
			t.Errorf("%s: -o is --%s, want the output file", verb, f.Name)
		}
	}
}

// readFrames decodes every frame of the recording at path, in order.
func readFrames(t *testing.T, path string) []dump.Frame {
	t.Helper()
	r, err := dump.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := make([]dump.Frame, 0, r.Len())
	for i := 0; i < r.Len(); i++ {
		f, err := r.Frame(i)
		if err != nil {
			t.Fatalf("%s frame %d: %v", path, i, err)
		}
		out = append(out, f)
	}
	return out
}

// TestRecordNothingAnsweredExits2: a recording of a target that never
// answers holds only failures; record says so and exits 2, as a script
// needs to know, instead of 0 with "bodies 0 B".
func TestRecordNothingAnsweredExits2(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close() // nothing listens there now: every scrape is refused
	out := filepath.Join(t.TempDir(), "dead.rtd")
	_, stderr, err := execute(t, "record", "http://"+dead+"/metrics", "-o", out, "--interval", "100ms", "--duration", "300ms", "-q")
	if exitCode(err) != exitNoData || !strings.Contains(err.Error(), "no target answered a scrape") {
		t.Fatalf("exit %d (%v), want %d saying no target answered\n%s", exitCode(err), err, exitNoData, stderr)
	}
}

// TestRecordExitCodes: a recording's outcome maps to the documented exit
// statuses: 4 when it lacks scrapes, 2 when nothing answered.
func TestRecordExitCodes(t *testing.T) {
	if got := exitCode(recordExit(&record.LossError{Path: "x", Lost: 1})); got != exitLost {
		t.Errorf("lost: exit %d, want %d", got, exitLost)
	}
	if got := exitCode(recordExit(fmt.Errorf("wrapped: %w", record.ErrNothingRead))); got != exitNoData {
		t.Errorf("nothing read: exit %d, want %d", got, exitNoData)
	}
	if recordExit(nil) != nil {
		t.Error("nil is success")
	}
}
