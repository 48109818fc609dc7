package dump_test

import (
	"context"
	"math/rand/v2"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/replay"
)

// BenchmarkReplaySeek seeks the replay player to a random time of the
// 1-hour, 10 x 2,000-series dump, until its store is ready to draw.
// quick: the first 40 s of scrapes (what the rows' window needs), shown
// at once; full: the whole 5-minute lookback (the timeline charts too).
func BenchmarkReplaySeek(b *testing.B) {
	path := dump.BenchDumpPath(b)
	// dialects is what retrytop replay does: parse only the families a
	// dialect reads (Envoy's here) and translate them into the contract.
	dialects := func() replay.Transform {
		tr := dialect.Auto()
		return func(s *model.Snapshot) (*model.Snapshot, error) {
			out, _, err := tr.Translate("", s)
			return out, err
		}
	}
	for _, tc := range []struct {
		name     string
		dialects bool
		full     bool
	}{
		{"quick/all-families", false, false},
		{"quick/dialects", true, false},
		{"full/all-families", false, true},
		{"full/dialects", true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			opts := dump.OpenOptions{}
			ropts := replay.Options{}
			if tc.dialects {
				opts.Filter = dialect.Auto().Filter
				ropts.NewTransform = dialects
			}
			rec, err := dump.OpenRecording(path, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer rec.Close()
			p := replay.New(rec, ropts)
			rng := rand.New(rand.NewPCG(1, 2))
			start, length := rec.Time(0), rec.Time(rec.Len()-1).Sub(rec.Time(0))
			if tc.dialects {
				// The Envoy clusters become rows.
				p.Seek(start.Add(length / 2))
				p.Settle()
				if len(p.Store().Names(rec.Targets()[0])) == 0 {
					b.Fatal("nothing stored")
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p.Seek(start.Add(time.Duration(rng.Int64N(int64(length)))))
				if tc.full {
					p.Settle()
				} else {
					p.Tick()
				}
			}
		})
	}
}

// BenchmarkReplaySeekIndexed is BenchmarkReplaySeek/full/dialects with
// the player's seek index built first (replay.Player.BuildIndex, as
// retrytop replay does in the background; not timed here, its cost and
// size are reported as index-s, index-MB in memory and index-file-MB as
// the cache writes it): a seek restores the store
// that playing from the start to the playhead builds, 5-minute lookback
// included. ratio is the anchor: each round times one seek and the
// decoding alone (no parse) of the frames the lookback holds, which the
// seek without an index decodes before parsing them, at the same
// playhead; seek/decode is the median of the rounds' ratios.
// ratio-noindex is that anchor for the seek without the index.
func BenchmarkReplaySeekIndexed(b *testing.B) {
	path := dump.BenchDumpPath(b)
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
	p := replay.New(rec, replay.Options{NewTransform: tr})
	t0 := time.Now()
	if err := p.BuildIndex(context.Background()); err != nil {
		b.Fatal(err)
	}
	built := time.Since(t0)
	if done, total, _ := p.IndexProgress(); done != total {
		b.Fatalf("the index reaches %d of %d entries", done, total)
	}
	start, length := rec.Time(0), rec.Time(rec.Len()-1).Sub(rec.Time(0))
	rng := rand.New(rand.NewPCG(1, 2))
	seek := func() time.Time {
		head := start.Add(time.Duration(rng.Int64N(int64(length))))
		p.Seek(head)
		if p.Tick() == time.Nanosecond {
			b.Fatal("the seek was not restored from the index")
		}
		return head
	}
	b.Run("seek", func(b *testing.B) {
		// CPU as well as wall: on a busy machine the wall time is mostly
		// waiting for a core.
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			seek()
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
		b.ReportMetric(built.Seconds(), "index-s")
		b.ReportMetric(float64(p.IndexBytes())/1e6, "index-MB")
		var file countingWriter
		if err := p.WriteIndex(&file, [32]byte{}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(file)/1e6, "index-file-MB")
	})
	// ratio: the seek over decoding the lookback's frames at the same
	// playhead; ratio-noindex the same for a player without the index
	// (the seek before it), each round on its own playhead.
	plain := replay.New(rec, replay.Options{NewTransform: tr})
	for _, c := range []struct {
		name string
		seek func() time.Time
	}{
		{"ratio", seek},
		{"ratio-noindex", func() time.Time {
			head := start.Add(time.Duration(rng.Int64N(int64(length))))
			plain.Seek(head)
			plain.Settle()
			return head
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			fork, err := rec.Fork()
			if err != nil {
				b.Fatal(err)
			}
			defer fork.Close()
			r := dump.DumpReader(fork)
			var ratios []float64
			for i := 0; i < b.N; i++ {
				t1 := time.Now()
				head := c.seek()
				t2 := time.Now()
				lo, hi := dump.Range(fork, head.Add(-5*time.Minute), head)
				for k := lo; k < hi; k++ {
					if _, err := r.Frame(k); err != nil {
						b.Fatal(err)
					}
				}
				ratios = append(ratios, float64(t2.Sub(t1))/float64(time.Since(t2)))
			}
			sort.Float64s(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "seek/decode")
		})
	}
}

// cpuTime is the process' user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAnalyzeWindow is `retrytop analyze FILE --from T --to T+30s`
// on the 1-hour, 10 x 2,000-series dump: open it (through its index
// frames), decode and parse only the 30 s of scrapes, with the dialects as
// analyze reads them, and build the report. B/op bounds what it holds.
func BenchmarkAnalyzeWindow(b *testing.B) {
	path := dump.BenchDumpPath(b)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < b.N; i++ {
		tr := dialect.Auto()
		rec, err := dump.OpenRecording(path, dump.OpenOptions{Filter: tr.Filter})
		if err != nil {
			b.Fatal(err)
		}
		start, length := rec.Time(0), rec.Time(rec.Len()-1).Sub(rec.Time(0))
		from := start.Add(time.Duration(rng.Int64N(int64(length - 30*time.Second))))
		lo, hi := dump.Range(rec, from, from.Add(30*time.Second))
		st := model.NewStore(model.StoreConfig{History: 64})
		statuses := dump.LoadStoreRange(rec, lo, hi, st, func(s *model.Snapshot) (*model.Snapshot, error) {
			out, _, err := tr.Translate("", s)
			return out, err
		})
		rep := analysis.BuildReport(st, statuses, analysis.ReportOptions{Window: 30 * time.Second})
		if len(rep.Dependencies) == 0 {
			b.Fatal("no rows")
		}
		rec.Close()
	}
}

// countingWriter counts what is written to it.
type countingWriter int64

func (c *countingWriter) Write(b []byte) (int, error) {
	*c += countingWriter(len(b))
	return len(b), nil
}
