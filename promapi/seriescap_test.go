package promapi

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// Series the store's caps refuse are never lost silently: on the
// Prometheus path too, a fleet over the total cap (--by job,instance) has
// each target's status say how many and which cap, as a scrape's does.
func TestSeriesRefusedByTheStoreAreCountedInStatus(t *testing.T) {
	fake := &fakeAPI{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	now := time.Unix(1700000100, 0)
	// app holds two series (originals and active calls to db), web one:
	// one per target fits, and two in all.
	store := model.NewStore(model.StoreConfig{MaxSeriesPerTarget: 1, MaxSeries: 2})
	src, err := New(Options{
		Delay:    -1,
		Client:   ClientConfig{URL: srv.URL + "/prefix/", Timeout: noTimeout},
		Selector: `{env="prod"}`, // the fake answers queries with a selector
		Step:     time.Second,
		Backfill: 3 * time.Second,
		Store:    store,
		Clock:    func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	fake.expect(src)
	st := fake.refresh(t, src)
	byName := map[string]model.TargetStatus{}
	for _, s := range st {
		byName[s.Name] = s
	}
	app, web := byName["app"], byName["web"]
	if app.DroppedSeries == 0 || app.SeriesCap == nil {
		t.Fatalf("app: %+v, want series refused by its cap and said so", app)
	}
	if c := *app.SeriesCap; c.ByTarget != app.DroppedSeries || c.PerTarget != 1 || c.Total != 2 || c.Kept != 1 {
		t.Errorf("app's cap %+v, want %d refused by the per-target cap of 1, 1 kept", c, app.DroppedSeries)
	}
	if web.DroppedSeries != 0 || web.SeriesCap != nil {
		t.Errorf("web: %+v, want nothing refused", web)
	}
	if got := store.Totals(); got.Series != 2 || got.Dropped != app.DroppedSeries {
		t.Errorf("store totals %+v", got)
	}
}
