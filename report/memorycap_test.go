package report

import (
	"strings"
	"testing"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// A target whose body --memory-limit refused says so on its line, with
// the series and the bytes needed against the budget, in text and
// markdown.
func TestTargetLineMemoryCap(t *testing.T) {
	rep := analysis.Report{Targets: []model.TargetStatus{{
		Name: "huge", URL: "http://10.0.0.9:9100/metrics", Scrapes: 3, Failures: 1,
		LastError: "parsing 120000 series: needs 300 MiB, more than the scrapes' memory budget of 256 MiB leaves (--memory-limit)",
		MemoryCap: &model.MemoryCap{ByMemory: 120000, Needed: 300 << 20, Budget: 256 << 20},
	}}}
	for format, want := range map[string]string{
		"text":     "[parse of 120000 series refused by --memory-limit: needs 300 MiB, budget 256 MiB]",
		"markdown": `\[parse of 120000 series refused by --memory-limit: needs 300 MiB, budget 256 MiB\]`,
	} {
		var b strings.Builder
		if err := WriteAnalysis(&b, rep, format, 0); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s: no %q in\n%s", format, want, b.String())
		}
	}
	rep.Targets[0].MemoryCap = nil
	if line := targetLine(rep.Targets[0]); strings.Contains(line, "--memory-limit:") {
		t.Errorf("target line %q names a refusal the status does not hold", line)
	}
}
