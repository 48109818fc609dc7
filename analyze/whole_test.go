package analyze

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/internal/testdump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/report"
	"github.com/retrytop/retrytop/sources"
)

// loadSequential is LoadStoreRange as it was before it parsed ahead: one
// entry read, transformed and stored at a time (the reference).
func loadSequential(rec dump.Recording, lo, hi int, st *model.Store, transform func(*model.Snapshot) (*model.Snapshot, error)) []model.TargetStatus {
	statuses := make(map[string]*model.TargetStatus)
	for _, t := range rec.Targets() {
		statuses[t] = &model.TargetStatus{Name: t}
	}
	for i := lo; i < hi; i++ {
		dump.ApplyEntry(rec, i, st, statuses, transform)
	}
	out := make([]model.TargetStatus, 0, len(statuses))
	for _, t := range rec.Targets() {
		out = append(out, *statuses[t])
	}
	return out
}

// wholeCase is one analyze FILE run: its window, bin, --from and --to
// (offsets from the recording's start, 0: none) and format; incident:
// the rows over the incident (the command's default) instead of the
// window ending at the last scrape.
type wholeCase struct {
	window, bin, from, to time.Duration
	format                string
	incident              bool
}

// analyzeFile is analyze FILE as the command runs it: the recording read
// through the dialects, the report written in c.format; with sequential,
// the reference (entry by entry, JSON encoded whole).
func analyzeFile(t *testing.T, path string, c wholeCase, sequential bool) string {
	t.Helper()
	rs, err := (&sources.Spec{}).ForRecordings()
	if err != nil {
		t.Fatal(err)
	}
	tr, translate := rs.Translator()
	rec, err := dump.OpenRecording(path, dump.OpenOptions{Filter: tr.Filter, Wrap: sources.UnreadWrap(tr)})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	var from, to time.Time
	if c.from > 0 {
		from = rec.Time(0).Add(c.from)
	}
	if c.to > 0 {
		to = rec.Time(0).Add(c.to)
	}
	lo, hi := dump.Range(rec, from, to)
	opts := RecordingOptions{Window: c.window, Bin: c.bin, Spans: [][2]int{{lo, hi}}, Incident: c.incident}
	if sequential {
		opts.sequential = loadSequential
	}
	rep, err := Recordings([]dump.Recording{rec}, rs, tr, translate, opts)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if c.format == "json" && sequential {
		// The JSON encoded whole, as before it was written a dependency
		// at a time.
		enc := json.NewEncoder(&out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			t.Fatal(err)
		}
		return string(safetext.JSON(out.Bytes()))
	}
	if err := report.WriteAnalysis(&out, rep, c.format, 0); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// spanRounding is how far apart, relative to the larger, two readings of
// one incident span may be: the reduced path sums the span's bins, the
// store of every scrape interpolates over it at once, the same numbers
// added in another order, some hundreds of float64 roundings (2^-53
// each) apart at most.
const spanRounding = 1e-12

// sameAnalysis fails t unless got, the streaming path's output of c on
// file f, is want, the sequential one: byte for byte, or for an incident
// report (its span read from the reduced bins) the same JSON with every
// number within spanRounding.
func sameAnalysis(t *testing.T, f string, c wholeCase, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	if !c.incident || c.format != "json" {
		t.Errorf("%s %+v: output differs from loading entry by entry (%d and %d bytes)", f, c, len(got), len(want))
		return
	}
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if path, a, b := jsonDiff("", g, w); path != "" {
		t.Errorf("%s %+v: %s is %v, loading entry by entry %v", f, c, path, a, b)
	}
}

// jsonDiff is the first place where a and b differ, numbers by more than
// spanRounding ("" when none), and what each holds there.
func jsonDiff(path string, a, b any) (string, any, any) {
	switch a := a.(type) {
	case float64:
		if b, ok := b.(float64); ok && math.Abs(a-b) <= spanRounding*math.Max(math.Abs(a), math.Abs(b)) {
			return "", nil, nil
		}
	case map[string]any:
		if b, ok := b.(map[string]any); ok && len(a) == len(b) {
			for _, k := range slices.Sorted(maps.Keys(a)) {
				if p, x, y := jsonDiff(path+"."+k, a[k], b[k]); p != "" {
					return p, x, y
				}
			}
			return "", nil, nil
		}
	case []any:
		if b, ok := b.([]any); ok && len(a) == len(b) {
			for i := range a {
				if p, x, y := jsonDiff(fmt.Sprintf("%s[%d]", path, i), a[i], b[i]); p != "" {
					return p, x, y
				}
			}
			return "", nil, nil
		}
	default:
		if reflect.DeepEqual(a, b) {
			return "", nil, nil
		}
	}
	return cmp.Or(path, "."), a, b
}

// TestAnalyzeWholeSameAsSequential: analyze FILE over the whole recording
// gives byte for byte what it gave when every entry was loaded one at a
// time and the JSON was encoded whole: the demo's recordings (sim's
// baseline and bounded scenarios, whatif/testdata), the dump format's
// fixture, a contract incident and an Envoy one (its translations given
// back to the dialect as they are stored), in JSON and text, with and without
// --from/--to; and over the incident (the command's default), the same
// but for rounding (sameAnalysis).
func TestAnalyzeWholeSameAsSequential(t *testing.T) {
	files := []string{"../whatif/testdata/baseline.rtd", "../whatif/testdata/bounded.rtd", "../dump/testdata/v2.rtd", testdump.Write(t, 150, "app", "client"),
		testdump.WriteBodies(t, 150, testdump.Envoy, "envoy-a", "envoy-b")}
	w, b := analysis.DefaultWindow, analysis.DefaultBin
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("fixture %s: %v", f, err)
		}
		for _, c := range []wholeCase{
			{window: w, bin: b, format: "json"},
			{window: 10 * time.Second, bin: 5 * time.Second, format: "json"},
			// 1 s and 2 s bins: batches of 30 bins reduced while loading,
			// a store of about 35 or 70 scrapes per target.
			{window: 3 * time.Second, bin: time.Second, format: "json"},
			{window: 5 * time.Second, bin: 2 * time.Second, format: "json"},
			{window: w, bin: b, from: 20 * time.Second, to: 90 * time.Second, format: "json"},
			{window: w, bin: b, format: "text"},
			{window: w, bin: b, format: "json", incident: true},
			{window: 3 * time.Second, bin: time.Second, format: "json", incident: true},
			{window: w, bin: b, from: 20 * time.Second, to: 90 * time.Second, format: "json", incident: true},
			{window: w, bin: 5 * time.Second, format: "text", incident: true},
		} {
			got := analyzeFile(t, f, c, false)
			want := analyzeFile(t, f, c, true)
			if len(want) < 100 {
				t.Fatalf("%s %+v: %d bytes of output: nothing to compare", f, c, len(want))
			}
			sameAnalysis(t, f, c, got, want)
		}
	}
	// Bins wider than 10 s are reduced in batches of fewer bins (5 of a
	// minute, 15 of 20 s): a recording of 1,000 s goes through several.
	long := testdump.Write(t, 1000, "app", "client")
	for _, c := range []wholeCase{
		{window: w, bin: 20 * time.Second, format: "json"},
		{window: time.Minute, bin: time.Minute, format: "json"},
		{window: w, bin: 20 * time.Second, format: "json", incident: true},
	} {
		sameAnalysis(t, long, c, analyzeFile(t, long, c, false), analyzeFile(t, long, c, true))
	}
}

// TestAnalyzeAutoBin: without a bin, a recording's timeline has bins of
// 10 s up to an hour and wider ones past it: 100 minutes at 1 s are 400
// bins of 15 s, 300 of 20 s (one more or less where the recording's
// start and end cut them).
func TestAnalyzeAutoBin(t *testing.T) {
	for _, c := range []struct {
		scrapes int
		want    float64 // seconds
		bins    int
	}{{3000, 10, 300}, {6000, 20, 300}} {
		path := testdump.Write(t, c.scrapes, "app")
		var rep struct {
			BinSeconds   float64 `json:"bin_seconds"`
			Dependencies []struct {
				Timeline []json.RawMessage `json:"timeline"`
			} `json:"dependencies"`
		}
		out := analyzeFile(t, path, wholeCase{window: analysis.DefaultWindow, format: "json"}, false)
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.BinSeconds != c.want {
			t.Errorf("%d scrapes: bins of %v s, want %v", c.scrapes, rep.BinSeconds, c.want)
		}
		if len(rep.Dependencies) == 0 {
			t.Fatalf("%d scrapes: no dependency", c.scrapes)
		}
		for _, d := range rep.Dependencies {
			if n := len(d.Timeline); n < c.bins-1 || n > c.bins+1 {
				t.Errorf("%d scrapes: a timeline of %d bins, want %d ± 1", c.scrapes, n, c.bins)
			}
		}
	}
}
