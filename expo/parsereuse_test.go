package expo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/retrytop/retrytop/internal/expotest"
	"github.com/retrytop/retrytop/model"
)

// TestParseResultOutlivesNextParse: the fast path reuses its families,
// samples and bucket room from parse to parse (textParser.spare), so a
// result must share none of it. Every body of lineCacheSteps is parsed
// in turn as one target's scrapes, with and without a filter; each result
// is kept and, after all the later parses have run, must still equal
// expfmt's reading of its body. Appending to a result's buckets or
// quantiles must not reach another sample's.
func TestParseResultOutlivesNextParse(t *testing.T) {
	envoy, _ := expotest.GenEnvoy(30, false)
	steps := append(lineCacheSteps, struct{ name, body string }{"envoy", string(envoy)})
	filters := []func(string) bool{nil, only("h", "c_total", "s")}
	p := ExpfmtParser{Lines: NewLineCaches(0)}
	type kept struct {
		name   string
		body   string
		filter func(string) bool
		fams   []model.Family
		copied []model.Family // a deep copy made right after the parse
	}
	var all []kept
	for round := 0; round < 3; round++ {
		for _, st := range steps {
			for fi, filter := range filters {
				fams, err := p.Parse("reuse", []byte(st.body), "text/plain; version=0.0.4", filter)
				if err != nil {
					continue // malformed on purpose: expfmt's error, nothing kept
				}
				all = append(all, kept{st.name + map[int]string{0: "/all", 1: "/some"}[fi], st.body, filter, fams, expotest.CloneFamilies(fams)})
			}
		}
	}
	if len(all) < 2*len(steps) {
		t.Fatalf("only %d of %d parses succeeded", len(all), 3*2*len(steps))
	}
	for _, k := range all {
		if d := exactDiff(k.copied, k.fams); d != "" {
			t.Errorf("%s: changed by the parses after it: %s", k.name, d)
		}
		if k.filter == nil { // with a filter, expfmt may see an error the filter drops
			want, err := expfmtOnly([]byte(k.body), nil)
			if err != nil {
				t.Fatalf("%s: expfmt: %v", k.name, err)
			}
			if d := exactDiff(want, k.fams); d != "" {
				t.Errorf("%s: differs from expfmt: %s", k.name, d)
			}
		}
	}
	// Appending to one sample's buckets leaves its neighbours alone.
	last := all[len(all)-1]
	for _, f := range last.fams {
		for i := range f.Samples {
			s := &f.Samples[i]
			if cap(s.Buckets) != len(s.Buckets) || cap(s.Quantiles) != len(s.Quantiles) {
				t.Errorf("%s sample %d: buckets %d/%d, quantiles %d/%d (len/cap): an append would write into the next sample's",
					f.Name, i, len(s.Buckets), cap(s.Buckets), len(s.Quantiles), cap(s.Quantiles))
			}
			_ = append(s.Buckets, model.Bucket{UpperBound: math.NaN()})
		}
	}
	if d := exactDiff(last.copied, last.fams); d != "" {
		t.Errorf("%s: an append to a sample's buckets changed another: %s", last.name, d)
	}
}

// TestParseSteadyAllocations: once a target's line cache and the parser's
// room are warm, a text parse allocates only its result: the families,
// and one slice each for all samples, buckets and quantiles.
func TestParseSteadyAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts: not in -short")
	}
	body, _ := expotest.GenEnvoy(50, false)
	p := ExpfmtParser{Lines: NewLineCaches(0)}
	for _, filter := range []func(string) bool{nil, only("envoy_cluster_upstream_rq_time", "envoy_cluster_upstream_rq_total")} {
		for range 3 {
			if _, err := p.Parse("allocs", body, "text/plain; version=0.0.4", filter); err != nil {
				t.Fatal(err)
			}
		}
		// With a GC before each parse, as between scrapes a second
		// apart: the parser's room must survive it (a sync.Pool's would
		// not).
		got := testing.AllocsPerRun(20, func() {
			runtime.GC()
			if _, err := p.Parse("allocs", body, "text/plain; version=0.0.4", filter); err != nil {
				t.Fatal(err)
			}
		})
		// out, samples, buckets, and the parser's pool round trip.
		if got > 8 {
			t.Errorf("filter %v: %.1f allocations a steady parse, want at most 8", filter != nil, got)
		}
	}
}

// TestLineCacheCountsSharedOnce: the lines of one histogram series share
// its labels and key in the line cache, so the cache's bound counts them
// once, not once per line (it would fill the bound early and start over).
func TestLineCacheCountsSharedOnce(t *testing.T) {
	body := []byte(`# TYPE h histogram
h_bucket{a="x",le="1"} 1
h_bucket{a="x",le="2"} 1
h_bucket{a="x",le="+Inf"} 2
h_sum{a="x"} 3.5
h_count{a="x"} 2
`)
	owner := NewLineCaches(0)
	c := &lineCache{owner: owner}
	before := owner.Bytes()
	if _, ok := parseFast(body, nil, false, c); !ok {
		t.Fatal("not read by the fast path")
	}
	got := owner.Bytes() - before
	var want int64
	for k, e := range c.lines {
		if e.prefix == "" {
			continue
		}
		want += int64(len(e.prefix) + entryOverhead)
		if k == 1 { // the series' first line: its key and labels
			want += int64(len(e.key) + 32*len(e.labels))
		}
	}
	if got != want {
		t.Errorf("counted %d bytes, want %d (the key and labels of the series once)", got, want)
	}
}

// TestLineCacheArenaCompacts: a target whose lines change every scrape
// writes new prefixes into the cache's arena each time; once less than
// half of what was written is in use the arena is compacted, so it stays
// within twice the live prefixes, the parses through the cache still
// equal the uncached ones, and after a compaction neighbouring lines of
// one name share its string (the fast path's pointer comparison).
func TestLineCacheArenaCompacts(t *testing.T) {
	c := &lineCache{}
	compactions := 0
	for step := range 60 {
		var b strings.Builder
		b.WriteString("# TYPE h histogram\n")
		for k := range 40 {
			// The label value changes every step: every prefix is new.
			fmt.Fprintf(&b, "h_bucket{k=\"%d-%d\",le=\"1\"} 1\nh_bucket{k=\"%d-%d\",le=\"+Inf\"} 2\nh_count{k=\"%d-%d\"} 2\n", k, step, k, step, k, step)
		}
		fmt.Fprintf(&b, "c_total{s=\"%d\"} 1\nc_total{s=\"x\"} 2\n", step)
		before := c.arenaBytes
		checkCached(t, fmt.Sprint("step ", step), c, []byte(b.String()), nil, false)
		compacted := c.arenaBytes < before
		if compacted {
			compactions++
		}
		live := 0
		for k := range c.lines {
			live += len(c.lines[k].prefix)
		}
		if c.liveBytes != live {
			t.Fatalf("step %d: %d live prefix bytes kept, %d in the entries", step, c.liveBytes, live)
		}
		if c.arenaBytes > 2*live+minArenaChunk {
			t.Fatalf("step %d: %d arena bytes written since the last compaction for %d live", step, c.arenaBytes, live)
		}
		for k := 1; compacted && k < len(c.lines); k++ { // a compaction shares them again
			a, e := c.lines[k-1], c.lines[k]
			if a.name != "" && a.name == e.name && unsafe.StringData(a.name) != unsafe.StringData(e.name) {
				t.Fatalf("step %d: lines %d and %d have the name %q apart", step, k-1, k, e.name)
			}
		}
	}
	if compactions == 0 {
		t.Error("the arena was never compacted: the test does not reach it")
	}
}

// TestFinishHistogramSortedShortcut: finishHistogram skips the stable
// sort for buckets already in order without NaN; the result must be the
// sort's on every input: sorted, equal bounds, out of order, NaN bounds.
func TestFinishHistogramSortedShortcut(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	bounds := []float64{0.1, 0.5, 1, 1, 2.5, math.Inf(1), math.Inf(-1), math.NaN()}
	for i := range 20000 {
		n := rng.IntN(6)
		if i%4 == 1 {
			n = 20 + rng.IntN(40) // past the stable sort's insertion blocks: its merges too
		}
		bs := make([]model.Bucket, n)
		for k := range bs {
			bs[k] = model.Bucket{UpperBound: bounds[rng.IntN(len(bounds))], Count: float64(k)}
		}
		if i%2 == 0 { // half of them sorted (NaN stays where it falls)
			slices.SortStableFunc(bs, func(a, b model.Bucket) int { return lessInt(a.UpperBound < b.UpperBound, b.UpperBound < a.UpperBound) })
		}
		want := slices.Clone(bs)
		slices.SortStableFunc(want, func(a, b model.Bucket) int { return lessInt(a.UpperBound < b.UpperBound, b.UpperBound < a.UpperBound) })
		var s model.Sample
		finishHistogram(&s, slices.Clone(bs), 3, true, 1, true)
		got := s.Buckets[:min(len(s.Buckets), len(want))]
		for k := range want {
			w, g := want[k], got[k]
			if math.Float64bits(w.UpperBound) != math.Float64bits(g.UpperBound) || w.Count != g.Count {
				t.Fatalf("buckets %v: got %v, want %v first", bs, s.Buckets, want)
			}
		}
	}
}
