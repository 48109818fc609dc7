package replay

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
)

// reopenFixture is the 1-hour dump's index, built once per process and
// written in both formats (the benchmark function runs more than once).
var reopenFixture struct {
	once               sync.Once
	err                error
	rec                dump.Recording
	key                [32]byte
	gobFile, binFile   []byte
	built, wrote, keyT time.Duration
}

func benchTransform() Transform {
	tr := dialect.Auto()
	return func(s *model.Snapshot) (*model.Snapshot, error) {
		out, _, err := tr.Translate("", s)
		return out, err
	}
}

// BenchmarkReopenSeek is `retrytop replay FILE` opened a second time, on
// dump's 1-hour dump (RETRYTOP_BENCH_DUMP=FILE; make it with
// `RETRYTOP_BENCH_DUMP=FILE go test ./dump -run '^$' -bench
// AnalyzeWindow -benchtime 1x`), the Envoy dialect translating, as replay
// runs. The index is built once and written in this format and in the
// gob of round 4 (gobindex_test.go); then each round, on a new player
// each, reads the gob file and this format's (ReadIndex, the key known:
// the contenders, outside the op's time and allocations), then reopens
// as IndexWithCache does (the recording and the executable hashed for
// the key while the file is read) and seeks to a random playhead. The op
// (and -benchmem) is that reopen and seek: the time to the first seek.
//
// Per round, medians: load-s and load-MB (this format: the time and the
// bytes allocated reading it), load-cpu-s (the process' CPU time over it:
// nothing else runs), the gob's, their ratios;
// open-s (the op) and seek-s, its seek. key-s: the key alone, once.
func BenchmarkReopenSeek(b *testing.B) {
	path := os.Getenv("RETRYTOP_BENCH_DUMP")
	if path == "" {
		b.Skip("RETRYTOP_BENCH_DUMP=FILE names the 1-hour dump (see the comment)")
	}
	fx := &reopenFixture
	fx.once.Do(func() {
		fx.err = func() error {
			rec, err := dump.OpenRecording(path, dump.OpenOptions{Filter: dialect.Auto().Filter})
			if err != nil {
				return err
			}
			fx.rec = rec
			t0 := time.Now()
			fx.key, err = IndexKey(path, "bench", BuildDigest())
			fx.keyT = time.Since(t0)
			if err != nil {
				return err
			}
			p := New(rec, Options{NewTransform: benchTransform})
			t0 = time.Now()
			if err := p.BuildIndex(context.Background()); err != nil {
				return err
			}
			fx.built = time.Since(t0)
			var bin, gb bytes.Buffer
			t0 = time.Now()
			if err := p.WriteIndex(&bin, fx.key); err != nil {
				return err
			}
			fx.wrote = time.Since(t0)
			p.index.mu.RLock()
			f, err := p.gobIndexOf()
			if err == nil {
				err = writeGobFile(&gb, f, p.indexKey(fx.key))
			}
			p.index.mu.RUnlock()
			if err != nil {
				return err
			}
			fx.binFile, fx.gobFile = bin.Bytes(), gb.Bytes()
			return nil
		}()
	})
	if fx.err != nil {
		b.Fatal(fx.err)
	}
	rec := fx.rec
	// Read from files, as a reopen does (from the page cache, here); the
	// cache's file is this format's.
	cache := IndexCache{Dir: b.TempDir()}
	binFile, gobFile := cache.File(path), filepath.Join(b.TempDir(), "index-gob")
	for name, data := range map[string][]byte{binFile: fx.binFile, gobFile: fx.gobFile} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	read := func(name string, gob bool) (*Player, time.Duration, time.Duration, uint64) {
		f, err := os.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			b.Fatal(err)
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		c0, t0 := cpuTime(), time.Now()
		q := New(rec, Options{NewTransform: benchTransform})
		if gob {
			err = q.readGobIndex(f, fi.Size(), fx.key)
		} else {
			err = q.ReadIndex(f, fi.Size(), fx.key)
		}
		d, c := time.Since(t0), cpuTime()-c0
		runtime.ReadMemStats(&m1)
		if err != nil {
			b.Fatal(err)
		}
		return q, d, c, m1.TotalAlloc - m0.TotalAlloc
	}
	start, length := rec.Time(0), rec.Time(rec.Len()-1).Sub(rec.Time(0))
	rng := rand.New(rand.NewPCG(3, 4))
	var loads, gobLoads, loadMB, gobMB, seeks, opens, loadCPU, gobCPU []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		head := start.Add(time.Duration(rng.Int64N(int64(length))))
		_, dg, cg, ag := read(gobFile, true)
		runtime.GC() // the anchor's garbage is not the next read's to collect
		q, dl, cl, al := read(binFile, false)
		_ = q
		runtime.GC()
		b.StartTimer()
		// The reopen as IndexWithCache does it: the key computed while
		// the file is read, then the first seek.
		t0 := time.Now()
		o := New(rec, Options{NewTransform: benchTransform})
		if ok, err := cache.load(o, path, func() ([32]byte, error) {
			return indexKeyOf(path, func() []string { return []string{"bench", BuildDigest()} })
		}, nil); !ok {
			b.Fatalf("not loaded: %v", err)
		}
		t1 := time.Now()
		o.Seek(head)
		if o.Tick() == time.Nanosecond {
			b.Fatal("the seek after reopening was not restored from the index")
		}
		ds := time.Since(t1)
		open := time.Since(t0)
		b.StopTimer()
		loads, gobLoads, seeks = append(loads, dl.Seconds()), append(gobLoads, dg.Seconds()), append(seeks, ds.Seconds())
		opens = append(opens, open.Seconds())
		loadCPU, gobCPU = append(loadCPU, cl.Seconds()), append(gobCPU, cg.Seconds())
		loadMB, gobMB = append(loadMB, float64(al)/1e6), append(gobMB, float64(ag)/1e6)
		runtime.GC()
		b.StartTimer()
	}
	b.StopTimer()
	ratio := func(a, g []float64) float64 {
		r := make([]float64, len(a))
		for k := range a {
			r[k] = a[k] / g[k]
		}
		return median(r)
	}
	size := func(name string) float64 {
		fi, err := os.Stat(name)
		if err != nil {
			b.Fatal(err)
		}
		return float64(fi.Size()) / 1e6
	}
	b.ReportMetric(ratio(loads, gobLoads), "load/gob-load")
	b.ReportMetric(ratio(loadMB, gobMB), "load-MB/gob-load-MB")
	if median(gobCPU) > 0 {
		b.ReportMetric(ratio(loadCPU, gobCPU), "load-cpu/gob-load-cpu")
		b.ReportMetric(median(loadCPU), "load-cpu-s")
		b.ReportMetric(median(gobCPU), "gob-load-cpu-s")
	}
	b.ReportMetric(median(loads), "load-s")
	b.ReportMetric(median(gobLoads), "gob-load-s")
	b.ReportMetric(median(loadMB), "load-MB")
	b.ReportMetric(median(gobMB), "gob-load-MB")
	b.ReportMetric(median(seeks), "seek-s")
	b.ReportMetric(median(opens), "open-s")
	b.ReportMetric(size(binFile), "file-MB")
	b.ReportMetric(size(gobFile), "gob-file-MB")
	b.ReportMetric(fx.built.Seconds(), "build-s")
	b.ReportMetric(fx.wrote.Seconds(), "write-s")
	b.ReportMetric(fx.keyT.Seconds(), "key-s")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = append([]float64(nil), v...)
	sort.Float64s(v)
	return v[len(v)/2]
}
