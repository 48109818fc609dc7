package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// TestCompactTimelinesDrawTheSame: a report whose rows hold their
// timelines compactly (analysis.ReportOptions.CompactTimelines, as
// analyze FILE builds it) writes the same text, markdown, story and HTML
// as the one holding them as BinReports: the writers read a row's bins
// through TimelineBins.
func TestCompactTimelinesDrawTheSame(t *testing.T) {
	st := model.NewStore(model.StoreConfig{History: 200, MaxSeries: 100})
	dep := model.LabelsFromPairs(model.LabelDependency, "db")
	for i := range 120 {
		v := float64(5 * i)
		st.Append(&model.Snapshot{Target: "svc", Time: t0.Add(time.Duration(i) * time.Second), Families: []model.Family{
			{Name: model.MetricOriginals, Type: model.Counter, Samples: []model.Sample{{Labels: dep, Value: v}}},
			{Name: model.MetricAttempts, Type: model.Counter, Samples: []model.Sample{{Labels: dep, Value: v * float64(1+i/60)}}},
		}})
	}
	targets := []model.TargetStatus{{Name: "svc", Up: true}}
	opts := analysis.ReportOptions{Bin: 10 * time.Second, Window: 30 * time.Second}
	full := analysis.BuildReport(st, targets, opts)
	opts.CompactTimelines = true
	compact := analysis.BuildReport(st, targets, opts)
	if len(full.Dependencies) != 1 || len(full.Dependencies[0].Timeline) < 11 || len(compact.Dependencies[0].Timeline) != 0 {
		t.Fatalf("rows %d, bins %d full and %d compact: nothing to compare", len(full.Dependencies), len(full.Dependencies[0].Timeline), len(compact.Dependencies[0].Timeline))
	}
	for name, write := range map[string]func(*bytes.Buffer, analysis.Report) error{
		"story":    func(b *bytes.Buffer, r analysis.Report) error { return WriteMarkdown(b, r, Meta{}) },
		"html":     func(b *bytes.Buffer, r analysis.Report) error { return WriteHTML(b, r, Meta{}) },
		"text":     func(b *bytes.Buffer, r analysis.Report) error { return WriteAnalysis(b, r, "text", 0) },
		"text-80":  func(b *bytes.Buffer, r analysis.Report) error { return WriteAnalysis(b, r, "text", 80) },
		"markdown": func(b *bytes.Buffer, r analysis.Report) error { return WriteAnalysis(b, r, "markdown", 0) },
	} {
		var a, b bytes.Buffer
		if err := write(&a, full); err != nil {
			t.Fatal(err)
		}
		if err := write(&b, compact); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: the compact report writes %d bytes, the full one %d", name, b.Len(), a.Len())
		}
	}
}
