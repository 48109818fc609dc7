package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/replay"
)

// badgeRec writes a 10-scrape recording of one target and opens it.
func badgeRec(t *testing.T) (dump.Recording, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "r.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 3, 4, 3, 0, 0, 0, time.UTC)
	for n := range 10 {
		body := fmt.Sprintf("# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"p\"} %d\n", n)
		if err := w.Append("a", at.Add(time.Duration(n)*time.Second), "text/plain; version=0.0.4", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := dump.OpenRecording(path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec, path
}

// TestIndexBadge: the header says "indexing N %" until the player's seek
// index reaches the end of the recording, then nothing (or the badge
// before it).
func TestIndexBadge(t *testing.T) {
	rec, _ := badgeRec(t)
	p := replay.New(rec, replay.Options{})
	prev := func() string { return "unread" }
	if got := replay.IndexBadge(p, prev)(); got != "indexing 0 % unread" {
		t.Errorf("before the index: %q", got)
	}
	if err := p.BuildIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := replay.IndexBadge(p, prev)(); got != "unread" {
		t.Errorf("with the index: %q", got)
	}
	if got := replay.IndexBadge(p, func() string { return "" })(); got != "" {
		t.Errorf("with the index and no other badge: %q", got)
	}
}

// TestIndexRecordingCache: replay's first open builds the seek index and
// writes it under $XDG_CACHE_HOME/retrytop; the second reads it (no
// build: a BuildIndex after it is refused); a corrupt file is a one-line
// note and a rebuild that replaces it; --no-index-cache neither reads
// nor writes.
func TestIndexRecordingCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", t.TempDir()) // os.UserCacheDir on macOS
	rec, path := badgeRec(t)
	parts := func() []string { return []string{"dialects"} }
	open := func(noCache bool) (*replay.Player, []string) {
		var notes []string
		p := replay.New(rec, replay.Options{})
		replay.IndexWithCache(context.Background(), p, path, noCache, parts, func(s string) { notes = append(notes, s) })
		if done, total, _ := p.IndexProgress(); done != total {
			t.Fatalf("index at %d of %d", done, total)
		}
		return p, notes
	}
	files := func() []string {
		m, _ := filepath.Glob(filepath.Join(cache, "*", "*.rtidx"))
		return m
	}
	if _, notes := open(true); len(notes) != 0 || len(files()) != 0 {
		t.Fatalf("--no-index-cache: notes %q, files %q", notes, files())
	}
	if _, notes := open(false); len(notes) != 0 || len(files()) != 1 {
		t.Fatalf("first open: notes %q, files %q", notes, files())
	}
	p, notes := open(false)
	if len(notes) != 0 {
		t.Fatalf("second open: notes %q", notes)
	}
	if err := p.BuildIndex(context.Background()); err == nil {
		t.Fatal("the second open built its index instead of reading it")
	}
	f := files()[0]
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, notes = open(false)
	if len(notes) != 1 || !strings.Contains(notes[0], "seek index cache ignored") || !strings.Contains(notes[0], "checksum") || strings.Contains(notes[0], "\n") {
		t.Fatalf("a corrupt file: notes %q", notes)
	}
	if _, notes := open(false); len(notes) != 0 {
		t.Fatalf("after the rebuild replaced it: notes %q", notes)
	}
}
