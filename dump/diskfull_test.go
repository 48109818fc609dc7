package dump

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// flakyWriter fails every write while full, writing nothing.
type flakyWriter struct {
	full bool
	n    int
}

func (f *flakyWriter) Write(p []byte) (int, error) {
	if f.full {
		return 0, syscall.ENOSPC
	}
	f.n += len(p)
	return len(p), nil
}

// TestHookReportsWriteErrorsOncePerBurst: a burst of failed writes is
// reported twice, at its first failure and at the first write after it,
// with how many scrapes it lost and when; the stats count every lost
// scrape with its times.
func TestHookReportsWriteErrorsOncePerBurst(t *testing.T) {
	fw := &flakyWriter{}
	w, err := NewWriter(fw, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var reports []*WriteError
	hook := w.Hook(func(err error) {
		var we *WriteError
		if !errors.As(err, &we) {
			t.Fatalf("onErr got %T %v, want a *WriteError", err, err)
		}
		reports = append(reports, we)
	})
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	body := func(i int) []byte { return fmt.Appendf(nil, "# TYPE c counter\nc_total %d\n", i) }
	for i := range 20 {
		fw.full = i >= 5 && i < 12 // scrapes 5..11 lost: 7
		hook("app", t0.Add(time.Duration(i)*time.Second), body(i), "text/plain", nil)
	}
	if len(reports) != 2 {
		t.Fatalf("%d reports, want 2 (the burst's start and end): %v", len(reports), reports)
	}
	start, end := reports[0], reports[1]
	if start.Recovered || !errors.Is(start, syscall.ENOSPC) || !start.From.Equal(t0.Add(5*time.Second)) {
		t.Errorf("first report %+v", start)
	}
	if !end.Recovered || end.Lost != 7 || !end.From.Equal(t0.Add(5*time.Second)) || !end.To.Equal(t0.Add(11*time.Second)) {
		t.Errorf("recovery report %+v, want 7 lost from 12:00:05 to 12:00:11", end)
	}
	if !strings.Contains(end.Error(), "7 scrape(s) lost from 12:00:05 to 12:00:11") {
		t.Errorf("recovery text %q", end.Error())
	}
	st := w.Stats()
	if st.Lost != 7 || !st.FirstLost.Equal(t0.Add(5*time.Second)) || !st.LastLost.Equal(t0.Add(11*time.Second)) || st.Frames != 13 {
		t.Errorf("stats lost %d %v..%v, frames %d; want 7 lost, 13 frames", st.Lost, st.FirstLost, st.LastLost, st.Frames)
	}
}

// TestDiskFullRealTmpfs fills a real 1 MiB tmpfs: the writes that do not
// fit fail and are counted as lost, the frames written before stay
// readable, and once space is freed the recording goes on. Skipped where
// mounting a tmpfs is not allowed (it needs root).
func TestDiskFullRealTmpfs(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs: not in -short")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s): the disk-full test needs root", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 700<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rec.rtd")
	w, err := Create(path, false, WriterOptions{KeyEvery: 1}) // key frames: every body whole, so the disk fills fast
	if err != nil {
		t.Fatal(err)
	}
	var reports []string
	hook := w.Hook(func(err error) { reports = append(reports, err.Error()) })
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	big := func(i int) []byte {
		var b strings.Builder
		b.WriteString("# TYPE c counter\n")
		for k := range 2000 {
			fmt.Fprintf(&b, "c_total{k=\"%d\",r=\"%x\"} %d\n", k, (i*7919+k*104729)%1000003, i*k)
		}
		return []byte(b.String())
	}
	i := 0
	for ; i < 400 && w.Stats().Lost == 0; i++ {
		hook("app", t0.Add(time.Duration(i)*time.Second), big(i), "text/plain", nil)
	}
	if w.Stats().Lost == 0 {
		t.Fatalf("the tmpfs never filled in %d scrapes", i)
	}
	written := w.Stats().Frames
	for range 3 { // still full: lost, not reported again
		hook("app", t0.Add(time.Duration(i)*time.Second), big(i), "text/plain", nil)
		i++
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	hook("app", t0.Add(time.Duration(i)*time.Second), big(i), "text/plain", nil)
	st := w.Stats()
	if st.Lost != 4 || st.Frames != written+1 {
		t.Errorf("lost %d, frames %d; want 4 lost and one more frame after space came back (%d)", st.Lost, st.Frames, written+1)
	}
	if len(reports) != 2 || !strings.Contains(reports[0], "no space left") || !strings.Contains(reports[1], "writing again; 4 scrape(s) lost") {
		t.Errorf("reports %q, want the burst's start and its end", reports)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close after space came back: %v", err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Len() != written+1 {
		t.Errorf("the dump reads %d frames, want %d", r.Len(), written+1)
	}
	for k := range r.Len() {
		if _, err := r.Frame(k); err != nil {
			t.Fatalf("frame %d: %v", k, err)
		}
	}
}
