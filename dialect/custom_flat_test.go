package dialect_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

// TestCustomReadsFlatHistograms: a histogram that reaches a custom mapping
// as separate series (a text exposition without its # TYPE line, a file of
// series) is read as the typed one is: latency and counts alike.
func TestCustomReadsFlatHistograms(t *testing.T) {
	m := dialect.Mapping{
		Name:            "acme",
		DependencyLabel: "upstream",
		Signals: []dialect.Signal{
			{Family: model.MetricOriginals, Metric: "acme_call_latency_ms"}, // a counter from a histogram's count
			{Family: model.MetricRequestDuration, Metric: "acme_call_latency_ms", Scale: 0.001},
		},
	}
	b, err := os.ReadFile(filepath.Join("testdata", "custom_acme.prom"))
	if err != nil {
		t.Fatal(err)
	}
	typed := string(b)
	untyped := strings.Replace(typed, "# TYPE acme_call_latency_ms histogram\n", "", 1)
	if untyped == typed {
		t.Fatal("fixture has no histogram TYPE line")
	}
	render := func(text string) string {
		tr, err := dialect.NewTranslator(dialect.Config{Custom: []dialect.Mapping{m}})
		if err != nil {
			t.Fatal(err)
		}
		fams, err := expo.ExpfmtParser{}.Parse("acme", []byte(text), "text/plain; version=0.0.4", tr.Filter)
		if err != nil {
			t.Fatal(err)
		}
		out, name, err := tr.Translate("", snapOf(fams))
		if err != nil || name != "acme" {
			t.Fatalf("translate: %q %v", name, err)
		}
		var sb strings.Builder
		out.Flatten(func(fs model.FlatSeries) { fmt.Fprintf(&sb, "%s%s %v\n", fs.Name, fs.Labels, fs.Value) })
		return sb.String()
	}
	want, got := render(typed), render(untyped)
	if !strings.Contains(want, `retry_request_duration_seconds_bucket{dependency="billing",le="0.01"} 50`) {
		t.Fatalf("typed translation lacks the latency histogram:\n%s", want)
	}
	if got != want {
		t.Errorf("flat histogram translated as\n%s\nwant\n%s", got, want)
	}
}
