package expo

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/internal/expotest"
	"github.com/retrytop/retrytop/model"
)

// preFiltered is ExpfmtParser's path before fastTextSelect: the line
// pre-filter copies the wanted groups' lines, then fastText or expfmt
// parses them.
func preFiltered(body []byte, filter func(string) bool) ([]model.Family, error) {
	sel := getSelection()
	defer putSelection(sel)
	sel.run(body, false, filter)
	if fams, ok := fastText(sel.out, filter); ok {
		return fams, nil
	}
	fams, err := parseText(sel.out)
	if err != nil {
		return nil, err
	}
	return convertFamilies(fams, filter), nil
}

// checkSelect requires fastTextSelect, when it takes a body, to give
// exactly what the pre-filter's path gives, which must then succeed.
func checkSelect(t *testing.T, name string, body []byte, filter func(string) bool) (accepted bool) {
	t.Helper()
	got, ok := fastTextSelect(body, filter)
	if !ok {
		return false
	}
	want, err := preFiltered(body, filter)
	if err != nil {
		t.Errorf("%s: fastTextSelect accepted a body the pre-filter's path rejects: %v", name, err)
		return true
	}
	if d := exactDiff(want, got); d != "" {
		t.Errorf("%s: fastTextSelect differs from the pre-filter's path: %s", name, d)
	}
	return true
}

var selectFilters = map[string]func(string) bool{
	"retry": func(n string) bool {
		return strings.HasPrefix(n, "retry_") || strings.HasPrefix(n, "envoy_cluster_upstream_rq")
	},
	"counter": only("retry_attempts_total", "envoy_cluster_upstream_rq_total", "foo_count"),
	"odd":     func(n string) bool { return len(n)%2 == 1 },
	"none":    func(string) bool { return false },
}

func TestFastTextSelectMatchesPreFilter(t *testing.T) {
	var files []string
	for _, dir := range []string{"testdata", "../dialect/testdata"} {
		m, _ := filepath.Glob(filepath.Join(dir, "*.prom"))
		files = append(files, m...)
	}
	envoy, _ := expotest.GenEnvoy(600, false)
	bodies := map[string][]byte{"generated envoy": envoy}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bodies[f] = b
	}
	for name, body := range bodies {
		for fname, filter := range selectFilters {
			checkSelect(t, name+"/"+fname, body, filter)
		}
	}
	if !checkSelect(t, "generated envoy", envoy, selectFilters["retry"]) {
		t.Error("fastTextSelect gave up on the generated Envoy exposition")
	}
}

// TestFastTextSelectCases: the corners of deciding per group in one pass.
func TestFastTextSelectCases(t *testing.T) {
	for _, c := range []struct {
		name, body string
		filter     func(string) bool
		taken      bool   // fastTextSelect takes the body
		families   string // the families it returns, when taken
	}{
		{"skipped family's error goes unreported", "# TYPE a counter\na_total 1\nb{x=\"1\" 2\n", only("a_total"), true, "a_total"},
		{"a wanted family's error is the parser's", "a_total{ 1\n", only("a_total"), false, ""},
		// foo is a summary the filter does not want; foo_count is
		// wanted by name but belongs to foo. Skipping foo would have made
		// foo_count a family of its own: give up instead.
		{"group wanted after skipped lines", "# TYPE foo summary\nfoo{quantile=\"0.5\"} 1\nfoo_count 3\n", only("foo_count"), false, ""},
		{"group wanted from its first line", "# TYPE foo_total counter\nfoo_total 1\n# TYPE bar gauge\nbar 2\n", only("foo_total"), true, "foo_total"},
		{"histogram by its base name", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\ng 1\n", only("h"), true, "h"},
		{"plain comments are not a family", "# hello\n# TYPE a gauge\na 1\n", only("a"), true, "a"},
		{"a UTF-8 label value is checked", "a{x=\"\xff\"} 1\n", only("a"), false, ""},
		{"a UTF-8 label value in a skipped family", "a 1\nb{x=\"\xff\"} 1\n", only("a"), true, "a"},
		{"valid UTF-8 passes", "a{x=\"é\"} 1\n", only("a"), true, "a"},
	} {
		fams, ok := fastTextSelect([]byte(c.body), c.filter)
		if ok != c.taken {
			t.Errorf("%s: taken %v, want %v", c.name, ok, c.taken)
			continue
		}
		if ok {
			if got := strings.Join(familyNames(fams), ","); got != c.families {
				t.Errorf("%s: families %q, want %q", c.name, got, c.families)
			}
			checkSelect(t, c.name, []byte(c.body), c.filter)
		}
	}
}

func FuzzFastTextSelect(f *testing.F) {
	for _, name := range []string{"text_good.prom", "histogram.prom", "summary.prom", "utf8.prom", "malformed.prom", "malformed_label.prom"} {
		f.Add(readFixture(f, name), uint8(0))
	}
	f.Add([]byte("# TYPE foo summary\nfoo{quantile=\"0.5\"} 1\nfoo_count 3\nretry_x_total 1\n"), uint8(1))
	names := []string{"retry", "counter", "odd", "none"}
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		n := names[int(which)%len(names)]
		checkSelect(t, n, body, selectFilters[n])
	})
}

// TestValueEnd holds the eight-bytes-at-a-time scan to the byte loop.
func TestValueEnd(t *testing.T) {
	ref := func(l []byte, j int) int {
		for ; j < len(l) && l[j] != '"' && l[j] != '\\' && l[j] < 0x80; j++ {
		}
		return j
	}
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte{'"', '\\', 0x80, 0xff, 0x7f, 0x21, 0x23, 0x5b, 0x5d, 0x00, 0x01, 'a'}
	for n := 0; n < 40; n++ {
		for trial := 0; trial < 300; trial++ {
			l := make([]byte, n)
			for i := range l {
				if rng.IntN(5) == 0 {
					l[i] = alphabet[rng.IntN(len(alphabet))]
				} else {
					l[i] = 'a' + byte(rng.IntN(26))
				}
			}
			j := 0
			if n > 0 {
				j = rng.IntN(n)
			}
			if got, want := valueEnd(l, j), ref(l, j); got != want {
				t.Fatalf("valueEnd(%q, %d) = %d, want %d", l, j, got, want)
			}
		}
	}
}
