package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
)

// cutDump writes the frames of the dump at path whose times are within
// [from, to] to a new dump: the recording as if it held no more.
func cutDump(t *testing.T, path string, from, to time.Time) string {
	t.Helper()
	r, err := dump.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := filepath.Join(t.TempDir(), "cut.rtd")
	w, err := dump.Create(out, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; i < r.Len(); i++ {
		if at := r.Info(i).Time; at.Before(from) || at.After(to) {
			continue
		}
		f, err := r.Frame(i)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(f.Target, f.Time, f.ContentType, f.Body); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("nothing in the window")
	}
	return out
}

// TestAnalyzeFileFromTo: analyze FILE --from --to prints exactly what
// analyze prints for a recording of only the scrapes between them (a
// window inside the incident of contractExposition, 60 s to 120 s), and
// not what the whole recording gives.
func TestAnalyzeFileFromTo(t *testing.T) {
	path := writeTestDump(t, 150, "app", "client")
	cut := cutDump(t, path, recT0.Add(70*time.Second), recT0.Add(100*time.Second))
	args := []string{"--format", "json", "--window", "10s", "--bin", "5s"}
	want, stderr, err := execute(t, append([]string{"analyze", cut}, args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, window := range [][]string{
		{"--from", "70s", "--to", "100s"},
		{"--from", recT0.Add(70 * time.Second).Format(time.RFC3339), "--to", "1741057300"}, // Unix seconds: recT0+100 s
	} {
		got, stderr, err := execute(t, append(append([]string{"analyze", path}, args...), window...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", window, err, stderr)
		}
		if got != want {
			t.Errorf("%v: the window's analysis differs from the cut recording's:\n%s\nwant\n%s", window, got, want)
		}
	}
	whole, _, err := execute(t, append([]string{"analyze", path}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	if whole == want {
		t.Error("the whole recording analyses like the window: the test would not see --from/--to ignored")
	}
}

func TestAnalyzeFromToErrors(t *testing.T) {
	path := writeTestDump(t, 20, "app")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", path, "--from", "10s", "--to", "5s"}, "before --from"},
		{[]string{"analyze", path, "--to", "soon"}, "--to"},
		{[]string{"analyze", "http://127.0.0.1:1/metrics", "--from", "10s"}, "apply to recordings"},
	} {
		_, _, err := execute(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitCode(err) != exitUsage {
			t.Errorf("%v: error %v (exit %d), want one saying %q, exit %d", tc.args, err, exitCode(err), tc.want, exitUsage)
		}
	}
}
