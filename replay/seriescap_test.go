package replay_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/replay"
)

// A replay's target status says which of the store's caps
// refused its series and what the store kept, as a live scrape's does,
// so the series-cap banner tells the truth on a recording too.
func TestReplayStatusSaysWhichSeriesCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wide.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body := func(n int) []byte {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "retry_originals_total{dependency=\"d%d\",priority=\"critical\"} 1\n", i)
		}
		return []byte(b.String())
	}
	for i := range 3 {
		at := t0.Add(time.Duration(i) * time.Second)
		for k, tg := range []struct {
			name string
			n    int
		}{{"a", 4}, {"b", 2}} { // a first in every second
			if err := w.Append(tg.name, at.Add(time.Duration(k)*10*time.Millisecond), "text/plain; version=0.0.4", body(tg.n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	rec := closeAndOpen(t, w, path)
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	// a: 4 series, 3 kept by its cap; b: 2 series, 1 kept by the total of 4.
	p := replay.New(rec, replay.Options{Now: clock.Now, Store: model.StoreConfig{MaxSeriesPerTarget: 3, MaxSeries: 4}})
	p.SeekEnd()
	p.Tick()
	p.Settle()
	got := map[string]model.TargetStatus{}
	for _, s := range p.Statuses() {
		got[s.Name] = s
	}
	if a := got["a"]; a.DroppedSeries != 1 || a.SeriesCap == nil || *a.SeriesCap != (model.SeriesCap{ByTarget: 1, PerTarget: 3, Total: 4, Kept: 3, StoreKept: 4}) {
		t.Errorf("a: dropped %d, cap %+v; want 1 refused by its cap of 3, 3 kept", a.DroppedSeries, a.SeriesCap)
	}
	if b := got["b"]; b.DroppedSeries != 1 || b.SeriesCap == nil || *b.SeriesCap != (model.SeriesCap{ByTotal: 1, PerTarget: 3, Total: 4, Kept: 1, StoreKept: 4}) {
		t.Errorf("b: dropped %d, cap %+v; want 1 refused by the total of 4, 1 kept", b.DroppedSeries, b.SeriesCap)
	}
}
