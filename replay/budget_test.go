package replay_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/replay"
)

// A store whose total cap follows a byte budget raises that cap once it
// measures its sealed chunks, which a store filled by Load never does: a
// replay fixes the cap where an empty store starts (model.FixedConfig),
// so that a seek loads what the index held. Three targets of 100
// counters and a budget of 150 series at SeriesBytes: an index built by
// appending measures its chunks and would keep more than a seek's store
// could load; with the cap fixed, a seek to the end is restored at once
// and shows what playing there shows.
func TestSeekRestoredUnderABudgetCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "budget.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{KeyEvery: 16})
	if err != nil {
		t.Fatal(err)
	}
	for n := range 400 {
		for k, target := range []string{"a", "b", "c"} {
			var b strings.Builder
			b.WriteString("# TYPE retry_originals_total counter\n")
			for d := range 100 {
				fmt.Fprintf(&b, "retry_originals_total{dependency=\"d%03d\"} %d\n", d, n*(1+d%5))
			}
			at := t0.Add(time.Duration(n)*time.Second + time.Duration(k)*37*time.Millisecond)
			if err := w.Append(target, at, "text/plain; version=0.0.4", []byte(b.String())); err != nil {
				t.Fatal(err)
			}
		}
	}
	rec := closeAndOpen(t, w, path)
	cfg := model.StoreConfig{History: 300, MaxSeriesPerTarget: 100, MaxBytes: 150 * model.SeriesBytes(300)}
	if c := model.FixedConfig(cfg).MaxSeries; c >= 300 || c <= 100 {
		t.Fatalf("the budget caps at %d series: the test wants the cap to bind, above one target's", c)
	}
	p := replay.New(rec, replay.Options{Store: cfg})
	if err := p.BuildIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, head := range []time.Time{rec.Time(rec.Len() - 1), t0.Add(350 * time.Second), t0.Add(200 * time.Second)} {
		p.Seek(head)
		if p.Tick() == time.Nanosecond {
			t.Fatalf("seek to %v: not restored at once from the index", head)
		}
		ref := replay.New(rec, replay.Options{Store: cfg, Lookback: 24 * time.Hour, QuickLookback: 24 * time.Hour, IndexMemory: -1})
		ref.Seek(head)
		ref.Settle()
		if got, want := playerText(p), playerText(ref); got != want {
			t.Fatalf("seek to %v differs from playing there\n--- seek\n%s\n--- scratch\n%s", head, got, want)
		}
	}
}
