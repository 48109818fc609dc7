package dump

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

// TestBytesPerSampleSynthetic records 10 minutes at 1 s of the 2,016-series
// generated exposition and reports bytes per sample, against gzip of the
// raw text (docs/performance.md). The goal is at most 1 byte per sample.
func TestBytesPerSampleSynthetic(t *testing.T) {
	if testing.Short() {
		t.Skip("size measurement skipped in -short mode")
	}
	scrapes := 600
	if raceOn {
		scrapes = 120
	}
	path := filepath.Join(t.TempDir(), "size.rtd")
	w, err := Create(path, false, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := newGenTarget(1, 2000)
	start := time.Unix(1741057965, 0)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	raw, samples := 0, 0
	for i := 0; i < scrapes; i++ {
		body := g.body()
		raw += len(body)
		samples += g.seriesCount()
		zw.Write(body)
		if err := w.Append("envoy", start.Add(time.Duration(i)*time.Second), "text/plain; version=0.0.4", body); err != nil {
			t.Fatal(err)
		}
		g.step()
	}
	zw.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	bps := float64(fi.Size()) / float64(samples)
	t.Logf("%d scrapes of %d series: raw %d B (%.1f B/sample), gzip %.2f B/sample, dump %d B: %.3f B/sample",
		scrapes, g.seriesCount(), raw, float64(raw)/float64(samples), float64(gz.Len())/float64(samples), fi.Size(), bps)
	if bps > 1 {
		t.Errorf("%.3f bytes per sample, want at most 1", bps)
	}
	fmt.Fprintf(os.Stderr, "")
}
