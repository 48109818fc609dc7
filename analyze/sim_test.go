package analyze_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/sim"
)

// TestAnalyzeAgreesWithSimGroundTruth runs the baseline scenario in virtual
// time (a synctest bubble over the sim's in-process transport), scrapes it
// with the scraper the way analyze does, and checks that each hop's
// originals, attempts and amplification over the scraped span agree with
// the sim's own counts within 3 %.
func TestAnalyzeAgreesWithSimGroundTruth(t *testing.T) {
	synctest.Test(t, analyzeAgreesWithSimGroundTruth)
}

func analyzeAgreesWithSimGroundTruth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run, err := startSimRun(ctx, "baseline", sim.Options{Healthy: 2 * time.Second, Slow: 4 * time.Second, Recovered: 2 * time.Second, Seed: 7, InProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	defer run.stack.Close()
	stack, scraper := run.stack, run.scraper
	// The truth just before and just after the first scrape bracket what
	// the scrape saw; their midpoint is the starting count.
	synctest.Wait()
	before := stack.Truth()
	scraper.ScrapeOnce(ctx)
	after := stack.Truth()
	// Scrape through the run (the timeline), then once more when every
	// original has finished, so metrics and truth count the same things.
	if err := run.scrapeUntilDone(ctx, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	statuses := scraper.ScrapeOnce(ctx)
	last := stack.Truth()
	if !last.Done {
		t.Fatalf("truth not done after the stack finished: %+v", last)
	}

	store := scraper.Store()
	rep := analysis.BuildReport(store, statuses, analysis.ReportOptions{Window: time.Hour})
	rows := map[model.Key]analysis.DependencyReport{}
	for _, d := range rep.Dependencies {
		rows[d.Key()] = d
	}
	for i, hop := range last.Hops {
		if hop.Hidden {
			continue
		}
		key := model.Key{Target: hop.Name, Dependency: hop.Dependency}
		d, ok := rows[key]
		if !ok {
			t.Errorf("analyze has no row for %v", key)
			continue
		}
		times := store.Times(hop.Name)
		span := float64(times[len(times)-1]-times[0]) / 1000
		wantOrig := float64(hop.Originals) - float64(before.Hops[i].Originals+after.Hops[i].Originals)/2
		wantAtt := float64(hop.Attempts) - float64(before.Hops[i].Attempts+after.Hops[i].Attempts)/2
		gotOrig := d.OriginalsPerS.Or(math.NaN()) * span
		gotAtt := d.AttemptsPerS.Or(math.NaN()) * span
		within3(t, hop.Name+" originals", gotOrig, wantOrig)
		within3(t, hop.Name+" attempts", gotAtt, wantAtt)
		within3(t, hop.Name+" amplification", d.Amplification.Or(math.NaN()), wantAtt/wantOrig)
		if hop.Name == "client" && d.Amplification.Or(0) <= 1.05 {
			t.Errorf("client amplification %v: the baseline slowdown should make the client retry", d.Amplification)
		}
	}
}

func within3(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.IsNaN(got) || want == 0 || math.Abs(got-want)/want > 0.03 {
		t.Errorf("%s: analyze %.2f, sim ground truth %.2f (more than 3%% apart)", what, got, want)
	} else {
		t.Logf("%s: analyze %.2f, sim %.2f", what, got, want)
	}
}
