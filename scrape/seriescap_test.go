package scrape

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/model"
)

// Series the store's total cap refuses are never silently lost:
// each target's status (and so analyze's JSON) says how many, which cap
// and what the store kept, per target and across targets.
func TestSeriesRefusedByTheTotalCapAreCountedInStatus(t *testing.T) {
	body := func(n int) []byte {
		var b strings.Builder
		b.WriteString("# TYPE g gauge\n")
		for i := range n {
			fmt.Fprintf(&b, "g{i=\"%d\"} 1\n", i)
		}
		return []byte(b.String())
	}
	bodies := map[string][]byte{"/a": body(8), "/b": body(5)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write(bodies[r.URL.Path])
	}))
	defer srv.Close()
	store := model.NewStore(model.StoreConfig{History: 4, MaxSeriesPerTarget: 6, MaxSeries: 10})
	// One target at a time, so which one finds the store full is known.
	a := NewScraper([]Target{target("a", srv.URL+"/a")}, store, Options{Clock: stepClock()})
	b := NewScraper([]Target{target("b", srv.URL+"/b")}, store, Options{Clock: stepClock()})
	sa := a.ScrapeOnce(t.Context())[0]
	sb := b.ScrapeOnce(t.Context())[0]
	if want := (model.SeriesCap{ByTarget: 2, PerTarget: 6, Total: 10, Kept: 6, StoreKept: 6}); sa.DroppedSeries != 2 || sa.SeriesCap == nil || *sa.SeriesCap != want {
		t.Errorf("a: dropped %d, cap %+v; want 2 and %+v", sa.DroppedSeries, sa.SeriesCap, want)
	}
	if want := (model.SeriesCap{ByTotal: 1, PerTarget: 6, Total: 10, Kept: 4, StoreKept: 10}); sb.DroppedSeries != 1 || sb.SeriesCap == nil || *sb.SeriesCap != want {
		t.Errorf("b: dropped %d, cap %+v; want 1 and %+v", sb.DroppedSeries, sb.SeriesCap, want)
	}
	js, err := json.Marshal(sb)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"dropped_series":1`, `"series_cap":{"by_target_cap":0,"by_total_cap":1,"per_target_cap":6,"total_cap":10,"kept":4,"store_kept":10}`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("status JSON %s lacks %s", js, want)
		}
	}
	// Room made (a leaves): b's next scrape keeps all and says nothing.
	store.Forget("a")
	if sb := b.ScrapeOnce(t.Context())[0]; sb.DroppedSeries != 0 || sb.SeriesCap != nil {
		t.Errorf("b after a left: dropped %d, cap %+v; want none", sb.DroppedSeries, sb.SeriesCap)
	}
}
