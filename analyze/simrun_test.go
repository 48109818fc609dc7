package analyze_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/sim"
	"github.com/retrytop/retrytop/sources"
)

// simRun is one sim scenario, on loopback or in process (Options.InProcess,
// for virtual time), with a scraper on its targets reading them through
// the dialects the way watch and analyze do.
type simRun struct {
	stack   *sim.Stack
	scraper *scrape.Scraper
}

// startSimRun starts the scenario; the caller closes the stack.
func startSimRun(ctx context.Context, name string, opts sim.Options) (*simRun, error) {
	return startSimRunWith(ctx, name, opts, false)
}

// startSimRunWith starts the scenario with its targets named (name=URL)
// or, bare, by URL alone as a newcomer types them.
func startSimRunWith(ctx context.Context, name string, opts sim.Options, bare bool) (*simRun, error) {
	sc, ok := sim.ScenarioByName(name)
	if !ok {
		return nil, fmt.Errorf("no scenario %q", name)
	}
	stack, err := sim.Start(ctx, sc, opts)
	if err != nil {
		return nil, err
	}
	var targets []scrape.Target
	for _, t := range stack.Targets() {
		arg := t.Name + "=" + t.URL
		if bare {
			arg = t.URL
		}
		tgt, err := scrape.ParseTarget(arg)
		if err != nil {
			stack.Close()
			return nil, err
		}
		targets = append(targets, tgt)
	}
	src := &sources.Sources{Targets: targets, Translate: dialect.Auto()}
	var copts scrape.Options
	if opts.InProcess {
		copts.Transport = stack.Transport() // scraped through the stack, no socket
	}
	return &simRun{stack: stack, scraper: src.Scraper(model.NewStore(model.StoreConfig{}), copts)}, nil
}

// scrapeUntilDone scrapes every interval until the scenario's schedule has
// ended and every original finished.
func (r *simRun) scrapeUntilDone(ctx context.Context, every time.Duration) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-r.stack.Done():
			return nil
		case <-tick.C:
			r.scraper.ScrapeOnce(ctx)
		case <-ctx.Done():
			return fmt.Errorf("%s did not finish in time", r.stack.Scenario().Name)
		}
	}
}

// startInProcess starts the scenario in process (virtual time) or fails
// t; the caller closes the stack.
func startInProcess(t *testing.T, ctx context.Context, name string, opts sim.Options) *simRun {
	t.Helper()
	opts.InProcess = true
	run, err := startSimRun(ctx, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// scrapeThrough scrapes every target once, then every interval until the
// scenario is done, then once more, and returns the last statuses.
func (r *simRun) scrapeThrough(t *testing.T, ctx context.Context, every time.Duration) []model.TargetStatus {
	t.Helper()
	r.scraper.ScrapeOnce(ctx)
	if err := r.scrapeUntilDone(ctx, every); err != nil {
		t.Fatal(err)
	}
	return r.scraper.ScrapeOnce(ctx)
}
