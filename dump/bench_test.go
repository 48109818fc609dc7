package dump

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/expo"
)

// benchDump is a 1-hour dump of 10 targets x 2,016 series at 1 s (36,000
// frames), written once per test process into a temporary directory.
var benchDump struct {
	once sync.Once
	path string
	dir  string
	err  error
}

const (
	benchTargets = 10
	benchSeries  = 2000
)

// benchScrapes are the benchmark dump's scrapes per target: an hour at
// 1 s, or RETRYTOP_BENCH_MINUTES minutes (a longer dump, to measure how
// analyze's memory follows a recording's length).
var benchScrapes = func() int {
	if m, err := strconv.Atoi(os.Getenv("RETRYTOP_BENCH_MINUTES")); err == nil && m > 0 {
		return m * 60
	}
	return 3600
}()

var benchStart = time.Unix(1741057965, 0)

// BenchDumpPath returns the benchmark dump, writing it on first use (about
// a minute on the 2-core machine). The caller's process removes it at exit
// through TestMain.
//
// With RETRYTOP_BENCH_DUMP=FILE the dump is FILE: written there when it
// does not exist, and kept (to time `retrytop analyze FILE` on it, or to
// skip writing it again; delete it after a change to the format).
func BenchDumpPath(tb testing.TB) string {
	benchDump.once.Do(func() {
		path := os.Getenv("RETRYTOP_BENCH_DUMP")
		if path != "" {
			if _, err := os.Stat(path); err == nil {
				benchDump.path = path
				return
			}
		} else {
			dir, err := os.MkdirTemp("", "retrytop-bench-")
			if err != nil {
				benchDump.err = err
				return
			}
			benchDump.dir = dir
			path = filepath.Join(dir, "hour.rtd")
		}
		w, err := Create(path, false, WriterOptions{})
		if err != nil {
			benchDump.err = err
			return
		}
		gens := make([]*genTarget, benchTargets)
		names := make([]string, benchTargets)
		for k := range gens {
			gens[k] = newGenTarget(uint64(k+1), benchSeries)
			names[k] = "envoy-" + string(rune('a'+k))
		}
		start := time.Now()
		for i := 0; i < benchScrapes; i++ {
			for k, g := range gens {
				at := benchStart.Add(time.Duration(i)*time.Second + time.Duration(k)*37*time.Millisecond)
				if err := w.Append(names[k], at, "text/plain; version=0.0.4", g.body()); err != nil {
					benchDump.err = err
					return
				}
				g.step()
			}
		}
		benchDump.err = w.Close()
		benchDump.path = path
		fi, _ := os.Stat(path)
		tb.Logf("wrote the benchmark dump: %d frames, %d MB, in %v", benchScrapes*benchTargets, fi.Size()>>20, time.Since(start).Round(time.Second))
	})
	if benchDump.err != nil {
		tb.Fatal(benchDump.err)
	}
	return benchDump.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDump.dir != "" {
		os.RemoveAll(benchDump.dir)
	}
	os.Exit(code)
}

// BenchmarkOpenIndex opens the 1-hour dump: index reads its index frames
// (format version 2), scan reads every frame header and checks every
// checksum (version 1 files, and the anchor of index in the same run).
func BenchmarkOpenIndex(b *testing.B) {
	path := BenchDumpPath(b)
	fi, _ := os.Stat(path)
	for _, scan := range []bool{false, true} {
		name := "index"
		if scan {
			name = "scan"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(fi.Size())
			for i := 0; i < b.N; i++ {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				r, err := newReaderScan(f, fi.Size(), path, scan)
				if err != nil {
					b.Fatal(err)
				}
				if r.Len() != benchScrapes*benchTargets || r.Indexed() == scan {
					b.Fatalf("%d frames, indexed %v", r.Len(), r.Indexed())
				}
				r.Close()
				f.Close()
			}
		})
	}
}

// BenchmarkSeek jumps to a random time of the open dump and decodes the
// newest frame of every target at that time: what the dashboard needs to
// show one moment (the bodies, before parsing).
func BenchmarkSeek(b *testing.B) {
	path := BenchDumpPath(b)
	r, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		at := benchStart.Add(time.Duration(rng.Int64N(int64(time.Duration(benchScrapes) * time.Second))))
		j := r.Search(at)
		// The newest frame of each target at or before at.
		seen := map[string]bool{}
		for k := min(j, r.Len()-1); k >= 0 && len(seen) < benchTargets; k-- {
			tg := r.Info(k).Target
			if seen[tg] {
				continue
			}
			seen[tg] = true
			if _, err := r.Frame(k); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkReadSequential decodes every frame in time order (replay at any
// speed, analyze FILE, export): reported per frame.
func BenchmarkReadSequential(b *testing.B) {
	path := BenchDumpPath(b)
	r, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Frame(i % r.Len()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode decodes the frames in time order as analyze FILE and
// replay do (Reader.Frame), per frame: incremental renders a delta that
// kept its structure from its base's body (only the changed numbers),
// whole renders every body from its structure (renderWhole, as before),
// and ratio interleaves the two over the same frames, 100 at a time, for
// incremental's time over whole's in one run.
//
//	RETRYTOP_BENCH_DUMP=/tmp/hour.rtd go test ./dump -run '^$' -bench 'OpenIndex|Decode' -benchmem
func BenchmarkDecode(b *testing.B) {
	path := BenchDumpPath(b)
	open := func(b *testing.B) *Reader {
		r, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		return r
	}
	read := func(b *testing.B, r *Reader, i int, whole bool) {
		renderWhole = whole
		defer func() { renderWhole = false }()
		if _, err := r.Frame(i % r.Len()); err != nil {
			b.Fatal(err)
		}
	}
	for _, whole := range []bool{false, true} {
		name := "incremental"
		if whole {
			name = "whole"
		}
		b.Run(name, func(b *testing.B) {
			r := open(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				read(b, r, i, whole)
			}
		})
	}
	b.Run("ratio", func(b *testing.B) {
		inc, whole := open(b), open(b)
		var ti, tw time.Duration
		for i := 0; i < b.N; i += 100 {
			t0 := time.Now()
			for k := i; k < i+100; k++ {
				read(b, inc, k, false)
			}
			t1 := time.Now()
			for k := i; k < i+100; k++ {
				read(b, whole, k, true)
			}
			ti, tw = ti+t1.Sub(t0), tw+time.Since(t1)
		}
		b.ReportMetric(float64(ti)/float64(tw), "incremental/whole")
	})
}

// BenchmarkAppend encodes and writes one 2,016-series scrape.
func BenchmarkAppend(b *testing.B) {
	g := newGenTarget(1, benchSeries)
	bodies := make([][]byte, 64)
	for i := range bodies {
		bodies[i] = g.body()
		g.step()
	}
	w, err := NewWriter(discard{}, WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(bodies[0])))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.Append("envoy", benchStart.Add(time.Duration(i)*time.Second), "text/plain", bodies[i%len(bodies)]); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkTokenize splits a 2,016-series body that follows another of
// the same target: scratch as the reader tokenizes a key frame (and the
// writer did before), reuse as the writer does now, taking unchanged
// series' structure from the previous body. The ratio is in one run.
func BenchmarkTokenize(b *testing.B) {
	g := newGenTarget(1, benchSeries)
	prevBody := g.body()
	g.step()
	body := g.body()
	var prev, cur tokens
	tokenize(prevBody, &prev)
	b.Run("scratch", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for i := 0; i < b.N; i++ {
			tokenize(body, &cur)
		}
	})
	b.Run("reuse", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for i := 0; i < b.N; i++ {
			tokenizeReuse(body, &cur, &prev, prevBody)
		}
	})
	// ratio: the two interleaved ten at a time, so that a neighbour's load
	// falls on both alike; reuse's time over scratch's.
	b.Run("ratio", func(b *testing.B) {
		var scratch, reuse time.Duration
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			for range 10 {
				tokenize(body, &cur)
			}
			t1 := time.Now()
			for range 10 {
				tokenizeReuse(body, &cur, &prev, prevBody)
			}
			scratch, reuse = scratch+t1.Sub(t0), reuse+time.Since(t1)
		}
		b.ReportMetric(float64(reuse)/float64(scratch), "reuse/scratch")
	})
}

// BenchmarkSnapshotValueMaps reads the benchmark dump's entries in order
// as a recording's snapshots, through value maps and by parsing every
// frame (noValueMaps, the anchor), 100 entries of each in turn in one
// run: maps/parse is the first's time over the second's (docs/
// performance.md, "Analyze").
func BenchmarkSnapshotValueMaps(b *testing.B) {
	path := BenchDumpPath(b)
	open := func() *dumpRecording {
		r, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		d := newDumpRecording(r, expo.ExpfmtParser{Lines: expo.NewLineCaches(0)}, nil)
		b.Cleanup(func() { d.Close() })
		return d
	}
	read := func(d *dumpRecording, i int, parse bool) {
		noValueMaps = parse
		defer func() { noValueMaps = false }()
		if _, err := d.Snapshot(i % d.Len()); err != nil {
			var se *ScrapeError
			if !errors.As(err, &se) {
				b.Fatal(err)
			}
		}
	}
	maps, parse := open(), open()
	var tm, tp time.Duration
	b.ReportAllocs()
	for i := 0; i < b.N; i += 100 {
		t0 := time.Now()
		for k := i; k < i+100; k++ {
			read(maps, k, false)
		}
		t1 := time.Now()
		for k := i; k < i+100; k++ {
			read(parse, k, true)
		}
		tm, tp = tm+t1.Sub(t0), tp+time.Since(t1)
	}
	b.ReportMetric(float64(tm)/float64(tp), "maps/parse")
}

// BenchmarkDecodeDelta decodes a chain of 60 delta frames of one
// generated target (every counter growing), each against the one decoded
// before it, as a reader does: ns per frame and per slot, the base's
// slots in cache (in analyze FILE, ten targets' frames interleave).
func BenchmarkDecodeDelta(b *testing.B) {
	g := newGenTarget(1, benchSeries)
	const frames = 60
	toks := make([]tokens, frames)
	deltas := make([][]byte, frames)
	for i := range toks {
		tokenize(g.body(), &toks[i])
		if i > 0 {
			deltas[i] = encodeDelta(nil, &toks[i], &toks[i-1], Version)
		}
		g.step()
	}
	slots := len(toks[0].nums)
	var bufs [2]tokens
	// The first frame is the key the chain starts from, as the encoder
	// saw it (decodeDelta writes only into cur).
	chain := func(check bool) {
		base := &toks[0]
		for i := 1; i < frames; i++ {
			cur := &bufs[i&1]
			if err := decodeDelta(deltas[i], base, cur, Version); err != nil {
				b.Fatal(err)
			}
			if check {
				for k := range cur.nums {
					if !cur.nums[k].sameValue(toks[i].nums[k]) {
						b.Fatalf("frame %d slot %d: decoded %+v, encoded %+v", i, k, cur.nums[k], toks[i].nums[k])
					}
				}
			}
			base = cur
		}
	}
	chain(true)
	b.ResetTimer()
	for b.Loop() {
		chain(false)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(frames-1)), "ns/frame")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(frames-1)*slots), "ns/slot")
}
