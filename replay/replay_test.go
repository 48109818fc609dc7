package replay_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/replay"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/ui"
)

var _ ui.Source = (*replay.Player)(nil)
var _ ui.Player = (*replay.Player)(nil)

// fakeClock is a wall clock moved by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2025, 3, 4, 3, 0, 0, 0, time.UTC)

// contractBody is a retrying client's exposition at scrape n: a healthy
// start, then an incident with amplification and provider errors.
func contractBody(target string, n int) string {
	orig := 50 * n
	att, errs := orig, 0
	if n > 60 && n < 120 {
		att = orig + (n-60)*150
		errs = (n - 60) * 40
	} else if n >= 120 {
		att = orig + 60*150
		errs = 60 * 40
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"provider\",priority=\"critical\"} %d\n", orig)
	fmt.Fprintf(&b, "# TYPE retry_attempts_total counter\n")
	fmt.Fprintf(&b, "retry_attempts_total{dependency=\"provider\",outcome=\"success\"} %d\n", att-errs)
	fmt.Fprintf(&b, "retry_attempts_total{dependency=\"provider\",outcome=\"temporary_error\"} %d\n", errs)
	fmt.Fprintf(&b, "# TYPE retry_active_calls gauge\nretry_active_calls{dependency=\"provider\"} %d\n", n%7)
	fmt.Fprintf(&b, "# TYPE up_%s gauge\nup_%s 1\n", target, target)
	return b.String()
}

type captured struct {
	target string
	at     time.Time
	body   []byte
	ct     string
	err    string
}

// record scrapes two loopback targets n times on a fake clock into a dump
// and a live store, and returns what OnScrape saw.
func record(t *testing.T, n int) (string, *model.Store, []model.TargetStatus, []captured) {
	t.Helper()
	var mu sync.Mutex
	count := map[string]int{}
	down := false
	srv := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			c := count[name]
			count[name]++
			d := down
			mu.Unlock()
			if d && name == "client" {
				http.Error(w, "boom", http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			fmt.Fprint(w, contractBody(name, c))
		}))
	}
	app, client := srv("app"), srv("client")
	defer app.Close()
	defer client.Close()
	path := filepath.Join(t.TempDir(), "rec.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{KeyEvery: 16})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: t0}
	var caps []captured
	hook := w.Hook(func(err error) { t.Error(err) })
	store := model.NewStore(model.StoreConfig{History: 1000})
	s := scrape.NewScraper([]scrape.Target{{Name: "app", URL: app.URL}, {Name: "client", URL: client.URL}}, store, scrape.Options{
		Clock: clock.Now,
		OnScrape: func(target string, at time.Time, body []byte, ct string, err error) {
			c := captured{target: target, at: at, body: bytes.Clone(body), ct: ct}
			if err != nil {
				c.err = err.Error()
			}
			mu.Lock()
			caps = append(caps, c)
			mu.Unlock()
			hook(target, at, body, ct, err)
		},
	})
	var statuses []model.TargetStatus
	for i := 0; i < n; i++ {
		mu.Lock()
		down = i >= n-3 // the client fails its last scrapes
		mu.Unlock()
		statuses = s.ScrapeOnce(context.Background())
		clock.Add(time.Second)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, store, statuses, caps
}

// TestRecordReplayRoundTrip: what the scraper saw is what the dump gives
// back, byte for byte and to the nanosecond, and a replay at the end has
// the same store and builds the same frame as the live collector.
func TestRecordReplayRoundTrip(t *testing.T) {
	path, live, liveStatuses, caps := record(t, 150)
	rec, err := dump.OpenRecording(path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	r := dump.DumpReader(rec)
	if r.Len() != len(caps) {
		t.Fatalf("%d frames, %d scrapes", r.Len(), len(caps))
	}
	// Frames come back in time order; scrapes of one round share a time.
	byKey := map[string]captured{}
	for _, c := range caps {
		byKey[c.target+c.at.String()] = c
	}
	for i := 0; i < r.Len(); i++ {
		f, err := r.Frame(i)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := byKey[f.Target+f.Time.String()]
		if !ok || !bytes.Equal(f.Body, c.body) || f.Time.UnixNano() != c.at.UnixNano() || f.ContentType != c.ct || f.Err != c.err {
			t.Fatalf("frame %d (%s at %v) differs from the scrape", i, f.Target, f.Time)
		}
		if c.err != "" && !strings.Contains(c.err, "500") {
			t.Errorf("failed scrape recorded as %q", c.err)
		}
	}

	clock := &fakeClock{t: t0}
	p := replay.New(rec, replay.Options{Store: model.StoreConfig{History: 1000}, Lookback: time.Hour, Now: clock.Now})
	p.SeekEnd()
	p.Tick()
	// The first tick previews the window: each target's first and last
	// scrape in it, enough for the rows' rates.
	if n := len(p.Store().Times("app")); n != 2 {
		t.Errorf("the preview holds %d scrapes of app, want 2", n)
	}
	w30 := analysis.FrameOptions{Window: 30 * time.Second, Bin: 10 * time.Second, Bins: 1}
	if a, b := fmt.Sprintf("%+v", analysis.BuildFrame(p.Store(), nil, w30).Rows[0]), fmt.Sprintf("%+v", analysis.BuildFrame(live, nil, w30).Rows[0]); a != b {
		t.Errorf("the preview's row differs:\npreview %s\nlive    %s", a, b)
	}
	p.Settle()
	if got, want := dumpStore(p.Store()), dumpStore(live); got != want {
		t.Fatalf("replayed store differs from the live one\n--- replay\n%.2000s\n--- live\n%.2000s", got, want)
	}
	st := p.Statuses()
	for i := range st {
		l := liveStatuses[i]
		if st[i].Name != l.Name || st[i].Up != l.Up || st[i].Scrapes != l.Scrapes || st[i].Failures != l.Failures || st[i].Series != l.Series || !st[i].LastScrape.Equal(l.LastScrape) {
			t.Errorf("status %d: replay %+v, live %+v", i, st[i], l)
		}
	}
	fo := analysis.FrameOptions{Window: time.Minute, Bin: 10 * time.Second, Bins: 12}
	if a, b := fmt.Sprintf("%+v", analysis.BuildFrame(p.Store(), nil, fo)), fmt.Sprintf("%+v", analysis.BuildFrame(live, nil, fo)); a != b {
		t.Fatalf("frames differ:\nreplay %s\nlive   %s", a, b)
	}
}

// dumpStore prints every series of a store.
func dumpStore(st *model.Store) string {
	var b strings.Builder
	for _, t := range st.Targets() {
		fmt.Fprintf(&b, "%s %v\n", t, st.Times(t))
		for _, n := range st.Names(t) {
			for _, s := range st.Select(t, n, nil) {
				fmt.Fprintf(&b, "  %s%s %v stale=%v\n", n, s.Labels, s.Points, s.Stale)
			}
		}
	}
	return b.String()
}

func openRec(t *testing.T, n int) dump.Recording {
	path, _, _, _ := record(t, n)
	rec, err := dump.OpenRecording(path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec
}

func newest(st *model.Store) time.Time {
	var n int64
	for _, t := range st.Targets() {
		if s := st.Stats(t); s.NewestMs > n {
			n = s.NewestMs
		}
	}
	return time.UnixMilli(n).UTC()
}

func TestPlayerControls(t *testing.T) {
	rec := openRec(t, 150)
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := replay.New(rec, replay.Options{Now: clock.Now, Lookback: 30 * time.Second})
	p.Tick()
	pos, start, end := p.Position()
	if !pos.Equal(t0) || !start.Equal(t0) || end.Sub(start) != 149*time.Second || p.Playing() {
		t.Fatalf("initial: pos %v start %v end %v playing %v", pos, start, end, p.Playing())
	}
	if got := newest(p.Store()); !got.Equal(t0) {
		t.Fatalf("store newest %v, want %v", got, t0)
	}
	if p.Interval() != time.Second {
		t.Fatalf("interval %v", p.Interval())
	}

	// Play at 4x: 5 s of wall time are 20 s of data.
	p.SetSpeed(4)
	p.Toggle()
	select {
	case <-p.Updates():
	default:
		t.Fatal("no update after a control")
	}
	clock.Add(5 * time.Second)
	wait := p.Tick()
	pos, _, _ = p.Position()
	if !pos.Equal(t0.Add(20*time.Second)) || !newest(p.Store()).Equal(t0.Add(20*time.Second)) {
		t.Fatalf("after 5s at 4x: pos %v newest %v", pos, newest(p.Store()))
	}
	if wait != 250*time.Millisecond {
		t.Fatalf("next entry due in %v, want 250ms at 4x", wait)
	}

	// Step pauses and moves one scrape.
	p.Step(1)
	p.Tick()
	if pos, _, _ = p.Position(); !pos.Equal(t0.Add(21*time.Second)) || p.Playing() {
		t.Fatalf("step: pos %v playing %v", pos, p.Playing())
	}
	clock.Add(time.Minute)
	p.Tick()
	if pos, _, _ = p.Position(); !pos.Equal(t0.Add(21 * time.Second)) {
		t.Fatalf("paused, yet the playhead moved to %v", pos)
	}
	p.Step(-2)
	p.Tick()
	if got := newest(p.Store()); !got.Equal(t0.Add(19 * time.Second)) {
		t.Fatalf("step back: store newest %v", got)
	}

	// Jump +1m and back -1m: the store is rebuilt with Lookback of data.
	p.Jump(time.Minute)
	p.Tick()
	if got := newest(p.Store()); !got.Equal(t0.Add(79 * time.Second)) {
		t.Fatalf("jump: newest %v", got)
	}
	if ts := p.Store().Times("app"); len(ts) != 31 || ts[0] != t0.Add(49*time.Second).UnixMilli() {
		t.Fatalf("after a far jump the store holds %d scrapes from %v", len(ts), time.UnixMilli(ts[0]).UTC())
	}
	p.Jump(-time.Minute)
	p.Tick()
	if got := newest(p.Store()); !got.Equal(t0.Add(19 * time.Second)) {
		t.Fatalf("jump back: newest %v", got)
	}

	// Speed stays within 0.25x..64x.
	p.SetSpeed(1000)
	if p.Speed() != 64 {
		t.Fatalf("speed %v", p.Speed())
	}
	p.SetSpeed(0.01)
	if p.Speed() != 0.25 {
		t.Fatalf("speed %v", p.Speed())
	}

	// End, start; playing to the end pauses there.
	p.SeekEnd()
	p.Tick()
	if pos, _, _ = p.Position(); !pos.Equal(end) || p.Playing() {
		t.Fatalf("end: %v playing %v", pos, p.Playing())
	}
	st := p.Statuses()
	if st[1].Name != "client" || st[1].Up || !strings.Contains(st[1].LastError, "500") {
		t.Fatalf("the client's failed scrapes are not shown: %+v", st[1])
	}
	p.SeekStart()
	p.Tick()
	if pos, _, _ = p.Position(); !pos.Equal(t0) {
		t.Fatalf("start: %v", pos)
	}
	p.SetSpeed(64)
	p.Toggle()
	clock.Add(time.Hour)
	if p.Tick() != 0 || p.Playing() {
		t.Fatal("still playing past the end")
	}
	if pos, _, _ = p.Position(); !pos.Equal(end) {
		t.Fatalf("played to %v, want the end", pos)
	}
	// Play again from the end starts over.
	p.Toggle()
	if pos, _, _ = p.Position(); !pos.Equal(t0) || !p.Playing() {
		t.Fatalf("replay from the end: %v", pos)
	}
}

// TestSeekingUntilLoaded: a control that moves the playhead farther than
// playing on would (a seek, a jump, a step back) marks the player
// seeking until the Tick that loads the store for it; a step forward
// within what playing reaches does not. With and without the index.
func TestSeekingUntilLoaded(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		rec := openRec(t, 150)
		clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
		p := replay.New(rec, replay.Options{Now: clock.Now, Lookback: 30 * time.Second, QuickLookback: 10 * time.Second})
		if indexed {
			if err := p.BuildIndex(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		p.Settle()
		if p.Seeking() {
			t.Fatalf("indexed %v: seeking before any control", indexed)
		}
		for _, c := range []struct {
			name    string
			control func()
			seeking bool
		}{
			{"the end", p.SeekEnd, true},
			{"the start", p.SeekStart, true},
			{"a step forward", func() { p.Step(1) }, false},
			{"a minute on", func() { p.Jump(time.Minute) }, true},
			{"a step back", func() { p.Step(-1) }, true},
			{"12 s on, past the quick lookback", func() { pos, _, _ := p.Position(); p.Seek(pos.Add(12 * time.Second)) }, true},
		} {
			c.control()
			if got := p.Seeking(); got != c.seeking {
				t.Errorf("indexed %v, %s: seeking %v, want %v", indexed, c.name, got, c.seeking)
			}
			p.Settle()
			if p.Seeking() {
				t.Errorf("indexed %v, %s: still seeking after the store was loaded", indexed, c.name)
			}
			pos, _, _ := p.Position()
			if got := newest(p.Store()); got.After(pos) || pos.Sub(got) > time.Second {
				t.Errorf("indexed %v, %s: the store ends at %v, the playhead is %v", indexed, c.name, got, pos)
			}
		}
	}
}

func TestFromAndRun(t *testing.T) {
	rec := openRec(t, 40)
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	timers := make(chan chan time.Time, 16)
	p := replay.New(rec, replay.Options{Now: clock.Now, From: t0.Add(10 * time.Second), Play: true,
		After: func(d time.Duration) <-chan time.Time {
			c := make(chan time.Time, 1)
			timers <- c
			return c
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	// The first tick loads the playhead and arms a timer.
	c := <-timers
	<-p.Updates()
	if got := newest(p.Store()); !got.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("from: newest %v", got)
	}
	clock.Add(3 * time.Second)
	c <- clock.Now()
	<-timers
	for !newest(p.Store()).Equal(t0.Add(13 * time.Second)) {
		<-p.Updates()
	}
	cancel()
	<-done
}

func TestSpikes(t *testing.T) {
	rec := openRec(t, 150)
	p := replay.New(rec, replay.Options{SpikeBins: 15})
	for _, s := range p.Spikes() {
		if s != replay.SpikeUnknown {
			t.Fatalf("spikes known before they were computed: %v", p.Spikes())
		}
	}
	if err := p.ComputeSpikes(context.Background()); err != nil {
		t.Fatal(err)
	}
	sp := p.Spikes()
	// 150 s in 15 bins of ~10 s: the incident runs from scrape 60 to 120.
	if sp[0] != replay.SpikeNone || sp[3] != replay.SpikeNone || sp[14] != replay.SpikeNone {
		t.Errorf("spikes outside the incident: %v", sp)
	}
	if sp[9] != replay.SpikeCritical || sp[7] == replay.SpikeNone {
		t.Errorf("no spike during the incident: %v", sp)
	}
	// Reading only the scrapes at the bin edges gives the bins that all
	// scrapes give.
	st := model.NewStore(model.StoreConfig{History: 1000})
	dump.LoadStore(rec, st, nil)
	_, start, end := p.Position()
	if all := replay.SpikeLevels(st, start, end, end.Sub(start)/15, 15, analysis.DefaultThresholds()); fmt.Sprint(all) != fmt.Sprint(sp) {
		t.Errorf("spikes from the edges %v, from every scrape %v", sp, all)
	}
}
