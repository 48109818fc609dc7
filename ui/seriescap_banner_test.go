package ui

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// The series-cap banner said "(100000 kept)" when the store kept
// 20,000: it must say what the store really keeps, per target and across
// targets, and which cap refused the rest.
func TestSeriesCapBannerSaysWhatIsKept(t *testing.T) {
	// The statuses a real store gives: a holds 8 series under a per-target
	// cap of 6 and a total of 10; b and c then find the store full.
	st := model.NewStore(model.StoreConfig{History: 2, MaxSeriesPerTarget: 6, MaxSeries: 10})
	var targets []model.TargetStatus
	for _, c := range []struct {
		name string
		n    int
	}{{"a", 8}, {"b", 5}, {"c", 2}} {
		fam := model.Family{Name: "g", Type: model.Gauge}
		for i := range c.n {
			fam.Samples = append(fam.Samples, model.Sample{Labels: model.LabelsFromPairs("i", fmt.Sprint(i)), Value: 1})
		}
		snap := &model.Snapshot{Target: c.name, Time: time.Unix(1, 0), Families: []model.Family{fam}}
		res := st.Append(snap)
		capped := res.Cap
		targets = append(targets, model.TargetStatus{Name: c.name, Up: true, Series: snap.SeriesCount(), DroppedSeries: res.Dropped, SeriesCap: &capped})
	}
	got := seriesCapLines(targets)
	want := []string{
		"WARNING SERIES_CAP a: 2 of the 8 series it exports refused by the per-target cap of 6 (6 kept); its signals may be incomplete",
		"WARNING SERIES_CAP store: its total cap of 10 series across targets is full (10 kept): 3 series of b, c refused; their signals may be incomplete (--memory-limit sizes it)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("banner:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if lines := findingLines(model.Frame{Targets: targets}, nil); !reflect.DeepEqual(lines, want) {
		t.Errorf("findings strip = %q, want the banner first", lines)
	}
}

// However many targets lose series, the banner takes at most three lines
// and the strip stays bounded (each used to take a line of its own).
func TestSeriesCapBannerStaysThreeLines(t *testing.T) {
	var targets []model.TargetStatus
	for i := range 7 {
		targets = append(targets, model.TargetStatus{Name: fmt.Sprintf("t%d", i), Up: true, Series: 30, DroppedSeries: 10,
			SeriesCap: &model.SeriesCap{ByTarget: 6, ByTotal: 4, PerTarget: 20, Total: 100, Kept: 20, StoreKept: 100}})
	}
	targets = append(targets, model.TargetStatus{Name: "replayed", Up: true, Series: 50, DroppedSeries: 5}) // no cap said
	want := []string{
		"WARNING SERIES_CAP 8 targets over their series cap: 47 series of t0, t1, t2 +5 more refused; their signals may be incomplete (retrytop analyze: targets[].series_cap)",
		"WARNING SERIES_CAP store: its total cap of 100 series across targets is full (100 kept): 28 series of t0, t1, t2 +4 more refused; their signals may be incomplete (--memory-limit sizes it)",
	}
	if got := seriesCapLines(targets); !reflect.DeepEqual(got, want) {
		t.Errorf("banner:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	fs := []analysis.Finding{{Code: "RETRY_AMPLIFICATION", Target: "t0", Dependency: "db"}, {Code: "RETRY_AMPLIFICATION", Target: "t1", Dependency: "db"}}
	if lines := findingLines(model.Frame{Targets: targets}, fs); len(lines) != maxFindingLines {
		t.Errorf("strip of %d lines, want %d:\n%s", len(lines), maxFindingLines, strings.Join(lines, "\n"))
	}
}
