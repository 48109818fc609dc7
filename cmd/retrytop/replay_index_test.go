package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/retrytop/retrytop/collect/dump"
	"github.com/retrytop/retrytop/replay"
)

// TestIndexBadge: the header says "indexing N %" until the player's seek
// index reaches the end of the recording, then nothing (or the badge
// before it).
func TestIndexBadge(t *testing.T) {
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
	defer rec.Close()
	p := replay.New(rec, replay.Options{})
	prev := func() string { return "unread" }
	if got := indexBadge(p, prev)(); got != "indexing 0 % unread" {
		t.Errorf("before the index: %q", got)
	}
	if err := p.BuildIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := indexBadge(p, prev)(); got != "unread" {
		t.Errorf("with the index: %q", got)
	}
	if got := indexBadge(p, func() string { return "" })(); got != "" {
		t.Errorf("with the index and no other badge: %q", got)
	}
}
