package dump

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/sim"
)

// TestDemoBytesPerSample records the demo (sim's baseline scenario, every
// target at 1 s) for RETRYTOP_DEMO_RECORD (a duration, e.g. 10m) and
// reports bytes per sample. It runs only when asked: it takes real time.
//
//	RETRYTOP_DEMO_RECORD=10m go test ./dump -run DemoBytesPerSample -v -timeout 30m
func TestDemoBytesPerSample(t *testing.T) {
	env := os.Getenv("RETRYTOP_DEMO_RECORD")
	if env == "" {
		t.Skip("set RETRYTOP_DEMO_RECORD=10m to record the demo and measure bytes per sample")
	}
	d, err := time.ParseDuration(env)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := sim.ScenarioByName("baseline")
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	stack, err := sim.Start(ctx, sc, sim.Options{Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	defer stack.Close()
	path := filepath.Join(t.TempDir(), "demo.rtd")
	if keep := os.Getenv("RETRYTOP_DEMO_KEEP"); keep != "" {
		path = keep
	}
	w, err := Create(path, true, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var targets []scrape.Target
	for _, st := range stack.Targets() {
		targets = append(targets, scrape.Target{Name: st.Name, URL: st.URL, Layer: st.Layer, Interval: time.Second})
	}
	hook := w.Hook(func(err error) { t.Error(err) })
	var raw *os.File
	if p := os.Getenv("RETRYTOP_DEMO_RAW"); p != "" {
		// Every body as scraped, for experiments with the encoding:
		// "target ns length\n" then the body.
		if raw, err = os.Create(p); err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
	}
	var rawMu sync.Mutex
	onScrape := func(target string, at time.Time, body []byte, ct string, err error) {
		if raw != nil && err == nil {
			rawMu.Lock()
			fmt.Fprintf(raw, "%s %d %d\n", target, at.UnixNano(), len(body))
			raw.Write(body)
			rawMu.Unlock()
		}
		hook(target, at, body, ct, err)
	}
	scraper := scrape.NewScraper(targets, model.NewStore(model.StoreConfig{}), scrape.Options{OnScrape: onScrape})
	rctx, rcancel := context.WithTimeout(ctx, d)
	scraper.Run(rctx)
	rcancel()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	measure(t, path)
}

// measure reads a dump back and logs bytes per sample against gzip.
func measure(t *testing.T, path string) {
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var gz, all bytes.Buffer
	zw := gzip.NewWriter(&gz)
	samples, raw := 0, 0
	p := expo.ExpfmtParser{}
	for i := 0; i < r.Len(); i++ {
		f, err := r.Frame(i)
		if err != nil {
			t.Fatal(err)
		}
		if f.Err != "" {
			continue
		}
		fams, err := p.Parse(f.Target, f.Body, f.ContentType, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := model.Snapshot{Families: fams}
		samples += s.SeriesCount()
		raw += len(f.Body)
		zw.Write(f.Body)
		all.Write(f.Body)
	}
	zw.Close()
	// zstd at its best level with a 128 MiB window over the bodies
	// concatenated: zstd -19 --long, the size anchor, as bench's
	// BenchmarkDumpSize takes it.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithWindowSize(128<<20))
	if err != nil {
		t.Fatal(err)
	}
	z := len(enc.EncodeAll(all.Bytes(), nil))
	t.Logf("%s: %d frames of %d targets over %v, %d samples; raw %.1f B/sample, gzip %.2f B/sample, zstd-19-long %.3f B/sample, dump %d B: %.3f B/sample",
		filepath.Base(path), r.Len(), len(r.Targets()), r.End().Sub(r.Start()).Round(time.Second), samples,
		float64(raw)/float64(samples), float64(gz.Len())/float64(samples), float64(z)/float64(samples), r.Size(), float64(r.Size())/float64(samples))
	// One line for scripts/bench-ratios.sh.
	t.Logf("figure dump-bytes-per-sample %.4g ratio-dump/zstd %.4g", float64(r.Size())/float64(samples), float64(r.Size())/float64(z))
}
