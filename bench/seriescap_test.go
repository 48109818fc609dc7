package bench

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/internal/watchrig"
	"github.com/retrytop/retrytop/model"
)

// TestSeriesCapFigure is docs/performance.md's series cap: a store with
// the budget a 512 MiB process gives it (model.DefaultMaxBytes) and the
// default history, offered 120 Envoy targets of 2,016 series (their
// relevant families, as watch stores them: 1,584 each), counters growing
// every scrape, for a history and a chunk past it. It prints how many
// series the store holds (scripts/bench-ratios.sh -r) and fails when the
// store's live heap is over its budget: the cap is what the budget holds
// at what the series cost, not a count that may overrun it.
// RETRYTOP_SERIES_CAP=1 runs it (about a minute, 400 MB).
func TestSeriesCapFigure(t *testing.T) {
	if os.Getenv("RETRYTOP_SERIES_CAP") == "" {
		t.Skip("set RETRYTOP_SERIES_CAP=1 to run it (about a minute and 400 MB)")
	}
	const targets = 120
	hist := model.DefaultStoreConfig.History
	budget := model.DefaultMaxBytes(512 << 20)
	filter := dialect.Auto().Filter
	p := expo.ExpfmtParser{Lines: expo.NewLineCaches(0)}
	names := make([]string, targets)
	for i := range names {
		names[i] = fmt.Sprint("t", i)
	}
	before := watchrig.LiveHeap()
	st := model.NewStore(model.StoreConfig{History: hist, MaxBytes: budget})
	at := time.Unix(1_700_000_000, 0)
	for k := range hist + 64 {
		fams, err := p.Parse("bench", Envoy(2000, k), textType, filter)
		if err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Second)
		for _, n := range names {
			st.Append(&model.Snapshot{Target: n, Time: at, Families: fams})
		}
	}
	heap := watchrig.LiveHeap() - before
	got := st.Totals()
	t.Logf("figure series-cap-512MiB %d", got.Series)
	t.Logf("%d series held (cap %d at %d B a series), %d refused; live heap %.1f MB of a budget of %.1f MB, %.0f B a series",
		got.Series, got.MaxSeries, got.SeriesBytes, got.Dropped, float64(heap)/1e6, float64(budget)/1e6, float64(heap)/float64(got.Series))
	if heap > uint64(budget) {
		t.Errorf("the store's live heap is %d B, over its budget of %d", heap, budget)
	}
	if got.Dropped == 0 {
		t.Errorf("nothing refused: the figure is what was offered, not what the budget holds")
	}
	runtime.KeepAlive(st)
}
