package dump

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

// valGen writes bodies whose numbers change every scrape and whose
// structure changes now and then, with the cases a value map must follow
// or refuse: counter resets, NaN and Inf written as text, wide and
// exponent numbers, _created, process_start_time_seconds (a restart),
// histograms with and without +Inf or _count, summaries with fractional
// and negative counts, timestamps (once in a while not an integer), a
// negative bucket, a float out of range, an untyped series given twice,
// and a first line that is a sample.
type valGen struct {
	rng     *rand.Rand
	c       [3]float64
	start   float64
	buckets [3]float64
	ts, ts2 int64
	first   bool
}

func newValGen(seed uint64) *valGen {
	return &valGen{rng: rand.New(rand.NewPCG(seed, 7)), c: [3]float64{100, 2000, 5}, start: 1.7e9, ts: 1700000000000}
}

// pick is rare cases' switch: true with probability p.
func (g *valGen) pick(p float64) bool { return g.rng.Float64() < p }

func (g *valGen) num(v float64) string {
	switch {
	case g.pick(0.002):
		return "NaN"
	case g.pick(0.002):
		return "+Inf"
	case g.pick(0.001):
		return "1e+999" // a slot strconv refuses
	case g.pick(0.05):
		return fmt.Sprintf("%.19f", v/1e9) // wide: past 2^53
	case g.pick(0.05):
		return fmt.Sprintf("%.3e", v)
	}
	return ff(v)
}

func (g *valGen) body() []byte {
	var b strings.Builder
	if g.pick(0.05) {
		g.first = !g.first // sticky: the structure stays most scrapes
	}
	if g.first {
		fmt.Fprintf(&b, "first_metric %s\n", g.num(float64(g.rng.IntN(100))))
	}
	b.WriteString("# HELP c_total A counter.\n# TYPE c_total counter\n")
	for k := range g.c {
		g.c[k] += float64(g.rng.IntN(50))
		if g.pick(0.03) {
			g.c[k] = 0 // a reset
		}
		fmt.Fprintf(&b, "c_total{k=\"%d\"} %s\n", k, g.num(g.c[k]))
	}
	fmt.Fprintf(&b, "c_created{k=\"0\"} %s\n", ff(g.start+0.5))
	if g.pick(0.02) {
		g.start += 3600 // a restart
	}
	fmt.Fprintf(&b, "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %s\n", ff(g.start))
	fmt.Fprintf(&b, "# TYPE g gauge\ng{x=\"1\"} %s\ng{x=\"2\"} %s\n", g.num(g.rng.NormFloat64()*1e3), ff(-g.rng.Float64()))
	b.WriteString("# TYPE h histogram\n")
	cum := 0.0
	for k, le := range []string{"0.1", "1", "+Inf"} {
		g.buckets[k] += float64(g.rng.IntN(10))
		cum = max(cum, g.buckets[k])
		v := ff(cum)
		if g.pick(0.003) {
			v = "-1" // a negative bucket: the parser refuses it
		}
		fmt.Fprintf(&b, "h_bucket{le=%q} %s\n", le, v)
	}
	fmt.Fprintf(&b, "h_sum %s\nh_count %s\n", ff(cum*0.37), ff(cum))
	// A histogram without +Inf and one without _count: fields derived
	// from other lines' values.
	if g.pick(0.05) {
		fmt.Fprintf(&b, "# TYPE h2 histogram\nh2_bucket{le=\"1\"} %s\nh2_count %s\n", ff(cum), ff(cum+1))
	}
	if g.pick(0.05) {
		fmt.Fprintf(&b, "# TYPE h3 histogram\nh3_bucket{le=\"+Inf\"} %s\nh3_sum 2\n", ff(cum))
	}
	b.WriteString("# TYPE s summary\n")
	fmt.Fprintf(&b, "s{quantile=\"0.5\"} %s\ns{quantile=\"0.9\"} %s\n", ff(g.rng.Float64()), g.num(g.rng.Float64()*10))
	count := ff(cum)
	switch {
	case g.pick(0.05):
		count = "3.7"
	case g.pick(0.01):
		count = "-2"
	}
	fmt.Fprintf(&b, "s_sum %s\ns_count %s\n", ff(cum*1.5), count)
	g.ts += 1000 + int64(g.rng.IntN(3))
	ts := fmt.Sprint(g.ts)
	if g.pick(0.003) {
		ts = "1.5" // not an integer: the parse fails
	}
	fmt.Fprintf(&b, "ts_metric %d %s\n", g.rng.IntN(9), ts)
	// The series' timestamp is its last line's: the one that changes
	// less often must still win.
	if g.pick(0.2) {
		g.ts2 = g.ts
	}
	fmt.Fprintf(&b, "# TYPE th histogram\nth_bucket{le=\"+Inf\"} %s %d\nth_count %s %d\n", ff(cum), g.ts, ff(cum), g.ts2)
	fmt.Fprintf(&b, "dup 1\ndup %d\n", g.rng.IntN(5))
	if g.pick(0.05) {
		fmt.Fprintf(&b, "late_%d 1\n", g.rng.IntN(3)) // the structure changes
	}
	return []byte(b.String())
}

// valDump writes n scrapes of two generated targets, a failed scrape
// now and then, key frames every keyEvery.
func valDump(t testing.TB, seed uint64, n, keyEvery int) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterOptions{KeyEvery: keyEvery})
	if err != nil {
		t.Fatal(err)
	}
	gens := []*valGen{newValGen(seed), newValGen(seed + 1)}
	at := time.Unix(1741057965, 0)
	for i := 0; i < n; i++ {
		for k, g := range gens {
			tg := fmt.Sprintf("t%d", k)
			at = at.Add(500 * time.Millisecond)
			if g.pick(0.03) {
				if err := w.AppendError(tg, at, "connection refused"); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := w.Append(tg, at, "text/plain; version=0.0.4", g.body()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// valFilter keeps some of valGen's families (and first_metric's never:
// a skipped first line).
func valFilter(name string) bool {
	switch name {
	case "c_total", "h", "h2", "s", "ts_metric", "th", "process_start_time_seconds", "dup":
		return true
	}
	return false
}

// sameFloat compares float bits: NaN equals NaN of the same bits, and 0
// is not -0.
func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// diffFamilies describes the first difference between a and b ("" when
// equal), floats compared by their bits.
func diffFamilies(a, b []model.Family) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d families, want %d", len(a), len(b))
	}
	for i := range a {
		fa, fb := &a[i], &b[i]
		if fa.Name != fb.Name || fa.Help != fb.Help || fa.Type != fb.Type || len(fa.Samples) != len(fb.Samples) {
			return fmt.Sprintf("family %d: %s/%q/%v/%d, want %s/%q/%v/%d", i, fa.Name, fa.Help, fa.Type, len(fa.Samples), fb.Name, fb.Help, fb.Type, len(fb.Samples))
		}
		for j := range fa.Samples {
			sa, sb := &fa.Samples[j], &fb.Samples[j]
			where := fmt.Sprintf("%s sample %d", fa.Name, j)
			if !sa.Labels.Equal(sb.Labels) || !sameFloat(sa.Value, sb.Value) || !sameFloat(sa.Count, sb.Count) || !sameFloat(sa.Sum, sb.Sum) ||
				sa.TimestampMs != sb.TimestampMs || sa.CreatedMs != sb.CreatedMs || sa.Baseline != sb.Baseline {
				return fmt.Sprintf("%s: %+v, want %+v", where, *sa, *sb)
			}
			if len(sa.Buckets) != len(sb.Buckets) || (sa.Buckets == nil) != (sb.Buckets == nil) ||
				len(sa.Quantiles) != len(sb.Quantiles) || (sa.Quantiles == nil) != (sb.Quantiles == nil) {
				return fmt.Sprintf("%s: buckets %v quantiles %v, want %v %v", where, sa.Buckets, sa.Quantiles, sb.Buckets, sb.Quantiles)
			}
			for k := range sa.Buckets {
				if !sameFloat(sa.Buckets[k].UpperBound, sb.Buckets[k].UpperBound) || !sameFloat(sa.Buckets[k].Count, sb.Buckets[k].Count) {
					return fmt.Sprintf("%s: bucket %d %v, want %v", where, k, sa.Buckets[k], sb.Buckets[k])
				}
			}
			for k := range sa.Quantiles {
				if !sameFloat(sa.Quantiles[k].Quantile, sb.Quantiles[k].Quantile) || !sameFloat(sa.Quantiles[k].Value, sb.Quantiles[k].Value) {
					return fmt.Sprintf("%s: quantile %d %v, want %v", where, k, sa.Quantiles[k], sb.Quantiles[k])
				}
			}
		}
	}
	return ""
}

// refSnapshot is entry i read as before value maps: the frame copied,
// then parsed by expo.ExpfmtParser.
func refSnapshot(r *Reader, i int, filter func(string) bool) (*model.Snapshot, error) {
	d := newDumpRecording(r, expo.ExpfmtParser{}, filter)
	return d.snapshotCopy(i)
}

// compareSnapshots fails t unless got and want (and their errors) agree.
func compareSnapshots(t *testing.T, what string, got, want *model.Snapshot, gerr, werr error) {
	t.Helper()
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("%s: error %v, want %v", what, gerr, werr)
	}
	if gerr != nil {
		return
	}
	if got.Target != want.Target || !got.Time.Equal(want.Time) || got.ProcessStart != want.ProcessStart || got.Baseline != want.Baseline {
		t.Fatalf("%s: snapshot %s %v, want %s %v", what, got.Target, got.Time, want.Target, want.Time)
	}
	if d := diffFamilies(got.Families, want.Families); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
}

// wrapParser calls the recording's own parse as a dialect translator's
// Parsing does (OpenOptions.Wrap): through a func, and every third parse
// first unfiltered (a whole parse that names every family), then
// filtered.
type wrapParser struct {
	inner expo.Parser
	n     int
}

func (w *wrapParser) Parse(target string, body []byte, ct string, filter func(string) bool) ([]model.Family, error) {
	w.n++
	if w.n%3 == 0 && filter != nil {
		all, err := w.inner.Parse(target, body, ct, nil)
		if err == nil {
			kept := all[:0:0]
			for _, f := range all {
				if filter(f.Name) {
					kept = append(kept, f)
				}
			}
			_ = kept // the translator keeps these; the filtered parse must agree with them
		}
	}
	return w.inner.Parse(target, body, ct, filter)
}

// TestValuesEqualParse reads every dump fixture and generated dumps
// through value maps, in order, backwards, at random and through a Fork,
// with and without a filter, and under a wrapper (OpenOptions.Wrap):
// each snapshot must equal the one a copy of the frame parsed by
// expo.ExpfmtParser gives (floats by their bits, errors by their
// text). Generated dumps must go through a map most of the time, or the
// test tests nothing.
func TestValuesEqualParse(t *testing.T) {
	type input struct {
		name      string
		data      []byte
		wantMaps  bool
		fromFixed bool
	}
	var inputs []input
	fixtures, _ := filepath.Glob("testdata/*.rtd")
	if len(fixtures) == 0 {
		t.Fatal("no dump fixtures in testdata")
	}
	for _, f := range fixtures {
		b, err := readFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, input{name: f, data: b, fromFixed: true})
	}
	for seed := uint64(1); seed <= 4; seed++ {
		keyEvery := []int{1, 3, 50, 1000}[seed-1]
		inputs = append(inputs, input{name: fmt.Sprintf("generated seed %d key every %d", seed, keyEvery), data: valDump(t, seed, 150, keyEvery), wantMaps: keyEvery > 1})
	}
	for _, in := range inputs {
		for _, filter := range []func(string) bool{nil, valFilter} {
			for _, via := range []string{"ExpfmtParser", "wrapped", "plain"} {
				name := fmt.Sprintf("%s, filter %v, %s", in.name, filter != nil, via)
				t.Run(name, func(t *testing.T) {
					ref := openBytes(t, in.data)
					d := newDumpRecording(openBytes(t, in.data), expo.ExpfmtParser{}, filter)
					if via == "plain" { // no value maps: every frame is given its text
						d = newDumpRecording(openBytes(t, in.data), plainParser{}, filter)
					}
					if via == "wrapped" {
						d = newWrappedRecording(openBytes(t, in.data), func(p expo.Parser) expo.Parser { return &wrapParser{inner: p} }, filter, new(atomic.Int64), expo.NewLineCaches(0))
					}
					n := d.Len()
					check := func(d *dumpRecording, order string, i int) {
						got, gerr := d.Snapshot(i)
						want, werr := refSnapshot(ref, i, filter)
						compareSnapshots(t, fmt.Sprintf("%s entry %d", order, i), got, want, gerr, werr)
					}
					for i := 0; i < n; i++ {
						check(d, "in order", i)
					}
					if in.wantMaps && via != "plain" && d.mapped < n/2 {
						t.Errorf("%d of %d entries read through a map, want at least half", d.mapped, n)
					}
					// Version 5: a frame read through a map is read from
					// its checked numbers, its text not rendered. The
					// repeats fixture's slots are all values: only its two
					// targets' first frames, parsed, are rendered.
					if via == "ExpfmtParser" && strings.HasSuffix(in.name, "v5-repeats.rtd") && d.r.renders != 2 {
						t.Errorf("%d of %d frames rendered, want 2", d.r.renders, n)
					}
					for i := n - 1; i >= 0; i-- {
						check(d, "backwards", i)
					}
					rng := rand.New(rand.NewPCG(uint64(n), 3))
					for k := 0; k < min(n, 300); k++ {
						check(d, "at random", rng.IntN(n))
					}
					f, err := d.Fork()
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					for i := n / 3; i < n; i++ {
						check(f.(*dumpRecording), "fork", i)
					}
				})
			}
		}
	}
}

func readFile(path string) ([]byte, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b := make([]byte, r.Size())
	_, err = r.ra.ReadAt(b, 0)
	return b, err
}

// TestValueMapRefuses checks the cases where a map must not be used, one
// body pair each: the second body has the first's structure, and its
// parse must come from the parser (Apply refuses, or Bind does).
func TestValueMapRefuses(t *testing.T) {
	cases := []struct {
		name       string
		a, b       string
		bind, keep bool // Bind gives a map; Apply on b succeeds
		filter     func(string) bool
	}{
		{"plain", "x 1\ny 2\n", "x 3\ny 4.5\n", true, true, nil},
		{"negative histogram count", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count -1\n", true, false, nil},
		{"negative bucket", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} -1\nh_count 1\n", true, false, nil},
		{"timestamp not an integer", "x 1 100\n", "x 1 1.5\n", true, false, nil},
		{"float out of range", "# HELP x x\nx 1\n", "# HELP x x\nx 1e+999\n", true, false, nil},
		{"first line out of range", "x 1\n", "x 1e+999\n", true, false, nil},
		// The filter skips the first line unread, but notExposition reads
		// its value.
		{"skipped first line out of range", "first_metric 1\ndup 2\n", "first_metric 1e+999\ndup 2\n", true, false, valFilter},
		{"skipped line", "first_metric 1\ndup 2\nother 3\n", "first_metric 5\ndup 2\nother 1e+999\n", true, true, valFilter},
		{"no +Inf bucket", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n", "", false, false, nil},
		{"no _count", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\n", "", false, false, nil},
		{"buckets out of order", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_bucket{le=\"1\"} 1\nh_count 1\n", "", false, false, nil},
		{"timestamp written twice, once as text", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1 0100\nh_count 1 5\n", "", false, false, nil},
		{"summary count kept as an integer", "# TYPE s summary\ns_count 3\n", "# TYPE s summary\ns_count 3.7\n", true, true, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fams, vm, err := expo.ExpfmtParser{}.ParseValues("t", []byte(c.a), "text/plain", c.filter)
			if err != nil {
				t.Fatal(err)
			}
			var ta tokens
			ta.wide = true
			tokenize([]byte(c.a), &ta)
			body, offs, err := ta.renderOffs(nil, nil, len(c.a))
			if err != nil || string(body) != c.a {
				t.Fatalf("render %q %v", body, err)
			}
			sm := vm.Bind(fams, offs)
			if (sm != nil) != c.bind {
				t.Fatalf("Bind gave a map: %v, want %v", sm != nil, c.bind)
			}
			if sm == nil {
				return
			}
			var tb tokens
			tb.wide = true
			tokenize([]byte(c.b), &tb)
			if !bytes.Equal(tb.structure, ta.structure) {
				t.Fatalf("the case's bodies differ in structure: %q, %q", ta.structure, tb.structure)
			}
			bodyB, offsB, _ := tb.renderOffs(nil, nil, len(c.b))
			got, ok := sm.Apply(bodyB, offsB, nil, nil)
			if ok != c.keep {
				t.Fatalf("Apply ok %v, want %v", ok, c.keep)
			}
			if ok {
				want, err := expo.ExpfmtParser{}.Parse("t", []byte(c.b), "text/plain", c.filter)
				if err != nil {
					t.Fatal(err)
				}
				if d := diffFamilies(got, want); d != "" {
					t.Fatal(d)
				}
			}
		})
	}
}

// TestValueMapTrustsOnlyGivenValues: after an Apply refused partway the
// map reads every slot again; a value the caller did not mark changed is
// read from the text, not from vals, which need not hold it.
func TestValueMapTrustsOnlyGivenValues(t *testing.T) {
	const hist = "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count %s\n"
	a := "x 1\ny 2\n" + fmt.Sprintf(hist, "1")
	refused := "x 3\ny 2\n" + fmt.Sprintf(hist, "-1") // x written, then the count refused
	c := "x 3\ny 5\n" + fmt.Sprintf(hist, "1")
	render := func(body string) (*tokens, []byte, []int32) {
		var tk tokens
		tk.wide = true
		tokenize([]byte(body), &tk)
		b, offs, err := tk.renderOffs(nil, nil, len(body))
		if err != nil || string(b) != body {
			t.Fatalf("render %q: %q %v", body, b, err)
		}
		return &tk, b, offs
	}
	fams, vm, err := expo.ExpfmtParser{}.ParseValues("t", []byte(a), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, offsA := render(a)
	sm := vm.Bind(fams, offsA)
	if sm == nil {
		t.Fatal("no map")
	}
	_, bodyR, offsR := render(refused)
	if _, ok := sm.Apply(bodyR, offsR, nil, nil); ok {
		t.Fatal("a negative count applied")
	}
	tc, bodyC, offsC := render(c)
	changed := make([]bool, len(tc.nums))
	vals := make([]float64, len(tc.nums))
	for i := range vals {
		vals[i] = 999 // not the slots' numbers: must not be read
	}
	changed[1], vals[1] = true, 5 // y
	got, ok := sm.Apply(bodyC, offsC, changed, vals)
	if !ok {
		t.Fatal("Apply refused a body it can read")
	}
	want, err := expo.ExpfmtParser{}.Parse("t", []byte(c), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffFamilies(got, want); d != "" {
		t.Fatal(d)
	}
}

// FuzzValueMap: a body, and the same structure with other numbers (from
// the seed): when the map of the first's parse applies to the second, the
// result must be the second's parse.
func FuzzValueMap(f *testing.F) {
	g := newValGen(1)
	for i := 0; i < 8; i++ {
		f.Add(g.body(), uint64(i))
	}
	f.Add([]byte("x 1 100\n"), uint64(9))
	f.Fuzz(func(t *testing.T, a []byte, seed uint64) {
		if len(a) > 1<<16 {
			return
		}
		for _, filter := range []func(string) bool{nil, valFilter} {
			fams, vm, err := expo.ExpfmtParser{}.ParseValues("t", a, "text/plain", filter)
			if err != nil || vm == nil {
				return
			}
			var ta tokens
			ta.wide = true
			tokenize(a, &ta)
			body, offs, err := ta.renderOffs(nil, nil, len(a))
			if err != nil || !bytes.Equal(body, a) {
				t.Fatalf("render: %v", err)
			}
			sm := vm.Bind(fams, offs)
			if sm == nil {
				continue
			}
			// Other numbers of every shape a slot takes.
			rng := rand.New(rand.NewPCG(seed, 1))
			tb := ta
			tb.nums = append([]num(nil), ta.nums...)
			for k := range tb.nums {
				n := &tb.nums[k]
				switch rng.IntN(6) {
				case 0: // unchanged
				case 1:
					n.m += int64(rng.IntN(1000))
				case 2:
					n.m = -n.m
				case 3:
					n.m, n.f, n.hasExp, n.exp = int64(rng.Uint64()>>8), uint8(rng.IntN(20)), false, 0
				case 4:
					n.m, n.f, n.hasExp, n.exp = int64(rng.IntN(100)), uint8(rng.IntN(2)), true, int16(rng.IntN(700)-350)
				default:
					n.m, n.f, n.hasExp = 0, 0, false
				}
				if n.m == 0 && n.f == 0 {
					n.hasExp = false // "0e+05" is not canonical
				}
			}
			b, offsB, err := tb.renderOffs(nil, nil, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := sm.Apply(b, offsB, nil, nil)
			if !ok {
				// A failed Apply leaves the map to read every slot
				// again, whatever changed says.
				var vs valueState
				if got, ok := sm.Apply(a, offs, make([]bool, len(ta.nums)), vs.slotValues(ta.nums, nil)); ok {
					if d := diffFamilies(got, fams); d != "" {
						t.Fatalf("%q after a failed Apply: %s", a, d)
					}
				}
				continue
			}
			want, err := expo.ExpfmtParser{}.Parse("t", b, "text/plain", filter)
			if err != nil {
				t.Fatalf("the map read %q, which does not parse: %v", b, err)
			}
			if d := diffFamilies(got, want); d != "" {
				t.Fatalf("%q: %s", b, d)
			}
			// A third body, read from the second with only the slots
			// that changed.
			tc := tb
			tc.nums = append([]num(nil), tb.nums...)
			changed := make([]bool, len(tc.nums))
			for k := range tc.nums {
				if rng.IntN(3) == 0 {
					tc.nums[k].m += int64(rng.IntN(5))
				}
				changed[k] = tc.nums[k].m != tb.nums[k].m
			}
			c, offsC, err := tc.renderOffs(nil, nil, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			var vs valueState
			vals := vs.slotValues(tc.nums, nil)
			if rng.IntN(2) == 0 {
				vals = nil // the text only
			}
			ok = false
			if vals != nil && rng.IntN(2) == 0 {
				got, ok = sm.ApplyValues(changed, vals) // false: some slot needs the text
			}
			if !ok {
				got, ok = sm.Apply(c, offsC, changed, vals)
			}
			if !ok {
				continue
			}
			want, err = expo.ExpfmtParser{}.Parse("t", c, "text/plain", filter)
			if err != nil {
				t.Fatalf("the map read %q, which does not parse: %v", c, err)
			}
			if d := diffFamilies(got, want); d != "" {
				t.Fatalf("%q (changed slots only): %s", c, d)
			}
		}
	})
}

// TestValueMapsBoundedInTotal: what the value maps keep is counted over a
// recording and its Forks together, never passes maxValueMapBytes, and is
// given back when they close; a target that finds no room is parsed, with
// the same snapshots. Two targets, a budget with room for one map: the
// first target mapped keeps its map, the other parses every frame.
func TestValueMapsBoundedInTotal(t *testing.T) {
	data := valDump(t, 1, 60, 1000)
	ref := openBytes(t, data)
	d := newDumpRecording(openBytes(t, data), expo.ExpfmtParser{}, nil)
	n := d.Len()
	for i := 0; i < n; i++ {
		got, gerr := d.Snapshot(i)
		want, werr := refSnapshot(ref, i, nil)
		compareSnapshots(t, fmt.Sprintf("entry %d", i), got, want, gerr, werr)
	}
	if len(d.vals) != 2 {
		t.Fatalf("%d targets mapped without a bound, want 2", len(d.vals))
	}
	var one, all int64
	for _, vs := range d.vals {
		one = max(one, vs.size)
		all += vs.size
	}
	if got := d.kept.Load(); got != all || all == 0 {
		t.Fatalf("kept %d bytes, the maps reckon %d", got, all)
	}
	d.Close()
	if got := d.kept.Load(); got != 0 {
		t.Fatalf("kept %d bytes after Close, want 0", got)
	}

	defer func(old int64) { maxValueMapBytes = old }(maxValueMapBytes)
	maxValueMapBytes = one + one/2 // room for one map, not two
	d = newDumpRecording(openBytes(t, data), expo.ExpfmtParser{}, nil)
	f, err := d.Fork()
	if err != nil {
		t.Fatal(err)
	}
	fd := f.(*dumpRecording)
	for i := 0; i < n; i++ {
		for _, r := range []*dumpRecording{d, fd} {
			got, gerr := r.Snapshot(i)
			want, werr := refSnapshot(ref, i, nil)
			compareSnapshots(t, fmt.Sprintf("entry %d", i), got, want, gerr, werr)
			if k := d.kept.Load(); k > maxValueMapBytes {
				t.Fatalf("entry %d: maps keep %d bytes, over the bound %d", i, k, maxValueMapBytes)
			}
		}
	}
	if got := len(d.vals) + len(fd.vals); got != 1 {
		t.Errorf("%d maps kept by the recording and its Fork, want 1 (room for one)", got)
	}
	if d.mapped+fd.mapped == 0 {
		t.Error("no frame read through the one map there was room for")
	}
	fd.Close()
	d.Close()
	if got := d.kept.Load(); got != 0 {
		t.Fatalf("kept %d bytes after both closed, want 0", got)
	}
}

// TestNumFloatAsParseFloat holds num.float to strconv.ParseFloat of the
// number's text, bit for bit, wherever it claims to know the value, and
// to claiming it where Clinger's fast path applies (|m| < 2^53, a scale
// within ±22).
func TestNumFloatAsParseFloat(t *testing.T) {
	toks := []string{"0", "1", "-1", "0.0", "0.05", "-0.5", "5.00", "1e+06", "1e+00", "1.5e-07",
		"0.1", "0.3", "2.675", "9007199254740991", "9007199254740993", "123456789012345678",
		"0.0000000000000000000001", "0.0007900039999999995", "1e+22", "1e+23", "1e-22", "1e-23",
		"4.35e+21", "17.000000000000004", "0.000", "1e+100", "-9007199254740992.5"}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 20000 {
		m := rng.Int64N(1 << 55)
		if rng.IntN(2) == 0 {
			m = rng.Int64N(1 << 30)
		}
		n := num{m: m, f: uint8(rng.IntN(20))}
		if rng.IntN(2) == 0 {
			n.m = -n.m
		}
		if n.m == 0 && n.f == 0 && rng.IntN(2) == 0 {
			continue
		}
		if rng.IntN(3) == 0 {
			n.hasExp, n.exp = true, int16(rng.IntN(60)-30)
		}
		toks = append(toks, string(appendNum(nil, n)))
	}
	claimed := 0
	for _, tok := range toks {
		n, ok := parseNumW([]byte(tok), true)
		if !ok {
			continue
		}
		want, err := strconv.ParseFloat(tok, 64)
		if err != nil {
			t.Fatalf("ParseFloat(%q): %v", tok, err)
		}
		got, known := n.float()
		fast := n.m < 1<<53 && n.m > -(1<<53) && n.scale() >= -22 && n.scale() <= 22
		if known != fast {
			t.Errorf("%q: float known = %v, want %v", tok, known, fast)
		}
		if known {
			claimed++
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("%q: float = %v (%x), ParseFloat %v (%x)", tok, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
	}
	if claimed < len(toks)/4 {
		t.Errorf("float claimed %d of %d numbers", claimed, len(toks))
	}
}

// plainParser is expo.ExpfmtParser as a parser that is not an
// expo.ValueParser: a recording gives it every frame's text.
type plainParser struct{}

func (plainParser) Parse(target string, body []byte, contentType string, filter func(string) bool) ([]model.Family, error) {
	return expo.ExpfmtParser{}.Parse(target, body, contentType, filter)
}
