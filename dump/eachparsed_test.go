package dump

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

// TestEachParsedInOrder: entries come in entry order, each the snapshot
// reading it alone gives (transformed), failed scrapes as errors, on one
// goroutine or several; fn returning false stops it at once.
func TestEachParsedInOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	data := valDump(t, 5, 120, 50)
	ref := openBytes(t, data)
	calls := 0
	tag := func(s *model.Snapshot) (*model.Snapshot, error) {
		c := *s
		c.Families = append([]model.Family{{Name: "tagged_" + s.Target, Type: model.Gauge}}, s.Families...)
		return &c, nil
	}
	for _, r := range []struct{ lo, hi int }{{0, 240}, {37, 53}, {100, 110}, {5, 5}} {
		t.Run(fmt.Sprintf("%d-%d", r.lo, r.hi), func(t *testing.T) {
			d := newDumpRecording(openBytes(t, data), expo.ExpfmtParser{}, nil)
			next := r.lo
			all := EachParsed(d, r.lo, r.hi, tag, func(e Parsed) bool {
				calls++
				if e.Index != next {
					t.Fatalf("entry %d, want %d", e.Index, next)
				}
				next++
				want, werr := refSnapshot(ref, e.Index, nil)
				if werr == nil {
					want, _ = tag(want)
				}
				compareSnapshots(t, fmt.Sprintf("entry %d", e.Index), e.Snap, want, e.Err, werr)
				if e.Target != ref.Info(e.Index).Target || !e.At.Equal(ref.Info(e.Index).Time) {
					t.Fatalf("entry %d: %s at %v", e.Index, e.Target, e.At)
				}
				return true
			})
			if !all || next != r.hi {
				t.Fatalf("went through %v, up to %d, want %d", all, next, r.hi)
			}
		})
	}
	if calls != 240+16+10 {
		t.Errorf("%d calls, want %d", calls, 240+16+10)
	}
	d := newDumpRecording(openBytes(t, data), expo.ExpfmtParser{}, nil)
	seen := 0
	if EachParsed(d, 0, 240, nil, func(e Parsed) bool { seen++; return e.Index < 99 }) || seen != 100 {
		t.Errorf("stopped at entry 99: %d entries seen, want 100", seen)
	}
}

// TestLoadStoreRangeStops: Loading.Stop, asked after each entry is
// applied, ends the load at the first entry it says so: the entries
// after it are never stored.
func TestLoadStoreRangeStops(t *testing.T) {
	data := valDump(t, 5, 120, 50) // 240 entries
	d := newDumpRecording(openBytes(t, data), expo.ExpfmtParser{}, nil)
	st := model.NewStore(model.StoreConfig{History: 300, MaxSeries: 10000})
	applied := 0
	statuses := LoadStoreRangeWith(d, 0, 240, st, Loading{
		After: func(time.Time, bool) { applied++ },
		Stop:  func() bool { return applied == 99 },
	})
	scrapes := 0
	for _, s := range statuses {
		scrapes += s.Scrapes
	}
	if applied != 99 || scrapes != 99 {
		t.Errorf("stopped after entry 99: %d entries applied, %d scrapes stored, want 99", applied, scrapes)
	}
}
