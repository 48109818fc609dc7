package expo

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/internal/expotest"
	"github.com/retrytop/retrytop/model"
)

// parseCached parses body with c as the target's line cache, as Parse
// does; skip is fastTextSelect's skipping.
func parseCached(c *lineCache, body []byte, filter func(string) bool, skip bool) ([]model.Family, bool) {
	return parseFast(body, filter, skip, c)
}

// checkCached requires a parse through the cache c to equal the parse of
// the same body without one: accepted alike, and bit for bit equal.
func checkCached(t *testing.T, name string, c *lineCache, body []byte, filter func(string) bool, skip bool) {
	t.Helper()
	want, wok := parseFast(body, filter, skip, nil)
	got, gok := parseCached(c, body, filter, skip)
	if wok != gok {
		t.Errorf("%s: accepted %v with the line cache, %v without", name, gok, wok)
		return
	}
	if d := exactDiff(want, got); wok && d != "" {
		t.Errorf("%s: the line cache changes the result: %s", name, d)
	}
}

// lineCacheSteps is a target's bodies scrape after scrape, each a change
// the cache must see through: values only, a series gone from the middle
// (every later line shifts), one back, label order and blanks changed, a
// label value changed, a family's type changed (le stops being special),
// labels added to a bare name, comments, blank lines and other families
// between a series' lines, a name alone on its line (malformed) and
// then with labels, a line turned malformed after its prefix, and a
// duplicate label after a cached prefix.
var lineCacheSteps = []struct{ name, body string }{
	{"first", `# TYPE h histogram
h_bucket{a="x",le="1"} 1
h_bucket{a="x",le="+Inf"} 2
h_sum{a="x"} 3.5
h_count{a="x"} 2
h_bucket{a="y",le="1"} 0
h_bucket{a="y",le="+Inf"} 1
h_count{a="y"} 1
# TYPE s summary
s{quantile="0.5",b="1"} 7
s_sum{b="1"} 9
s_count{b="1"} 3
# TYPE c counter
c_total{route="/a",code="200"} 10
c_total{route="/b",code="500"} 1
g 4
u{x="1"} 5 1700000000000
`},
	{"values", `# TYPE h histogram
h_bucket{a="x",le="1"} 2
h_bucket{a="x",le="+Inf"} 4
h_sum{a="x"} 7.25
h_count{a="x"} 4
h_bucket{a="y",le="1"} 1
h_bucket{a="y",le="+Inf"} 1
h_count{a="y"} 1
# TYPE s summary
s{quantile="0.5",b="1"} 8
s_sum{b="1"} 9.5
s_count{b="1"} 4
# TYPE c counter
c_total{route="/a",code="200"} 11
c_total{route="/b",code="500"} 1e3
g -0
u{x="1"} NaN 1700000001000
`},
	{"series gone", `# TYPE h histogram
h_bucket{a="y",le="1"} 1
h_bucket{a="y",le="+Inf"} 1
h_count{a="y"} 1
# TYPE s summary
s{quantile="0.5",b="1"} 8
s_sum{b="1"} 9.5
s_count{b="1"} 4
# TYPE c counter
c_total{route="/b",code="500"} 2
g 5
u{x="1"} 6 1700000002000
`},
	{"series back", `# TYPE h histogram
h_bucket{a="x",le="1"} 2
h_bucket{a="x",le="+Inf"} 4
h_sum{a="x"} 7.25
h_count{a="x"} 4
h_bucket{a="y",le="1"} 1
h_bucket{a="y",le="+Inf"} 1
h_count{a="y"} 1
# TYPE s summary
s{quantile="0.5",b="1"} 8
s_sum{b="1"} 9.5
s_count{b="1"} 4
# TYPE c counter
c_total{route="/a",code="200"} 11
c_total{route="/b",code="500"} 3
g 4
u{x="1"} 5
`},
	{"label order and blanks", `# TYPE h histogram
h_bucket{le="1",a="x"} 2
h_bucket{a="x",le="+Inf"}  4
h_sum{a="x"}	7.25
h_count {a="x"} 4
h_bucket{a="y", le="1"} 1
h_bucket{a="y",le="+Inf"} 1
h_count{a="y"} 1
# TYPE s summary
s{b="1",quantile="0.5"} 8
s_sum{b="1"} 9.5
s_count{b="1"} 4
# TYPE c counter
c_total{code="200",route="/a"} 11
c_total{route="/b",code="500"} 3
g  4
u{x="1"} 5
`},
	{"value changed", `# TYPE h histogram
h_bucket{le="1",a="x"} 2
h_bucket{a="x",le="+Inf"}  4
h_sum{a="x"}	7.25
h_count {a="x"} 4
h_bucket{a="y", le="1"} 1
h_bucket{a="z",le="+Inf"} 1
h_count{a="y"} 1
# TYPE s summary
s{b="1",quantile="0.25"} 8
s_sum{b="1"} 9.5
s_count{b="1"} 4
# TYPE c counter
c_total{code="200",route="/a"} 11
c_total{route="/c",code="500"} 3
g  4
u{x="1"} 5
`},
	{"type changed", `# TYPE h untyped
h_bucket{le="1",a="x"} 2
h_bucket{a="x",le="+Inf"}  4
h_sum{a="x"}	7.25
h_count {a="x"} 4
h_bucket{a="y", le="1"} 1
h_bucket{a="z",le="+Inf"} 1
h_count{a="y"} 1
# TYPE s histogram
s{b="1",quantile="0.25"} 8
s_sum{b="1"} 9.5
s_count{b="1"} 4
# TYPE c counter
c_total{code="200",route="/a"} 11
c_total{route="/c",code="500"} 3
g  4
u{x="1"} 5
`},
	{"labels added", `# TYPE h histogram
h_bucket{le="1",a="x"} 2
h_bucket{a="x",le="+Inf"}  4
h_sum{a="x"}	7.25
h_count {a="x"} 4
h_bucket{a="y", le="1"} 1
h_bucket{a="z",le="+Inf"} 1
h_count{a="y"} 1
# TYPE s summary
s{b="1",quantile="0.25"} 8
s_sum{b="1"} 9.5
s_count{b="1"} 4
# TYPE c counter
c_total{code="200",route="/a"} 11
c_total{route="/c",code="500"} 3
g{k="v"} 4
u{x="1"} 5
`},
	{"interleaved", `# TYPE h histogram
h_bucket{le="1",a="x"} 2
# between
h_bucket{a="x",le="+Inf"}  4

h_sum{a="x"}	7.25
g{k="v"} 4
h_count {a="x"} 4
h_bucket{a="y", le="1"} 1
# TYPE c counter
c_total{code="200",route="/a"} 11
c_total{route="/c",code="500"} 3
u{x="1"} 5
`},
	{"interleaved again", `# TYPE h histogram
h_bucket{le="1",a="x"} 3
# between
h_bucket{a="x",le="+Inf"}  5

h_sum{a="x"}	7.5
g{k="v"} 4
h_count {a="x"} 5
h_bucket{a="y", le="1"} 1
# TYPE c counter
c_total{code="200",route="/a"} 12
c_total{route="/c",code="500"} 3
u{x="1"} 5
`},
	{"bare name", "g\n"},
	{"labels after a bare name", `g{k="v"} 4
`},
	{"malformed after the prefix", `# TYPE h histogram
h_bucket{le="1",a="x"} 2 x
h_bucket{a="x",le="+Inf"}  4
`},
	{"duplicate label after the prefix", `# TYPE h histogram
h_bucket{le="1",a="x"} 2
h_bucket{a="x",le="+Inf"}  4
h_sum{a="x"}	7.25
h_count {a="x"} 4
h_bucket{a="y", le="1"} 1
h_bucket{a="z",le="+Inf"} 1
h_count{a="y"} 1
# TYPE s summary
s{b="1",quantile="0.25"} 8
s_sum{b="1"} 9.5
s_count{b="1"} 4
# TYPE c counter
c_total{code="200",route="/a"} 11
c_total{route="/c",code="500"} 3
g{k="v",k="w"} 4
u{x="1"} 5
`},
}

// TestLineCacheMatchesUncached parses a target's changing bodies through
// one line cache, with and without a filter and fastTextSelect's
// skipping, and requires each result to equal the uncached parse. It
// also checks that the steady bodies are read from the cache.
func TestLineCacheMatchesUncached(t *testing.T) {
	filters := map[string]func(string) bool{"all": nil}
	for k, v := range selectFilters {
		filters[k] = v
	}
	for fname, filter := range filters {
		for _, skip := range []bool{false, true} {
			c := &lineCache{}
			for _, st := range lineCacheSteps {
				checkCached(t, fname+"/"+st.name, c, []byte(st.body), filter, skip && filter != nil)
			}
		}
	}
	// One cache for every filter in turn: lines cached by a parse that read
	// them are then met by parses that skip them, and the other way round.
	mixed := &lineCache{}
	names := make([]string, 0, len(filters))
	for k := range filters {
		names = append(names, k)
	}
	sort.Strings(names)
	envoy, _ := expotest.GenEnvoy(100, false)
	steps := append(lineCacheSteps, struct{ name, body string }{"envoy", string(envoy)}, struct{ name, body string }{"envoy again", string(envoy)})
	for _, st := range steps {
		for _, fname := range names {
			checkCached(t, "mixed/"+fname+"/"+st.name, mixed, []byte(st.body), filters[fname], filters[fname] != nil)
			checkCached(t, "mixed/all after "+fname+"/"+st.name, mixed, []byte(st.body), nil, false)
		}
	}
	// The hits: a body with new values only takes every sample line's
	// prefix from the cache.
	owner := NewLineCaches(0)
	c := &lineCache{owner: owner}
	parseCached(c, []byte(lineCacheSteps[0].body), nil, false)
	cached := 0
	for _, e := range c.lines {
		if e.prefix != "" {
			cached++
		}
	}
	if want := strings.Count(lineCacheSteps[0].body, "\n") - 3; cached != want { // all but the TYPE lines
		t.Errorf("%d lines cached, want %d", cached, want)
	}
	before := owner.Bytes()
	checkCached(t, "values again", c, []byte(lineCacheSteps[1].body), nil, false)
	if after := owner.Bytes(); after != before && !owner.reset.Load() {
		t.Errorf("a body with new values only made %d bytes of new entries, want none", after-before)
	}
}

// TestLineCacheAcrossBodies shares one cache between unrelated bodies
// (two targets on one cache, or a target replaced by another): every
// fixture after every other, and the generated Envoy body at two sizes.
func TestLineCacheAcrossBodies(t *testing.T) {
	var bodies [][]byte
	for _, dir := range []string{"testdata", "../dialect/testdata"} {
		m, _ := filepath.Glob(filepath.Join(dir, "*.prom"))
		for _, f := range m {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, b)
		}
	}
	small, _ := expotest.GenEnvoy(100, false)
	large, _ := expotest.GenEnvoy(300, false)
	bodies = append(bodies, small, large, small)
	c := &lineCache{}
	for i, a := range bodies {
		for j, b := range bodies {
			if (i+j)%3 != 0 { // a third of the pairs keeps the test short
				continue
			}
			checkCached(t, "first", c, a, nil, false)
			checkCached(t, "second", c, b, selectFilters["retry"], true)
		}
	}
}

// TestParseUsesLineCache: Parse reads a target's text bodies through its
// line cache (ExpfmtParser.Lines), per target name, and a cache in use by another parse is
// not waited for.
func TestParseUsesLineCache(t *testing.T) {
	body := []byte(lineCacheSteps[0].body)
	p := ExpfmtParser{Lines: NewLineCaches(0)}
	name := t.Name()
	if _, err := p.Parse(name, body, selTextType, nil); err != nil {
		t.Fatal(err)
	}
	c := p.Lines.acquire(name, len(body))
	if c == nil {
		t.Fatal("no line cache for the target after a parse")
	}
	if len(c.lines) == 0 || c.lines[1].prefix != `h_bucket{a="x",le="1"} ` {
		t.Errorf("cache lines %d, line 2 %q", len(c.lines), c.lines[1].prefix)
	}
	if p.Lines.acquire(name, len(body)) != nil {
		t.Error("a cache in use was handed out twice")
	}
	// Parse goes without while the cache is held.
	fams, err := p.Parse(name, []byte(lineCacheSteps[1].body), selTextType, nil)
	p.Lines.release(c)
	want, _ := fastText([]byte(lineCacheSteps[1].body), nil)
	if err != nil || exactDiff(want, fams) != "" {
		t.Errorf("parse beside a held cache: %v, %s", err, exactDiff(want, fams))
	}
}

// FuzzLineCache parses a body after another through one cache: the
// second must parse as it does alone.
func FuzzLineCache(f *testing.F) {
	for i := 1; i < len(lineCacheSteps); i++ {
		f.Add([]byte(lineCacheSteps[i-1].body), []byte(lineCacheSteps[i].body))
	}
	for _, name := range []string{"text_good.prom", "histogram.prom", "summary.prom", "malformed_label.prom"} {
		b := readFixture(f, name)
		f.Add(b, bytes.ReplaceAll(b, []byte(" 1"), []byte(" 2")))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		c := &lineCache{}
		parseCached(c, a, nil, false)
		checkCached(t, "fuzz", c, b, nil, false)
		checkCached(t, "fuzz select", c, a, selectFilters["odd"], true)
	})
}

// TestLineCacheSkipsBodiesPastItsBound: a body whose lines alone would
// fill the caches' bound is parsed without a cache, so one huge target
// cannot hold more than the bound until the next parse resets it.
func TestLineCacheSkipsBodiesPastItsBound(t *testing.T) {
	body, _ := expotest.GenEnvoy(20000, false)
	l := NewLineCaches(int64(len(body)) * lineCacheBytesPerBodyByte / 2)
	p := ExpfmtParser{Lines: l}
	fams, err := p.Parse("big", body, selTextType, nil)
	if err != nil || len(fams) == 0 {
		t.Fatalf("parse: %d families, %v", len(fams), err)
	}
	if l.Bytes() != 0 {
		t.Errorf("the caches hold %d bytes after a body past their bound", l.Bytes())
	}
	small := []byte(lineCacheSteps[0].body)
	if _, err := p.Parse("small", small, selTextType, nil); err != nil || l.Bytes() == 0 {
		t.Errorf("a small body was not cached: %d bytes, %v", l.Bytes(), err)
	}
}
