package replay_test

import (
	"context"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/retrytop/retrytop/collect/dialect"
	"github.com/retrytop/retrytop/collect/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/replay"
)

// BenchmarkReopenSeek is `retrytop replay FILE` opened a second time, on
// collect/dump's 1-hour dump (RETRYTOP_BENCH_DUMP=FILE; make it with
// `RETRYTOP_BENCH_DUMP=FILE go test ./collect/dump -run '^$' -bench
// ReplaySeekIndexed/seek -benchtime 1x`), the Envoy dialect translating,
// as replay runs. The first open builds the index and writes it to a
// cache; then each round opens a new player and seeks to a random
// playhead:
//
//   - cached: the index read from the cache (load-s, the file's checks
//     included) and the seek restored from it (seek-s); the op is both.
//   - uncached: the same player without the file, its index still being
//     built: the seek loads the lookback (what a seek right after an
//     open did before the cache), to Settle.
//
// ratio reports, per round on one playhead, cached ÷ uncached.
func BenchmarkReopenSeek(b *testing.B) {
	path := os.Getenv("RETRYTOP_BENCH_DUMP")
	if path == "" {
		b.Skip("RETRYTOP_BENCH_DUMP=FILE names the 1-hour dump (see the comment)")
	}
	tr := func() replay.Transform {
		tr := dialect.Auto()
		return func(s *model.Snapshot) (*model.Snapshot, error) {
			out, _, err := tr.Translate("", s)
			return out, err
		}
	}
	rec, err := dump.OpenRecording(path, dump.OpenOptions{Filter: dialect.Auto().Filter})
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close()
	key, err := replay.IndexKey(path, "bench")
	if err != nil {
		b.Fatal(err)
	}
	cache := replay.IndexCache{Dir: b.TempDir()}
	p := replay.New(rec, replay.Options{NewTransform: tr})
	t0 := time.Now()
	if err := p.BuildIndex(context.Background()); err != nil {
		b.Fatal(err)
	}
	built := time.Since(t0)
	t0 = time.Now()
	if err := cache.Save(p, path, key); err != nil {
		b.Fatal(err)
	}
	saved := time.Since(t0)
	fi, err := os.Stat(cache.File(path))
	if err != nil {
		b.Fatal(err)
	}
	start, length := rec.Time(0), rec.Time(rec.Len()-1).Sub(rec.Time(0))
	rng := rand.New(rand.NewPCG(3, 4))
	var loads, seeks, ratios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		head := start.Add(time.Duration(rng.Int64N(int64(length))))
		b.StartTimer()
		t1 := time.Now()
		q := replay.New(rec, replay.Options{NewTransform: tr})
		if ok, err := cache.Load(q, path, key); !ok {
			b.Fatalf("not loaded: %v", err)
		}
		t2 := time.Now()
		q.Seek(head)
		if q.Tick() == time.Nanosecond {
			b.Fatal("the seek after reopening was not restored from the index")
		}
		t3 := time.Now()
		b.StopTimer()
		plain := replay.New(rec, replay.Options{NewTransform: tr})
		t4 := time.Now()
		plain.Seek(head)
		plain.Settle()
		uncached := time.Since(t4)
		loads = append(loads, t2.Sub(t1).Seconds())
		seeks = append(seeks, t3.Sub(t2).Seconds())
		ratios = append(ratios, t3.Sub(t1).Seconds()/uncached.Seconds())
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(median(loads), "load-s")
	b.ReportMetric(median(seeks), "seek-s")
	b.ReportMetric(median(ratios), "cached/uncached")
	b.ReportMetric(built.Seconds(), "build-s")
	b.ReportMetric(saved.Seconds(), "write-s")
	b.ReportMetric(float64(fi.Size())/1e6, "file-MB")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return v[len(v)/2]
}
