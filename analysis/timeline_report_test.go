package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// A report's bins carry the span their rates are means over, so that a
// reader of the JSON can count: originals_per_s x sampled_seconds summed
// over the bins is the recording's increase, across a missed scrape too.
func TestReportBinsSampledSeconds(t *testing.T) {
	dep := []string{model.LabelDependency, "db"}
	var times []int64
	var vals strings.Builder
	for i := 0; i <= 20; i++ {
		if i >= 12 && i <= 15 {
			continue // down from 12 s to 15 s
		}
		times = append(times, t0+int64(i)*1000)
		fmt.Fprintf(&vals, " %d", 10*i)
	}
	st := load(t, nil, "svc", times, ts{model.MetricOriginals, dep, vals.String()})
	rep := BuildReport(st, nil, ReportOptions{Window: 20 * time.Second, Bin: 2 * time.Second})
	if len(rep.Dependencies) != 1 {
		t.Fatalf("%d rows, want 1", len(rep.Dependencies))
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Dependencies []struct {
			Timeline []struct {
				Start     float64  `json:"start_unix"`
				Sampled   *float64 `json:"sampled_seconds"`
				Originals *float64 `json:"originals_per_s"`
			} `json:"timeline"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	// Bins of 2 s from t0: the gap's increase (11 to 16 s) is spread
	// over the bins it spans, each covering its whole width.
	wantSampled := []float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}
	bins := doc.Dependencies[0].Timeline
	if len(bins) != len(wantSampled) {
		t.Fatalf("%d bins, want %d", len(bins), len(wantSampled))
	}
	var total float64
	for i, b := range bins {
		name := fmt.Sprintf("bin at %.0f s", b.Start-float64(t0)/1000)
		checkValue(t, name+" sampled_seconds", valueOf(b.Sampled), wantSampled[i])
		if b.Sampled == nil {
			checkValue(t, name+" originals_per_s", valueOf(b.Originals), absent)
			continue
		}
		checkValue(t, name+" originals_per_s", valueOf(b.Originals), 10)
		total += *b.Originals * *b.Sampled
	}
	if !near(total, 200) {
		t.Errorf("originals_per_s x sampled_seconds over the bins = %v, want the recording's 200", total)
	}
}

func valueOf(p *float64) model.Value {
	if p == nil {
		return model.Absent
	}
	return model.Some(*p)
}
