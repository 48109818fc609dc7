package collect

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

func TestScrapeWindowScrapesBothEnds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"db\"} 1\n"))
	}))
	defer srv.Close()
	tests := []struct {
		d, every  time.Duration
		minRounds int
		maxRounds int
	}{
		{0, time.Second, 1, 1},
		{40 * time.Millisecond, 10 * time.Millisecond, 2, 6},
	}
	for _, tt := range tests {
		tgt, err := ParseTarget("app=" + srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		s := NewScraper([]Target{tgt}, model.NewStore(model.StoreConfig{}), Options{})
		rounds := 0
		st := s.ScrapeWindow(context.Background(), tt.d, tt.every, func(r int, _ []model.TargetStatus) { rounds = r })
		if rounds < tt.minRounds || rounds > tt.maxRounds {
			t.Errorf("d=%v: %d rounds, want %d..%d", tt.d, rounds, tt.minRounds, tt.maxRounds)
		}
		if len(st) != 1 || st[0].Scrapes != rounds || !AnyScraped(st) {
			t.Errorf("d=%v: statuses %+v after %d rounds", tt.d, st, rounds)
		}
	}
}

func TestAnyScrapedFalseWhenAllDown(t *testing.T) {
	if AnyScraped([]model.TargetStatus{{Name: "a"}, {Name: "b", Failures: 3}}) {
		t.Error("AnyScraped true without a successful scrape")
	}
}
