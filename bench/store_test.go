package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/internal/watchrig"
	"github.com/retrytop/retrytop/model"
)

// BenchmarkStoreMemory fills a store at its default history (900 scrapes,
// 15 minutes at 1 s) with a body's every family and reports the live heap
// per stored sample (B/sample) and its ratio to the goal of 8 B, the top
// of Prometheus 2.42's head on the same targets (8–11 B).
func BenchmarkStoreMemory(b *testing.B) {
	for _, body := range Bodies() {
		if body.Name == "envoy100k" {
			continue // 2 GB of rings today; the 2k shapes say the same per sample
		}
		b.Run("body="+body.Name, func(b *testing.B) {
			p := expo.ExpfmtParser{Lines: expo.NewLineCaches(0)}
			history := model.DefaultStoreConfig.History
			snaps := make([][]model.Family, 30)
			for i := range snaps {
				fams, err := p.Parse("bench", body.Text(i), textType, nil)
				if err != nil {
					b.Fatal(err)
				}
				snaps[i] = fams
			}
			for b.Loop() {
				before := watchrig.LiveHeap()
				st := model.NewStore(model.DefaultStoreConfig)
				at := time.Unix(1_700_000_000, 0)
				for i := range history {
					at = at.Add(time.Second)
					st.Append(&model.Snapshot{Target: "bench", Time: at, Families: snaps[i%len(snaps)]})
				}
				after := watchrig.LiveHeap()
				per := float64(after-before) / float64(body.Series*history)
				b.ReportMetric(per, "B/sample")
				b.ReportMetric(per/8, "ratio-goal8B")
				runtime.KeepAlive(st)
			}
		})
	}
}

// BenchmarkDumpSize writes 600 scrapes (10 minutes at 1 s) of a body whose
// counters grow, and reports the dump's bytes per sample and their ratio to
// zstd at its best level with a 128 MiB window over the same bodies
// concatenated (the anchor of docs/performance.md).
func BenchmarkDumpSize(b *testing.B) {
	const scrapes = 600
	for _, body := range Bodies() {
		if body.Name == "envoy100k" {
			continue
		}
		b.Run("body="+body.Name, func(b *testing.B) {
			for b.Loop() {
				path := filepath.Join(b.TempDir(), "size.rtd")
				w, err := dump.Create(path, false, dump.WriterOptions{})
				if err != nil {
					b.Fatal(err)
				}
				var all bytes.Buffer
				at := time.Unix(1_700_000_000, 0)
				for i := range scrapes {
					text := body.Text(i)
					all.Write(text)
					if err := w.Append("bench", at.Add(time.Duration(i)*time.Second), textType, text); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				fi, err := os.Stat(path)
				if err != nil {
					b.Fatal(err)
				}
				enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithWindowSize(128<<20))
				z := enc.EncodeAll(all.Bytes(), nil)
				samples := float64(body.Series * scrapes)
				b.ReportMetric(float64(fi.Size())/samples, "B/sample")
				b.ReportMetric(float64(len(z))/samples, "B/sample-zstd")
				b.ReportMetric(float64(fi.Size())/float64(len(z)), "ratio-dump/zstd")
			}
		})
	}
}

// BenchmarkDumpOptions writes the same 600 scrapes as BenchmarkDumpSize
// under the writer's choices that trade size for CPU (zstd level, key
// frame interval) and reports both for each: B/sample and the CPU of
// Writer.Append per scrape (getrusage around each call, body generation
// excluded). Not in bench-ratios.sh's default run; docs/performance.md
// ("Decisions") has what they decided.
//
//	cd bench && go test -run '^$' -bench DumpOptions -benchtime 1x
func BenchmarkDumpOptions(b *testing.B) {
	const scrapes = 600
	type choice struct {
		name  string
		level zstd.EncoderLevel
		key   int
	}
	choices := []choice{
		{"fastest-key240", zstd.SpeedFastest, 240}, {"default-key240", zstd.SpeedDefault, 240},
		{"fastest-key120", zstd.SpeedFastest, 120}, {"default-key120", zstd.SpeedDefault, 120},
	}
	for _, body := range Bodies() {
		if body.Name == "envoy100k" {
			continue
		}
		texts := make([][]byte, scrapes)
		for i := range texts {
			texts[i] = body.Text(i)
		}
		for _, c := range choices {
			b.Run("body="+body.Name+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					path := filepath.Join(b.TempDir(), "size.rtd")
					w, err := dump.Create(path, false, dump.WriterOptions{Level: c.level, KeyEvery: c.key})
					if err != nil {
						b.Fatal(err)
					}
					at := time.Unix(1_700_000_000, 0)
					var cpu time.Duration
					for i, text := range texts {
						c0 := cpuNow()
						if err := w.Append("bench", at.Add(time.Duration(i)*time.Second), textType, text); err != nil {
							b.Fatal(err)
						}
						cpu += cpuNow() - c0
					}
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
					fi, err := os.Stat(path)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(fi.Size())/float64(body.Series*scrapes), "B/sample")
					b.ReportMetric(float64(cpu.Nanoseconds())/scrapes, "cpu-ns/append")
				}
			})
		}
	}
}
