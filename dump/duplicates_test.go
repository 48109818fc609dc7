package dump

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// TestDuplicateTimestampsFirstWins: of a series' two samples at one
// timestamp with different values, every importer keeps the first, as
// Prometheus does, and names each duplicate with its file and line; the
// rate is the true 10/s (the last kept read 75 originals/s).
func TestDuplicateTimestampsFirstWins(t *testing.T) {
	const t0 = 1741057965 // seconds
	// Originals counted 10 per second for 10 s; at t0+5 a second sample
	// of the same series says 650 (the value that read 75/s).
	var om strings.Builder
	om.WriteString("# TYPE retry_originals counter\n")
	dupLine := 0
	line := 1
	for i := 0; i <= 10; i++ {
		fmt.Fprintf(&om, "retry_originals_total{dependency=\"db\",instance=\"app\"} %d %d\n", 10*i, t0+i)
		line++
		if i == 5 {
			fmt.Fprintf(&om, "retry_originals_total{dependency=\"db\",instance=\"app\"} 650 %d\n", t0+i)
			line++
			dupLine = line
		}
	}
	om.WriteString("# EOF\n")

	// The same data as a Prometheus query_range answer (no lines).
	var vals []string
	for i := 0; i <= 10; i++ {
		vals = append(vals, fmt.Sprintf(`[%d,"%d"]`, t0+i, 10*i))
		if i == 5 {
			vals = append(vals, fmt.Sprintf(`[%d,"650"]`, t0+i))
		}
	}
	js := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"retry_originals_total","dependency":"db","instance":"app"},"values":[` +
		strings.Join(vals, ",") + `]}]}}`

	// And as concatenated snapshots: the snapshot at t0+5 twice.
	var cc strings.Builder
	ccDup := 0
	line = 0
	for i := 0; i <= 10; i++ {
		for k, v := range []int{10 * i, 650} {
			if k == 1 && i != 5 {
				continue
			}
			fmt.Fprintf(&cc, "# SCRAPE %d app\n", (t0+i)*1000)
			line++
			if k == 1 {
				ccDup = line
			}
			fmt.Fprintf(&cc, "retry_originals_total{dependency=\"db\"} %d\n", v)
			line++
		}
	}

	for _, c := range []struct {
		format, body, file string
		line               int
		msg                string
	}{
		{FormatOpenMetrics, om.String(), "dup.om", dupLine, `duplicate sample of retry_originals_total{dependency="db"} at 2025-03-04T03:12:50Z: kept the first (50), dropped 650 (line 7)`},
		{FormatPromJSON, js, "dup.json", 0, `duplicate sample of retry_originals_total{dependency="db"} at 2025-03-04T03:12:50Z: kept the first (50), dropped 650`},
		{FormatConcat, cc.String(), "dup.txt", ccDup, `duplicate snapshot of app at 2025-03-04T03:12:50Z: kept the first (line 11)`},
	} {
		t.Run(c.format, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.file)
			if err := os.WriteFile(path, []byte(c.body), 0o600); err != nil {
				t.Fatal(err)
			}
			rec, err := OpenRecording(path, OpenOptions{Format: c.format})
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Close()
			probs := rec.Problems()
			if len(probs) != 1 {
				t.Fatalf("problems %v, want the one duplicate", probs)
			}
			var ie *ImportError
			if !errors.As(probs[0], &ie) || ie.File != path || ie.Line != c.line || ie.Msg != c.msg {
				t.Errorf("problem %#v\n want file %s, line %d, %q", probs[0], path, c.line, c.msg)
			}
			store := model.NewStore(model.StoreConfig{})
			for i := range rec.Len() {
				sn, err := rec.Snapshot(i)
				if err != nil {
					t.Fatal(err)
				}
				store.Append(sn)
			}
			got := analysis.SignalsFor(store, "app", "db", t0*1000, (t0+10)*1000).OriginalsPerS
			if v, ok := got.Get(); !ok || v != 10 {
				t.Errorf("originals/s %v, want 10 (the first sample of t0+5 kept)", got)
			}
			if n := len(store.Times("app")); n != 11 {
				t.Errorf("%d scrapes stored, want 11", n)
			}
		})
	}
}

// TestDuplicateWarningsAreCapped: a file of many duplicates names the
// first MaxDuplicateWarnings, then says how many there were in all.
func TestDuplicateWarningsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("# TYPE x counter\n")
	for i := range 30 {
		fmt.Fprintf(&b, "x_total 1 %d\nx_total 2 %d\n", 1741057965+i, 1741057965+i)
	}
	b.WriteString("# EOF\n")
	var warns []string
	_, err := ImportBytes([]byte(b.String()), "many.om", FormatOpenMetrics, ImportOptions{Warn: func(err error) { warns = append(warns, err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != MaxDuplicateWarnings+1 || warns[MaxDuplicateWarnings] != "many.om: 30 duplicate samples dropped in all (the first of each kept)" ||
		!strings.HasPrefix(warns[0], "many.om:3: duplicate sample of x_total at ") {
		t.Errorf("%d warnings: %q", len(warns), warns)
	}
}
