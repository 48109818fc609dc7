package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// TestMain serves bodies when re-executed as the benchmark's target
// (BENCH_SERVE=name): the server's CPU must not count in the figures, so
// it runs in another process.
func TestMain(m *testing.M) {
	if name := os.Getenv("BENCH_SERVE"); name != "" {
		serve(name)
		return
	}
	os.Exit(m.Run())
}

// bodyTexts are the bodies a record benchmark's server serves for name:
// the body's step 0, or its steps 0 to 59 for a name ending in
// "-changing".
func bodyTexts(name string) [][]byte {
	base, changing := strings.CutSuffix(name, "-changing")
	var texts [][]byte
	for _, b := range Bodies() {
		if b.Name == base {
			texts = append(texts, b.Text(0))
			for i := 1; changing && i < 60; i++ {
				texts = append(texts, b.Text(i))
			}
		}
	}
	return texts
}

// serve answers every request with the body named name (at step 0) on a
// loopback port, prints the address and returns when stdin closes. A
// name ending in "-changing" serves the body's steps 0 to 59 in turn, so
// that every scrape's counters grew (and once in 60 went back, as after a
// restart).
func serve(name string) {
	texts := bodyTexts(name)
	var mu sync.Mutex
	next := 0
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		text := texts[next%len(texts)]
		next++
		mu.Unlock()
		w.Header().Set("Content-Type", textType)
		_, _ = w.Write(text)
	}))
}

// startServer runs this test binary as a body server; it is killed when
// the benchmark ends (its stdin closes, and the kill covers the rest).
func startServer(tb testing.TB, name string) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BENCH_SERVE="+name)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		tb.Fatal(err)
	}
	return "http://" + strings.TrimSpace(addr) + "/metrics"
}

// cpuNow is this process' user + system CPU time.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRecord compares the CPU of `retrytop record`'s scrape (the
// scraper as runRecord configures it, writing a dump) with a GET-only loop
// reading the same body with the same headers: ratio-record/get is
// record's CPU per scrape over the loop's, medians of interleaved rounds.
// A third contender scrapes the same way and writes nothing
// (ratio-scrape/get): the part of record's CPU that is the scraper's, not
// the dump's, which the dump cannot take back (ratio-record/scrape is the
// dump's share on top). The server is another process. envoy2k and
// gosvc2k serve one body, so every scrape's values equal the last's;
// envoy2k-changing serves 60 steps of it in turn, every counter growing.
func BenchmarkRecord(b *testing.B) {
	for _, name := range []string{"envoy2k", "gosvc2k", "envoy2k-changing"} {
		b.Run("body="+name, func(b *testing.B) {
			url := startServer(b, name)
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			var buf bytes.Buffer
			get := func() {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("Accept", scrape.DefaultAcceptHeader)
				req.Header.Set("Accept-Encoding", "gzip")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				buf.Reset()
				_, _ = buf.ReadFrom(resp.Body)
				resp.Body.Close()
			}
			w, err := dump.Create(filepath.Join(b.TempDir(), "rec.rtd"), false, dump.WriterOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			t, err := scrape.ParseTarget("app=" + url)
			if err != nil {
				b.Fatal(err)
			}
			scraper := func(hook func(string, time.Time, []byte, string, error)) func() {
				at := time.Unix(1_700_000_000, 0)
				clock := func() time.Time { at = at.Add(time.Second); return at }
				sc := scrape.NewScraper([]scrape.Target{t}, model.NewStore(model.StoreConfig{History: 2}),
					recordOptions(scrape.Options{Clock: clock, OnScrape: hook}))
				ctx := context.Background()
				return func() {
					if st := sc.ScrapeOnce(ctx); !st[0].Up {
						b.Fatal(st[0].LastError)
					}
				}
			}
			record := scraper(w.Hook(func(err error) { b.Fatal(err) }))
			scrapeOnly := scraper(func(string, time.Time, []byte, string, error) {})
			const n = 50
			cpu := func(f func()) func() float64 {
				return func() float64 {
					c0 := cpuNow()
					for range n {
						f()
					}
					return float64(cpuNow()-c0) / n
				}
			}
			for b.Loop() {
				cg, cs, cr := cpu(get), cpu(scrapeOnly), cpu(record)
				cg()
				cs()
				cr()
				var gs, ss, rs, ratios, sratios, rsratios []float64
				for range rounds() {
					g, s, r := cg(), cs(), cr()
					gs, ss, rs = append(gs, g), append(ss, s), append(rs, r)
					ratios, sratios, rsratios = append(ratios, r/g), append(sratios, s/g), append(rsratios, r/s)
				}
				b.ReportMetric(median(gs), "cpu-ns/get")
				b.ReportMetric(median(ss), "cpu-ns/scrape")
				b.ReportMetric(median(rs), "cpu-ns/record")
				b.ReportMetric(median(ratios), "ratio-record/get")
				b.ReportMetric(median(sratios), "ratio-scrape/get")
				b.ReportMetric(median(rsratios), "ratio-record/scrape")
			}
		})
	}
}

// BenchmarkRecordAppend is the dump's part of BenchmarkRecord alone:
// Writer.Append of the bodies record's server serves (one body, or 60
// steps in turn for -changing), to a file as record writes it. For
// profiles (-cpuprofile) and before/after runs of dump; the
// figures of docs/performance.md are BenchmarkRecord's ratios.
func BenchmarkRecordAppend(b *testing.B) {
	for _, name := range []string{"envoy2k", "gosvc2k", "envoy2k-changing"} {
		b.Run("body="+name, func(b *testing.B) {
			texts := bodyTexts(name)
			w, err := dump.Create(filepath.Join(b.TempDir(), "rec.rtd"), false, dump.WriterOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			at := time.Unix(1_700_000_000, 0)
			b.SetBytes(int64(len(texts[0])))
			b.ReportAllocs()
			i := 0
			c0 := cpuNow()
			for b.Loop() {
				at = at.Add(time.Second)
				if err := w.Append("app", at, textType, texts[i%len(texts)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			// CPU, not wall: on the shared machine a benchmark gets a
			// third of a core at times, which wall time counts as its own.
			b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/append")
		})
	}
}
