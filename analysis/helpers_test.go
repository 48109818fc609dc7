package analysis

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// expand parses compact series notation in the style of Prometheus' test
// language. Items are separated by spaces:
//
//	7        one value
//	_        one scrape without the series
//	_x3      three scrapes without it
//	4x3      4 repeated: four values (like 4+0x3)
//	0+10x3   four values: 0 10 20 30
//	9-2x2    three values: 9 7 5
//
// Absent scrapes are NaN.
func expand(tb testing.TB, s string) []float64 {
	tb.Helper()
	var out []float64
	for _, item := range strings.Fields(s) {
		base, reps, hasX := strings.Cut(item, "x")
		n := 0
		if hasX {
			var err error
			if n, err = strconv.Atoi(reps); err != nil || n < 0 {
				tb.Fatalf("bad repeat in %q", item)
			}
		}
		if base == "_" {
			if !hasX {
				n = 1
			}
			for range n {
				out = append(out, math.NaN())
			}
			continue
		}
		start, step := base, "0"
		if i := strings.LastIndexAny(base, "+-"); i > 0 && base[i-1] != 'e' {
			start, step = base[:i], base[i:]
		}
		a, err1 := strconv.ParseFloat(start, 64)
		d, err2 := strconv.ParseFloat(step, 64)
		if err1 != nil || err2 != nil {
			tb.Fatalf("bad item %q", item)
		}
		if !hasX {
			out = append(out, a)
			continue
		}
		for i := 0; i <= n; i++ {
			out = append(out, a+float64(i)*d)
		}
	}
	return out
}

func TestExpand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"0+10x3", "0 10 20 30"},
		{"9-2x2 1", "9 7 5 1"},
		{"4x2 _ _x2 1.5", "4 4 4 NaN NaN NaN 1.5"},
		{"1e3 -5", "1000 -5"},
	} {
		var got []string
		for _, v := range expand(t, tc.in) {
			got = append(got, strconv.FormatFloat(v, 'g', -1, 64))
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("expand(%q) = %s, want %s", tc.in, g, tc.want)
		}
	}
}

// ts is one flat series in compact notation.
type ts struct {
	name   string
	labels []string // name, value pairs
	vals   string
}

// every returns n scrape times from startMs, stepMs apart.
func every(startMs, stepMs int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = startMs + int64(i)*stepMs
	}
	return out
}

// snapshots turns flat series into one snapshot per scrape time. Every
// flat series becomes a sample of a family named like it (histogram
// components are plain flat series here, exactly as the store keeps them).
// A scrape where no series is present still yields an (empty) snapshot.
func snapshots(tb testing.TB, target string, times []int64, series ...ts) []model.Snapshot {
	tb.Helper()
	vals := make([][]float64, len(series))
	for i, s := range series {
		vals[i] = expand(tb, s.vals)
		if len(vals[i]) > len(times) {
			tb.Fatalf("%s%v: %d values for %d scrapes", s.name, s.labels, len(vals[i]), len(times))
		}
	}
	out := make([]model.Snapshot, len(times))
	for k, t := range times {
		snap := model.Snapshot{Target: target, Time: time.UnixMilli(t)}
		index := map[string]int{}
		for i, s := range series {
			if k >= len(vals[i]) || math.IsNaN(vals[i][k]) {
				continue
			}
			fi, ok := index[s.name]
			if !ok {
				typ := model.Gauge
				if strings.HasSuffix(s.name, "_total") || strings.HasSuffix(s.name, "_bucket") ||
					strings.HasSuffix(s.name, "_count") || strings.HasSuffix(s.name, "_sum") {
					typ = model.Counter
				}
				fi = len(snap.Families)
				index[s.name] = fi
				snap.Families = append(snap.Families, model.Family{Name: s.name, Type: typ})
			}
			f := &snap.Families[fi]
			f.Samples = append(f.Samples, model.Sample{Labels: model.LabelsFromPairs(s.labels...), Value: vals[i][k]})
		}
		out[k] = snap
	}
	return out
}

// load appends the snapshots of one target to st (a new store when nil).
func load(tb testing.TB, st *model.Store, target string, times []int64, series ...ts) *model.Store {
	tb.Helper()
	if st == nil {
		st = model.NewStore(model.StoreConfig{})
	}
	for _, snap := range snapshots(tb, target, times, series...) {
		st.Append(&snap)
	}
	return st
}

// pointsOf builds a series' points from notation at the given times;
// absent values are left out, as the store leaves them out.
func pointsOf(tb testing.TB, times []int64, vals string) []model.Point {
	tb.Helper()
	vs := expand(tb, vals)
	if len(vs) > len(times) {
		tb.Fatalf("%d values for %d times", len(vs), len(times))
	}
	var out []model.Point
	for i, v := range vs {
		if !math.IsNaN(v) {
			out = append(out, model.Point{T: times[i], V: v})
		}
	}
	return out
}

// near reports whether a and b agree to 1e-9 relative (or absolute near 0).
func near(a, b float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// checkValue compares a Value with a wanted one; want NaN means Absent.
func checkValue(t *testing.T, name string, got model.Value, want float64) {
	t.Helper()
	switch {
	case math.IsNaN(want) && got.OK():
		t.Errorf("%s = %v, want absent", name, got.V())
	case !math.IsNaN(want) && !got.OK():
		t.Errorf("%s absent, want %v", name, want)
	case !math.IsNaN(want) && !near(got.V(), want):
		t.Errorf("%s = %v, want %v", name, got.V(), want)
	}
}

// absent is the wanted value of an absent signal in checkValue.
var absent = math.NaN()
