package scrape

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
)

// TestWallClockStepsDoNotReorderScrapes: the wall clock steps back an hour
// and then forward two while the scraper runs, one second of monotonic
// time between scrapes. The scrapes are stamped a second apart all the
// same, the store keeps every one, the counter's rate is its true 10/s,
// and the recording holds the frames in order a second apart.
func TestWallClockStepsDoNotReorderScrapes(t *testing.T) {
	var mu sync.Mutex
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	wall, mono := t0, time.Duration(0)
	steps := map[int]time.Duration{3: -time.Hour, 6: 2 * time.Hour} // before scrape i
	clock := SteadyClock(
		func() time.Time { mu.Lock(); defer mu.Unlock(); return wall },
		func() time.Duration { mu.Lock(); defer mu.Unlock(); return mono })
	count := 0
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		count += 10
		body := "# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"db\"} " + strconv.Itoa(count) + "\n"
		return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{"Content-Type": {ctText}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})
	var rec bytes.Buffer
	w, err := dump.NewWriter(&rec, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store := model.NewStore(model.StoreConfig{})
	s := NewScraper([]Target{target("app", "http://app.test/metrics")}, store,
		Options{Clock: clock, Transport: rt, OnScrape: w.Hook(func(err error) { t.Error(err) })})
	const n = 10
	for i := range n {
		mu.Lock()
		wall = wall.Add(steps[i] + time.Second)
		mono += time.Second
		mu.Unlock()
		if st := s.ScrapeOnce(t.Context()); !st[0].Up {
			t.Fatalf("scrape %d: %+v", i, st[0])
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pts := store.Select("app", "retry_originals_total", nil)
	if len(pts) != 1 || len(pts[0].Points) != n {
		t.Fatalf("stored %+v, want %d points", pts, n)
	}
	for i, p := range pts[0].Points {
		if want := t0.Add(time.Duration(i+1) * time.Second).UnixMilli(); p.T != want {
			t.Errorf("point %d at %d, want %d (a second apart from the first)", i, p.T, want)
		}
	}
	first, last := pts[0].Points[0], pts[0].Points[n-1]
	if rate := (last.V - first.V) / (float64(last.T-first.T) / 1000); rate != 10 {
		t.Errorf("rate %v/s, want 10", rate)
	}
	r, err := dump.NewReader(bytes.NewReader(rec.Bytes()), int64(rec.Len()), "rec")
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != n {
		t.Fatalf("%d frames, want %d", r.Len(), n)
	}
	for i := range n {
		f, err := r.Frame(i)
		if err != nil {
			t.Fatal(err)
		}
		if want := t0.Add(time.Duration(i+1) * time.Second); !f.Time.Equal(want) {
			t.Errorf("frame %d at %v, want %v", i, f.Time, want)
		}
	}
}
