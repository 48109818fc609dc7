//go:build linux

package promapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/testpeer"
	"github.com/retrytop/retrytop/model"
)

// The fleet of BenchmarkFleetRefresh200: replicas of one job ("checkout")
// serving testdata/fleet.prom, in shards of fleetShard replicas (a label
// selects the first 50, 100 or all 200).
const (
	fleetJob      = "checkout"
	fleetReplicas = 200
	fleetShard    = 50
	fleetFixture  = "testdata/fleet.prom"
	// fleetServerEnv makes TestFleetServerProcess serve the fleet: the
	// benchmark re-executes its own binary with it, so that the server's
	// CPU is not the benchmark's.
	fleetServerEnv = "RETRYTOP_FLEET_SERVER"
	// fleetOrigin is added to the seconds since the server started, so
	// the counters look like those of replicas that have run a while.
	fleetOrigin = 1000.0
)

// fleetWeight scales replica i's rates: 0.5, 0.75, 1, 1.25, 1.5 in turn,
// so that replicas differ and any multiple of 5 of them averages 1.
func fleetWeight(i int) float64 { return 0.5 + 0.25*float64(i%5) }

// fleetLine is one line of the fixture: a comment, or a sample's name and
// labels (text, with the trailing space) and its value.
type fleetLine struct {
	text  string
	value float64
	grows bool // a counter or a histogram's bucket, count or sum: value is a rate per second
}

// loadFleetFixture reads the fixture; series is the number of samples.
func loadFleetFixture(path string) (lines []fleetLine, series int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	raw := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	types := map[string]string{}
	for _, l := range raw {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
	}
	for i, l := range raw {
		if l == "" || l[0] == '#' {
			lines = append(lines, fleetLine{text: l})
			continue
		}
		// The fixture has no spaces or braces inside label values.
		sp := strings.LastIndexByte(l, ' ')
		if sp < 0 {
			return nil, 0, fmt.Errorf("%s:%d: no value", path, i+1)
		}
		v, err := strconv.ParseFloat(l[sp+1:], 64)
		if err != nil {
			return nil, 0, fmt.Errorf("%s:%d: value %q: %w", path, i+1, l[sp+1:], err)
		}
		name := l[:sp]
		if k := strings.IndexByte(name, '{'); k >= 0 {
			name = name[:k]
		}
		grows := types[name] == "counter"
		for _, suf := range []string{"_bucket", "_count", "_sum"} {
			if base, ok := strings.CutSuffix(name, suf); ok && types[base] == "histogram" {
				grows = true
			}
		}
		if !grows && types[name] != "gauge" {
			return nil, 0, fmt.Errorf("%s:%d: %s has no counter, gauge or histogram TYPE", path, i+1, name)
		}
		lines = append(lines, fleetLine{text: l[:sp+1], value: v, grows: grows})
		series++
	}
	return lines, series, nil
}

// fleetRate is the fixture's rate per second (weight 1) of the samples of
// a counter whose labels start with dependency="dep".
func fleetRate(lines []fleetLine, name, dep string) float64 {
	prefix := name + `{dependency="` + dep + `"`
	sum := 0.0
	for _, l := range lines {
		if strings.HasPrefix(l.text, prefix) {
			sum += l.value
		}
	}
	return sum
}

// fleetHandler serves replica i's exposition at /replica/NNN: counters at
// rate x weight x (fleetOrigin + seconds since start), gauges as written.
type fleetHandler struct {
	lines []fleetLine
	start time.Time
}

func (h *fleetHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/replica/"))
	if err != nil || i < 0 || i >= fleetReplicas {
		http.NotFound(w, r)
		return
	}
	f := fleetWeight(i) * (fleetOrigin + time.Since(h.start).Seconds())
	buf := make([]byte, 0, 48<<10)
	for _, l := range h.lines {
		buf = append(buf, l.text...)
		if l.text != "" && l.text[0] != '#' {
			v := l.value
			if l.grows {
				v *= f
			}
			buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
		}
		buf = append(buf, '\n')
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write(buf)
}

// TestFleetServerProcess is not a test: it is the fleet server of
// BenchmarkFleetRefresh200, run in a process of its own when the benchmark
// re-executes the test binary with RETRYTOP_FLEET_SERVER=1. It prints its
// address and serves until its stdin closes (the benchmark ended or died).
func TestFleetServerProcess(t *testing.T) {
	if os.Getenv(fleetServerEnv) != "1" {
		t.Skip("the fleet server of BenchmarkFleetRefresh200; runs only when the benchmark starts it")
	}
	lines, _, err := loadFleetFixture(fleetFixture)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: &fleetHandler{lines: lines, start: time.Now()}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	fmt.Printf("fleet listening on %s\n", l.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

// fleetEnv is the benchmark's peers: the fleet server and Prometheus, both
// child processes, so that getrusage(RUSAGE_SELF) is the refreshes' alone.
type fleetEnv struct {
	lines     []fleetLine
	series    int // per replica
	prom      string
	promPID   int
	fleetPID  int
	rangeSecs int
}

// startFleetServer re-executes the test binary as the fleet server and
// returns its host:port.
func startFleetServer(b *testing.B, ctx context.Context) (string, int) {
	b.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFleetServerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), fleetServerEnv+"=1")
	// Killed with the benchmark even if it dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "fleet listening on "); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return addr, cmd.Process.Pid
		}
		b.Logf("fleet server: %s", sc.Text())
	}
	b.Fatalf("the fleet server exited without an address: %v", sc.Err())
	return "", 0
}

// startFleetPrometheus starts Prometheus scraping every replica at 1 s,
// discovered through a file_sd file (one group per replica: its
// __metrics_path__, a distinct instance and its shard), and waits until
// every replica has been scraped successfully over more than the range of
// the queries, so that increase() reads as many samples as it will in
// production.
func startFleetPrometheus(b *testing.B, ctx context.Context, host string, rangeSecs int) (string, int) {
	b.Helper()
	testpeer.Require(b, "prometheus", "prometheus") // skip before starting anything
	dir := b.TempDir()
	type group struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	groups := make([]group, fleetReplicas)
	for i := range groups {
		groups[i] = group{Targets: []string{host}, Labels: map[string]string{
			"__metrics_path__": fmt.Sprintf("/replica/%03d", i),
			"instance":         fmt.Sprintf("%s-%03d", fleetJob, i),
			"shard":            strconv.Itoa(i / fleetShard),
		}}
	}
	sd, err := json.Marshal(groups)
	if err != nil {
		b.Fatal(err)
	}
	sdPath := filepath.Join(dir, "fleet.json")
	if err := os.WriteFile(sdPath, sd, 0o644); err != nil {
		b.Fatal(err)
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"+
		"scrape_configs:\n  - job_name: %q\n    file_sd_configs:\n      - files: [%q]\n", fleetJob, sdPath)
	base, pid := testpeer.StartPrometheus(b, ctx, cfg)
	client, err := NewClient(ClientConfig{URL: base, Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	want := rangeSecs + 2
	q := fmt.Sprintf(`count(count_over_time(up{job=%q}[%ds]) >= %d and min_over_time(up{job=%q}[%ds]) == 1)`,
		fleetJob, 2*want, want, fleetJob, 2*want)
	deadline := time.After(time.Duration(3*want+60) * time.Second)
	poll := time.NewTicker(500 * time.Millisecond)
	defer poll.Stop()
	for {
		res, err := client.Query(ctx, q, time.Now())
		if err == nil && len(res.Series) == 1 && res.Series[0].Points[0].V == fleetReplicas {
			return base, pid
		}
		select {
		case <-poll.C:
		case <-deadline:
			b.Fatalf("prometheus never scraped all %d replicas %d times in a row: %v %+v", fleetReplicas, want, err, res.Series)
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		}
	}
}

// selfCPU is this process's user+system CPU (getrusage RUSAGE_SELF: every
// thread, no children).
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is process pid's user+system CPU from /proc/PID/stat, in clock
// ticks of 10 ms.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which may hold spaces: state is
	// field 3, utime 14 and stime 15.
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		b.Fatalf("/proc/%d/stat: %v", pid, err)
	}
	return time.Duration(u+st) * 10 * time.Millisecond
}

// promQueryStats are Prometheus' own totals of instant queries, from its
// /metrics: wall seconds in evaluation (engine, slice inner_eval) and in
// the /api/v1/query handler (evaluation, JSON encoding, writing).
type promQueryStats struct {
	eval, http float64
	requests   float64
}

func (e *fleetEnv) queryStats(b *testing.B) promQueryStats {
	resp, err := http.Get(e.prom + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var s promQueryStats
	found := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		var dst *float64
		switch {
		case strings.HasPrefix(l, `prometheus_engine_query_duration_seconds_sum{slice="inner_eval"} `):
			dst = &s.eval
		case strings.HasPrefix(l, `prometheus_http_request_duration_seconds_sum{handler="/api/v1/query"} `):
			dst = &s.http
		case strings.HasPrefix(l, `prometheus_http_request_duration_seconds_count{handler="/api/v1/query"} `):
			dst = &s.requests
		default:
			continue
		}
		v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
		if err != nil {
			b.Fatalf("prometheus /metrics: %q: %v", l, err)
		}
		*dst = v
		found++
	}
	if found != 3 {
		b.Fatalf("prometheus /metrics: %d of the 3 query statistics found", found)
	}
	return s
}

// jsonBytes is the size of the JSON answers to one round of qs (decoded,
// as the source reads them), fetched outside the measurement.
func (e *fleetEnv) jsonBytes(b *testing.B, qs []Query) int {
	total := 0
	now := strconv.FormatFloat(float64(time.Now().UnixMilli())/1000, 'f', 3, 64)
	for _, q := range qs {
		resp, err := http.PostForm(e.prom+"/api/v1/query", url.Values{"query": {q.PromQL}, "time": {now}})
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: status %d, %v", q.Name, resp.StatusCode, err)
		}
		total += int(n)
	}
	return total
}

// fleetSelector selects the first n replicas (whole shards).
func fleetSelector(n int) string {
	shards := make([]string, n/fleetShard)
	for i := range shards {
		shards[i] = strconv.Itoa(i)
	}
	return fmt.Sprintf(`{job=%q,shard=~%q}`, fleetJob, strings.Join(shards, "|"))
}

// BenchmarkFleetRefresh200 measures what `watch --prometheus` costs on a
// fleet: 200 replicas of one job calling 3 dependencies (514 series each,
// testdata/fleet.prom), served by a separate process (this binary
// re-executed), discovered by a real Prometheus through file_sd and
// scraped at 1 s. One op is one refresh of a Source as watch runs it
// (native dialect, step 1 s, range 1m or 10s), paced by a 1 s ticker as
// Source.Run is, with a 10 s query timeout; the timer runs only during the
// refresh, so ns/op is the mean refresh latency. docs/performance.md
// ("Fleets through Prometheus") has the numbers and the command.
//
// Sub-benchmarks: idle (one op is a second without refreshes: what
// Prometheus and the fleet cost by themselves), and for --by job (sums on
// the server) and --by job,instance (one target per replica, folded by the
// dashboard) the first 50, 100 and 200 replicas with the default range
// (1m), and 200 with a 10s range. Metrics per op:
// queries, series (stored by the refresh), json-KB (the answers' size),
// p50-ms and max-ms (refresh latency), cpu-ms (this process, getrusage),
// prom-cpu-ms and fleet-cpu-ms (the peers, /proc), prom-eval-ms and
// prom-http-ms (Prometheus' own wall time in evaluation and in its query
// handler, summed over the refresh's queries), failed (refreshes with a
// failed query); once per run: heap-MiB (the source and its store) and
// frame-ms (analysis.BuildFrame on the result plus the fold of the
// replicas into one row per dependency, as the dashboard does each
// refresh).
//
// It fails when a refresh's values are wrong: the series count, the
// targets, or originals/s and amplification per dependency (within 3 % of
// the fixture's rates times the replicas' weights).
func BenchmarkFleetRefresh200(b *testing.B) {
	lines, series, err := loadFleetFixture(fleetFixture)
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	rng := time.Minute // DefaultRange, which the sub-benchmarks' names spell
	host, fleetPID := startFleetServer(b, ctx)
	base, promPID := startFleetPrometheus(b, ctx, host, int(rng/time.Second))
	env := &fleetEnv{lines: lines, series: series, prom: base, promPID: promPID, fleetPID: fleetPID, rangeSecs: int(rng / time.Second)}

	b.Run("idle", func(b *testing.B) {
		p0, f0, s0 := procCPU(b, env.promPID), procCPU(b, env.fleetPID), selfCPU(b)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for range b.N {
			<-tick.C
		}
		n := float64(b.N)
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(ms(procCPU(b, env.promPID)-p0)/n, "prom-cpu-ms/op")
		b.ReportMetric(ms(procCPU(b, env.fleetPID)-f0)/n, "fleet-cpu-ms/op")
		b.ReportMetric(ms(selfCPU(b)-s0)/n, "cpu-ms/op")
	})
	for _, by := range [][]string{{"job"}, {"job", "instance"}} {
		for _, c := range []struct {
			n    int
			rng  time.Duration
			name string
		}{{50, rng, "1m"}, {100, rng, "1m"}, {200, rng, "1m"}, {200, 10 * time.Second, "10s"}} {
			b.Run(fmt.Sprintf("by=%s/replicas=%d/range=%s", strings.Join(by, ","), c.n, c.name), func(b *testing.B) {
				env.benchRefresh(b, by, c.n, c.rng)
			})
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (e *fleetEnv) benchRefresh(b *testing.B, by []string, n int, rng time.Duration) {
	ctx := b.Context()
	var m0, m1 runtimeMem
	m0.read()
	// A query timeout of 10 s instead of watch's (the interval, 1 s): the
	// latency measured is then the refresh's whole cost, not cut at 1 s.
	src, err := New(Options{Client: ClientConfig{URL: e.prom, Timeout: 10 * time.Second}, Selector: fleetSelector(n), By: by,
		Step: time.Second, Backfill: -1})
	if err != nil {
		b.Fatal(err)
	}
	// Warm-up: the first refreshes allocate the store's rings and the
	// integrals' baselines.
	for range 3 {
		src.Refresh(ctx)
	}
	e.check(b, src, by, n)
	qs := src.Queries()
	jsonKB := float64(e.jsonBytes(b, qs)) / 1024
	ps0 := e.queryStats(b)
	p0, f0, s0 := procCPU(b, e.promPID), procCPU(b, e.fleetPID), selfCPU(b)
	lat := make([]time.Duration, 0, b.N)
	failed, firstErr, stored := 0, "", 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		<-tick.C
		b.StartTimer()
		st := src.Refresh(ctx)
		lat = append(lat, st[0].ScrapeDuration)
		stored += st[0].Series
		if st[0].LastError != "" {
			failed++
			if firstErr == "" {
				firstErr = st[0].LastError
			}
		}
	}
	b.StopTimer()
	s1, p1, f1 := selfCPU(b), procCPU(b, e.promPID), procCPU(b, e.fleetPID)
	ps1 := e.queryStats(b)
	if firstErr != "" {
		b.Logf("%d of %d refreshes had a failed query, the first: %s", failed, b.N, firstErr)
	}
	e.check(b, src, by, n)
	frame := e.frameTime(b, src)
	m1.read()
	runtime.KeepAlive(src)

	N := float64(b.N)
	slices.Sort(lat)
	b.ReportMetric(float64(len(qs)), "queries/op")
	b.ReportMetric(float64(stored)/N, "series/op")
	b.ReportMetric(jsonKB, "json-KB/op")
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(ms(s1-s0)/N, "cpu-ms/op")
	b.ReportMetric(ms(p1-p0)/N, "prom-cpu-ms/op")
	b.ReportMetric(ms(f1-f0)/N, "fleet-cpu-ms/op")
	b.ReportMetric((ps1.eval-ps0.eval)*1000/N, "prom-eval-ms/op")
	b.ReportMetric((ps1.http-ps0.http)*1000/N, "prom-http-ms/op")
	b.ReportMetric(float64(failed)/N, "failed/op")
	b.ReportMetric(float64(m1.heap-m0.heap)/(1<<20), "heap-MiB")
	b.ReportMetric(ms(frame), "frame-ms")
	// Every query of every refresh reached the handler.
	if got, want := ps1.requests-ps0.requests, float64(b.N*len(qs)); got != want {
		b.Errorf("prometheus answered %v queries, want %v (%d refreshes of %d)", got, want, b.N, len(qs))
	}
}

// runtimeMem is the live heap after a full GC.
type runtimeMem struct{ heap uint64 }

func (m *runtimeMem) read() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.heap = ms.HeapAlloc
}

// check asserts the newest refresh: the server status, the targets and
// their series, and per dependency originals/s and amplification over the
// last 10 s against the fixture's rates.
func (e *fleetEnv) check(b *testing.B, src *Source, by []string, n int) {
	b.Helper()
	st := src.Statuses()
	// A refresh with a failed query (a timeout on a loaded machine) has
	// stale series: check one without.
	for tries := 0; st[0].LastError != "" && tries < 3; tries++ {
		b.Logf("checking after another refresh: %s", st[0].LastError)
		st = src.Refresh(b.Context())
	}
	perTarget := len(by) > 1
	wantTargets := 1
	if perTarget {
		wantTargets = n
	}
	if sv := st[0]; !sv.Up || sv.Series != e.series*wantTargets {
		b.Fatalf("server status %+v, want up with %d series", sv, e.series*wantTargets)
	}
	if len(st)-1 != wantTargets {
		b.Fatalf("%d targets, want %d", len(st)-1, wantTargets)
	}
	weights := 0.0
	for i := range n {
		weights += fleetWeight(i)
	}
	end := st[0].LastScrape.UnixMilli()
	start := end - 10_000
	store := src.Store()
	for _, dep := range []string{"db", "cache", "payments"} {
		orig := fleetRate(e.lines, "retry_originals_total", dep)
		amp := fleetRate(e.lines, "retry_attempts_total", dep) / orig
		var total float64
		for _, t := range st[1:] {
			if !t.Up || t.Series != e.series {
				b.Fatalf("target %+v, want up with %d series", t, e.series)
			}
			want := orig * weights
			if perTarget {
				_, inst, _ := strings.Cut(t.Name, "/")
				i, err := strconv.Atoi(strings.TrimPrefix(inst, fleetJob+"-"))
				if err != nil || t.Layer != fleetJob {
					b.Fatalf("target %q (layer %q): want %s/%s-NNN", t.Name, t.Layer, fleetJob, fleetJob)
				}
				want = orig * fleetWeight(i)
			}
			sig := analysis.SignalsFor(store, t.Name, dep, start, end)
			got, ok := sig.OriginalsPerS.Get()
			gotAmp, okAmp := sig.Amplification.Get()
			if !ok || !okAmp || math.Abs(got-want) > 0.03*want || math.Abs(gotAmp-amp) > 0.03*amp {
				b.Fatalf("%s -> %s: originals/s %v amplification %v, want %.4g and %.4g", t.Name, dep, sig.OriginalsPerS, sig.Amplification, want, amp)
			}
			total += got
		}
		if want := orig * weights; math.Abs(total-want) > 0.03*want {
			b.Fatalf("fleet -> %s: originals/s %.6g, want %.6g", dep, total, want)
		}
	}
}

// frameTime is the dashboard's analysis after one refresh: BuildFrame
// reusing the previous frame's final bins, as the live view does, and the
// fold of the replicas into one row per (layer, dependency).
func (e *fleetEnv) frameTime(b *testing.B, src *Source) time.Duration {
	st := src.Store()
	opts := analysis.FrameOptions{Align: true}
	prev := analysis.BuildFrame(st, src.Statuses(), opts)
	src.Refresh(b.Context())
	start := time.Now()
	opts.Prev = &prev
	f := analysis.BuildFrame(st, src.Statuses(), opts)
	layer := map[string]string{}
	for _, t := range f.Targets {
		layer[t.Name] = t.Layer
	}
	groups := map[[2]string][]model.Signals{}
	for _, r := range f.Rows {
		if l := layer[r.Target]; l != "" {
			k := [2]string{l, r.Dependency}
			groups[k] = append(groups[k], r)
		}
	}
	for k, members := range groups {
		analysis.Aggregate(k[0], members)
	}
	took := time.Since(start)
	if len(f.Rows) != 3*(len(f.Targets)-1) {
		b.Fatalf("frame has %d rows for %d targets, want 3 each", len(f.Rows), len(f.Targets)-1)
	}
	return took
}
