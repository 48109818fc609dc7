package scrape

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

// TestHugeTargetBudgetedBySeries: a body of many short series is budgeted
// by its series (expo.ParseBytesPerSeries), not its bytes: 60,000 series in
// about 2 MB need some 30 MB to parse, which a 16 MiB budget refuses with
// a per-target error naming the series, while a small target beside it
// stays up. With a filter that wants one of its families, the same body
// is budgeted by the lines of that family only, and parses.
func TestHugeTargetBudgetedBySeries(t *testing.T) {
	const series = 60000
	var b strings.Builder
	b.WriteString("# TYPE big_total counter\n")
	for i := range series {
		fmt.Fprintf(&b, "big_total{i=\"%d\"} 1\n", i)
	}
	b.WriteString("# TYPE small_total counter\nsmall_total 3\n")
	huge := b.String()
	hugeSrv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write([]byte(huge))
	})
	smallSrv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write([]byte("# TYPE small_total counter\nsmall_total 1\n"))
	})
	const budget = 16 << 20
	if int64(len(huge))*expo.ParseCost >= budget {
		t.Fatalf("the body (%d bytes) must fit the budget by its bytes for this test to mean anything", len(huge))
	}
	for _, tc := range []struct {
		name   string
		filter func(string) bool
		up     bool
	}{
		{"every family", nil, false},
		{"one small family wanted", only("small_total"), true},
	} {
		mem := NewMemoryBudget(budget)
		targets := []Target{target("huge", hugeSrv.URL), target("small", smallSrv.URL)}
		s := NewScraper(targets, model.NewStore(model.StoreConfig{MaxSeriesPerTarget: 2 * series}), Options{Clock: stepClock(), Memory: mem, Filter: tc.filter})
		sts := s.ScrapeOnce(t.Context())
		h, sm := statusOf(t, sts, "huge"), statusOf(t, sts, "small")
		if !sm.Up {
			t.Errorf("%s: the small target is down: %s", tc.name, sm.LastError)
		}
		if h.Up != tc.up {
			t.Fatalf("%s: huge target up %v (%s), want %v", tc.name, h.Up, h.LastError, tc.up)
		}
		if !tc.up {
			want := fmt.Sprintf("parsing %d series: needs", series+3)
			if !strings.Contains(h.LastError, want) || !strings.Contains(h.LastError, "--memory-limit") || mem.Refused() != 1 {
				t.Errorf("%s: error %q (refused %d), want one refusal saying %q", tc.name, h.LastError, mem.Refused(), want)
			}
			// Counted in the status (series_cap in JSON): the series, what
			// the scrape needed (the body's buffer, doubled from 64 KiB
			// past the body, and the parse of its series), the budget.
			buf := int64(64 << 10)
			for buf <= int64(len(huge)) {
				buf *= 2
			}
			wantCap := model.MemoryCap{ByMemory: series + 3, Needed: buf + (series+3)*expo.ParseBytesPerSeries, Budget: budget}
			if h.MemoryCap == nil || *h.MemoryCap != wantCap {
				t.Errorf("%s: memory cap %+v, want %+v", tc.name, h.MemoryCap, wantCap)
			}
		} else if h.MemoryCap != nil {
			t.Errorf("%s: memory cap %+v on a target that parsed", tc.name, h.MemoryCap)
		}
		if mem.InUse() != 0 {
			t.Errorf("%s: %d bytes still reserved after the scrapes", tc.name, mem.InUse())
		}
	}
}
