package main

import (
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
)

// TestAnalyzeStormAt80Columns: `COLUMNS=80 retrytop analyze` of a real
// recording of the demo's storm prints no line wider than 80 columns and
// keeps the storm's cause in its table: the retries and the timeouts that
// start them (the client -> provider row has both non-zero), before any
// column that is zero in every row.
func TestAnalyzeStormAt80Columns(t *testing.T) {
	const width = 80
	t.Setenv("COLUMNS", "80")
	out, stderr, err := execute(t, "analyze", "../../whatif/testdata/baseline.rtd")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var head, svcHead string
	for i, l := range strings.Split(out, "\n") {
		if w := runewidth.StringWidth(l); w > width {
			t.Errorf("line %d is %d columns wide: %q", i+1, w, l)
		}
		if strings.Contains(l, "DEPENDENCY") {
			head = l
		}
		if strings.Contains(l, "SERVICE") && strings.Contains(l, "RECV/s") {
			svcHead = l
		}
	}
	for _, must := range []string{"TARGET", "DEPENDENCY", "AMP", "TIMEOUT/s", "RETRY/s"} {
		if !strings.Contains(head, must) {
			t.Errorf("%s left out at 80 columns: %q", must, head)
		}
	}
	// Nothing was admitted away or denied by a budget in this storm: those
	// columns go before any that has a value.
	for _, never := range []string{"ADMISSION-REJ/s", "BUDGET-DENIED/s"} {
		if strings.Contains(head, never) {
			t.Errorf("%s is zero in every row but kept at 80 columns: %q", never, head)
		}
	}
	// Both tables are fitted, each with its note of what it left out.
	if n := strings.Count(out, "columns left out to fit 80 columns"); svcHead == "" || n != 2 {
		t.Errorf("services table at 80: head %q, %d notes of columns left out, want 2\n%s", svcHead, n, out)
	}
	if !strings.Contains(out, "RETRY_AMPLIFICATION") {
		t.Errorf("the storm's finding is missing:\n%s", out)
	}
}
