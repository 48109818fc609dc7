package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/replay"
)

// The dashboard's frames of a replay (ui's buildFrame): aligned bins, each
// frame reusing the final bins of the one before and the series the cache
// kept.
type dashboard struct {
	prev  *model.Frame
	cache *analysis.FrameCache
}

func (d *dashboard) frame(p *replay.Player) string {
	if d.cache == nil {
		d.cache = analysis.NewFrameCache()
	}
	f := analysis.BuildFrame(p.Store(), p.Statuses(), analysis.FrameOptions{
		Window: 30 * time.Second, Bin: 10 * time.Second, Bins: 30, Align: true, Prev: d.prev, Cache: d.cache,
	})
	d.prev = &f
	return fmt.Sprintf("%+v", f)
}

// The screen at a moment is the same whether the replay started there
// (--from), stepped there scrape by scrape from the start, or sought there
// from elsewhere: the same store, the same frame, bins and numbers alike.
func TestFromEqualsStepping(t *testing.T) {
	rec := openRec(t, 150)
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	at := t0.Add(100 * time.Second) // inside the step in attempts (scrapes 60 to 120)

	stepped := replay.New(rec, replay.Options{Now: clock.Now, IndexMemory: -1})
	stepped.Tick()
	var byStep dashboard
	byStep.frame(stepped)
	for pos, _, _ := stepped.Position(); pos.Before(at); pos, _, _ = stepped.Position() {
		stepped.Step(1)
		stepped.Tick()
		byStep.frame(stepped)
	}
	want := byStep.frame(stepped)

	from := replay.New(rec, replay.Options{Now: clock.Now, From: at, IndexMemory: -1})
	from.Tick() // the first frame the dashboard shows
	var byFrom dashboard
	if got := byFrom.frame(from); got != want {
		t.Errorf("--from's first frame differs from stepping's:\nfrom %.3000s\nstep %.3000s", got, want)
	}

	// Sought from the start: the preview, then the whole lookback; the
	// dashboard's frames go on reusing bins across the seek.
	sought := replay.New(rec, replay.Options{Now: clock.Now, IndexMemory: -1})
	sought.Tick()
	var bySeek dashboard
	bySeek.frame(sought)
	sought.Seek(at)
	sought.Tick()
	bySeek.frame(sought) // the preview's
	sought.Settle()
	if got := bySeek.frame(sought); got != want {
		t.Errorf("after a seek, the frame differs from stepping's:\nseek %.3000s\nstep %.3000s", got, want)
	}
}

// The timeline bar at more columns than scrapes: bins narrower than the
// scrape interval each hold their share of the increase around them, so
// a continuous incident draws a continuous run, as it does at fewer
// columns, from the edge scrapes as from every scrape.
func TestSpikesNarrowBins(t *testing.T) {
	rec := openRec(t, 150)
	const bins = 300 // 0.5 s each, scrapes every second
	p := replay.New(rec, replay.Options{SpikeBins: bins})
	if err := p.ComputeSpikes(context.Background()); err != nil {
		t.Fatal(err)
	}
	sp := p.Spikes()
	_, start, end := p.Position()
	width := end.Sub(start) / bins
	// Attempts run at 4 per original from scrape 61 to scrape 120: every
	// bin inside is critical.
	for i, s := range sp {
		from, to := start.Add(time.Duration(i)*width), start.Add(time.Duration(i+1)*width)
		if from.After(t0.Add(61*time.Second)) && to.Before(t0.Add(120*time.Second)) && s != replay.SpikeCritical {
			t.Errorf("bin %d (%v..%v) level %d inside the incident", i, from.Sub(t0), to.Sub(t0), s)
		}
	}
	st := model.NewStore(model.StoreConfig{History: 1000})
	dump.LoadStore(rec, st, nil)
	if all := replay.SpikeLevels(st, start, end, width, bins, analysis.DefaultThresholds()); fmt.Sprint(all) != fmt.Sprint(sp) {
		t.Errorf("spikes from the edges %v, from every scrape %v", sp, all)
	}
}
