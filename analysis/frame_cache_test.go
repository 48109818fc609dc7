package analysis

import (
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// cacheEvent is one step of a scenario: a scrape appended, or a target
// forgotten (it left the scrape set).
type cacheEvent struct {
	at     int64 // when it happens; the order of events
	snap   *model.Snapshot
	forget string
}

// cacheScenario builds events from targets' scrapes in compact notation.
type cacheScenario struct {
	t      *testing.T
	events []cacheEvent
}

// add appends target's scrapes at times; each lands delayMs after it
// starts (scrapes are stamped when they start).
func (sc *cacheScenario) add(target string, delayMs int64, times []int64, series ...ts) {
	for i, s := range snapshots(sc.t, target, times, series...) {
		sc.events = append(sc.events, cacheEvent{at: times[i] + delayMs, snap: &s})
	}
}

func (sc *cacheScenario) forget(target string, at int64) {
	sc.events = append(sc.events, cacheEvent{at: at, forget: target})
}

func dep(d string, extra ...string) []string { return append([]string{"dependency", d}, extra...) }

// TestFrameCacheMatchesFresh replays scenarios event by event and after
// every one builds the live view's frame twice, reusing the previous
// frame's bins both times: selecting every range from the store, and
// through a FrameCache. Rows and timelines must be identical, and the
// cache must actually serve most frames from what it held. Every target's
// selection through a second cache is also compared with the store's at
// the frame's window, so differences in series no row shows are caught
// too.
func TestFrameCacheMatchesFresh(t *testing.T) {
	steady := func(sc *cacheScenario, n int) {
		m := strconv.Itoa(n - 1)
		sc.add("app", 0, every(t0, 1000, n),
			ts{model.MetricOriginals, dep("provider"), "0+5x" + m},
			ts{model.MetricAttempts, dep("provider", "outcome", "success"), "0+4x" + m},
			ts{model.MetricAttempts, dep("provider", "outcome", "timeout"), "0+3x" + m},
			ts{model.MetricResults, dep("provider", "result", "success"), "0+4x" + m},
			ts{model.MetricActiveCalls, dep("provider"), "1+1x" + m},
			ts{model.MetricRequestDuration + "_bucket", dep("provider", "result_class", "success", "le", "0.1"), "0+3x" + m},
			ts{model.MetricRequestDuration + "_bucket", dep("provider", "result_class", "success", "le", "+Inf"), "0+4x" + m},
			ts{model.MetricRequestDuration + "_sum", dep("provider", "result_class", "success"), "0+0.2x" + m},
		)
	}
	for _, tc := range []struct {
		name    string
		history int
		window  time.Duration
		build   func(sc *cacheScenario)
		// frameEvery builds frames after every n-th event only (0: every
		// one), so that a series or a target can leave and come back
		// between two frames.
		frameEvery int
	}{
		{"steady", 300, 10 * time.Second, func(sc *cacheScenario) { steady(sc, 90) }, 0},
		{"series appears", 300, 10 * time.Second, func(sc *cacheScenario) {
			steady(sc, 90)
			// A dependency that shows up a minute in, and one more
			// outcome of a known one.
			sc.add("app", 0, every(t0, 1000, 90),
				ts{model.MetricOriginals, dep("late"), "_x59 0+2x29"},
				ts{model.MetricAttempts, dep("provider", "outcome", "error"), "_x30 0+1x58"},
			)
		}, 0},
		{"counter reset", 300, 10 * time.Second, func(sc *cacheScenario) {
			sc.add("app", 0, every(t0, 1000, 90),
				ts{model.MetricOriginals, dep("provider"), "0+5x40 0+5x48"},
				ts{model.MetricAttempts, dep("provider", "outcome", "success"), "0+4x40 0+4x48"},
			)
		}, 0},
		{"target down", 300, 10 * time.Second, func(sc *cacheScenario) {
			steady(sc, 90)
			// client falls silent after 50 scrapes, provider answers
			// late and out of step.
			sc.add("client", 500, every(t0+700, 1000, 50),
				ts{model.MetricOriginals, dep("app"), "0+5x49"},
				ts{model.MetricAttempts, dep("app", "outcome", "success"), "0+5x49"},
			)
			sc.add("provider", 1700, every(t0+400, 1000, 90),
				ts{model.MetricServerReceived, nil, "0+7x89"},
			)
		}, 0},
		{"window slides past old samples", 40, 10 * time.Second, func(sc *cacheScenario) {
			// A history of 40 scrapes over 120: the ring wraps, the
			// window and the timeline run past what the store keeps.
			sc.add("app", 0, every(t0, 1000, 120),
				ts{model.MetricOriginals, dep("provider"), "0+5x119"},
				// Gone for 15 scrapes (longer than the 10 s window):
				// its newest sample before the window is the start.
				ts{model.MetricAttempts, dep("provider", "outcome", "success"), "0+4x30 _x15 200+4x73"},
				// Gone for longer than the history: forgotten by the
				// store, then created again.
				ts{model.MetricAttempts, dep("provider", "outcome", "timeout"), "0+1x20 _x50 0+1x48"},
				// A series without labels, forgotten and created again:
				// the same (nil) label array both times.
				ts{model.MetricOriginals, nil, "0+1x20 _x50 0+1x48"},
			)
			// The dependency's own server-side series, joined onto
			// app's row: one with a gap, one forgotten and back, and
			// one with a dependency label, which is not the server's.
			sc.add("provider", 300, every(t0+200, 1000, 120),
				ts{model.MetricServerReceived, nil, "0+7x30 _x15 300+7x73"},
				ts{model.MetricServerRequests, []string{"deadline", "propagated"}, "0+2x20 _x50 0+2x48"},
				ts{model.MetricServerRequests, []string{"deadline", "missing"}, "0+1x119"},
				ts{model.MetricServerServiceTime + "_bucket", []string{"le", "0.1"}, "0+3x119"},
				ts{model.MetricServerServiceTime + "_bucket", []string{"le", "+Inf"}, "0+5x119"},
				ts{model.MetricServerServiceTime + "_sum", nil, "0+0.4x119"},
				ts{model.MetricServerReceived, dep("db"), "0+9x119"},
			)
		}, 0},
		{"window slides, frames every third scrape", 40, 10 * time.Second, func(sc *cacheScenario) {
			sc.add("app", 0, every(t0, 1000, 120),
				ts{model.MetricOriginals, dep("provider"), "0+5x119"},
				ts{model.MetricAttempts, dep("provider", "outcome", "success"), "0+4x30 _x15 200+4x73"},
				ts{model.MetricOriginals, nil, "0+1x20 _x40 0+1x58"},
			)
		}, 3},
		{"target forgotten and back", 300, 10 * time.Second, func(sc *cacheScenario) {
			sc.add("app", 0, every(t0, 1000, 30),
				ts{model.MetricOriginals, dep("provider"), "0+5x29"},
			)
			sc.add("client", 0, every(t0+300, 1000, 90),
				ts{model.MetricOriginals, dep("app"), "0+5x89"},
			)
			sc.forget("app", t0+30_000)
			// Back five seconds later, counting from 0 again.
			sc.add("app", 0, every(t0+35_000, 1000, 55),
				ts{model.MetricOriginals, dep("provider"), "0+2x54"},
			)
			// solo has one series and no labels: forgotten and back
			// between two frames, nothing but its scrape times says it
			// is not the same.
			sc.add("solo", 0, every(t0+100, 1000, 30), ts{model.MetricOriginals, nil, "0+5x29"})
			sc.forget("solo", t0+30_050)
			sc.add("solo", 0, every(t0+30_100, 1000, 60), ts{model.MetricOriginals, nil, "1000+1x59"})
		}, 0},
		{"target forgotten and back between frames", 300, 10 * time.Second, func(sc *cacheScenario) {
			sc.add("solo", 0, every(t0+100, 1000, 30), ts{model.MetricActiveCalls, nil, "0+5x29"})
			sc.forget("solo", t0+30_050)
			// Absent at its first scrape back: the sample before the
			// window is of its first life, which the store no longer has.
			// A gauge: a counter new to a target would be seeded with a 0
			// at that scrape.
			sc.add("solo", 0, every(t0+30_100, 1000, 60), ts{model.MetricActiveCalls, nil, "_ 1000+1x58"})
		}, 4}, // frames at the 28th and 32nd events: none while solo is gone
		{"wider window than the timeline", 300, 10 * time.Minute, func(sc *cacheScenario) { steady(sc, 90) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &cacheScenario{t: t}
			tc.build(sc)
			sort.SliceStable(sc.events, func(i, j int) bool { return sc.events[i].at < sc.events[j].at })
			st := model.NewStore(model.StoreConfig{History: tc.history})
			// check's selections are compared directly at the window's
			// range, so differences in series no row shows are caught too.
			cache, check := NewFrameCache(), NewFrameCache()
			opts := FrameOptions{Window: tc.window, Bin: 5 * time.Second, Bins: 8, Align: true}
			var prevFresh, prevCached *model.Frame
			for i, ev := range sc.events {
				if ev.forget != "" {
					st.Forget(ev.forget)
				} else {
					st.Append(ev.snap)
				}
				if tc.frameEvery > 0 && i%tc.frameEvery != 0 {
					continue
				}
				fo := opts
				fo.Prev = prevFresh
				fresh := BuildFrame(st, nil, fo)
				co := opts
				co.Prev, co.Cache = prevCached, cache
				cached := BuildFrame(st, nil, co)
				if !reflect.DeepEqual(cached.Rows, fresh.Rows) {
					t.Fatalf("event %d: rows differ through the cache:\n got %+v\nwant %+v", i, cached.Rows, fresh.Rows)
				}
				if !reflect.DeepEqual(cached.Timelines, fresh.Timelines) || !reflect.DeepEqual(cached.FinalMs, fresh.FinalMs) {
					t.Fatalf("event %d: timelines differ through the cache", i)
				}
				prevFresh, prevCached = &fresh, &cached
				checkSelections(t, i, st, check, fresh.Time.UnixMilli()-tc.window.Milliseconds())
			}
			// Most frames bring a target's server-side series up to date
			// instead of selecting them again: new series, forgotten ones
			// and the wider ranges of new rows are the exceptions.
			for _, c := range []*cacheMap{&cache.servers, &check.servers} {
				t.Logf("%d events: %d targets brought up to date, %d selected afresh", len(sc.events), c.delta, c.fresh)
				if c.delta < 2*c.fresh {
					t.Errorf("cache: %d targets brought up to date, %d selected afresh", c.delta, c.fresh)
				}
			}
		})
	}
}

// checkSelections compares, for every target, the cache's selections
// from since (contract and server-side series) with the store's.
func checkSelections(t *testing.T, step int, st *model.Store, cache *FrameCache, since int64) {
	t.Helper()
	cache.lock(st)
	defer cache.unlock()
	for _, target := range st.Targets() {
		all := st.Times(target)
		ts := all
		if k := sort.Search(len(ts), func(j int) bool { return ts[j] > since }); k > 0 {
			ts = ts[k-1:]
		}
		if got, want := cache.selectServer(st, target, all, ts, since), selectServer(st, target, ts, since); !reflect.DeepEqual(got, want) {
			t.Fatalf("event %d, %s since %d: server\n got %+v\nwant %+v", step, target, since, got, want)
		}
		want := selectTarget(st, target, ts, nil, since)
		got := selectTargetInto(&cache.buf, st, target, ts, since)
		if !reflect.DeepEqual(got.series, want.series) || !reflect.DeepEqual(got.times, want.times) {
			for n, ss := range want.series {
				if !reflect.DeepEqual(got.series[n], ss) {
					t.Fatalf("event %d, %s %s since %d:\n got %+v\nwant %+v", step, target, n, since, got.series[n], ss)
				}
			}
			t.Fatalf("event %d, %s since %d: names %d, want %d", step, target, since, len(got.series), len(want.series))
		}
	}
}

// TestFrameCacheNewStore: a cache used with another store forgets the
// first one's series.
func TestFrameCacheNewStore(t *testing.T) {
	a := load(t, nil, "app", every(t0, 1000, 20), ts{model.MetricOriginals, dep("provider"), "0+5x19"})
	b := load(t, nil, "app", every(t0, 1000, 20), ts{model.MetricOriginals, dep("provider"), "0+9x19"})
	cache := NewFrameCache()
	opts := FrameOptions{Window: 10 * time.Second, Bin: 5 * time.Second, Bins: 4, Align: true, Cache: cache}
	fa := BuildFrame(a, nil, opts)
	fb := BuildFrame(b, nil, opts)
	opts.Cache = nil
	if want := BuildFrame(b, nil, opts); !reflect.DeepEqual(fb.Rows, want.Rows) || reflect.DeepEqual(fa.Rows, fb.Rows) {
		t.Errorf("second store through the cache: %+v, want %+v", fb.Rows, want.Rows)
	}
}

// TestFrameCacheConcurrentFrames: frames built at once on one cache (a
// rebuild after a key beside the live frame) take turns and stay right.
// Run with -race.
func TestFrameCacheConcurrentFrames(t *testing.T) {
	st := load(t, nil, "app", every(t0, 1000, 60),
		ts{model.MetricOriginals, dep("provider"), "0+5x59"},
		ts{model.MetricAttempts, dep("provider", "outcome", "success"), "0+4x59"})
	opts := FrameOptions{Window: 10 * time.Second, Bin: 5 * time.Second, Bins: 8, Align: true}
	want := BuildFrame(st, nil, opts)
	opts.Cache = NewFrameCache()
	var wg sync.WaitGroup
	got := make([]model.Frame, 8)
	for i := range got {
		wg.Go(func() { got[i] = BuildFrame(st, nil, opts) })
	}
	wg.Wait()
	for i, f := range got {
		if !reflect.DeepEqual(f.Rows, want.Rows) || !reflect.DeepEqual(f.Timelines, want.Timelines) {
			t.Errorf("frame %d differs", i)
		}
	}
}

// BenchmarkBuildFrameCache is the live view's frame (a minute's window,
// aligned bins reused from the frame before) on benchStore, selecting
// from the store (anchor) and through a FrameCache. The store gets no
// scrape between frames, so the cache's part is its fixed cost.
func BenchmarkBuildFrameCache(b *testing.B) {
	st := benchStore()
	for _, tc := range []struct {
		name  string
		cache *FrameCache
	}{{"store", nil}, {"cache", NewFrameCache()}} {
		b.Run(tc.name, func(b *testing.B) {
			opts := FrameOptions{Window: time.Minute, Bin: 10 * time.Second, Bins: 30, Align: true, Cache: tc.cache}
			prev := BuildFrame(st, nil, opts)
			opts.Prev = &prev
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if f := BuildFrame(st, nil, opts); len(f.Rows) != 50 {
					b.Fatalf("%d rows", len(f.Rows))
				}
			}
		})
	}
}

// TestFrameCacheServiceSignals replays service targets event by event and
// after every one compares each target's ServiceSignalsFor over the
// window ending at its newest scrape through a FrameCache with the
// store's: service families appearing late, a gap, a series forgotten
// and created again, a histogram, status codes, a target forgotten and
// back, the window sliding past what the ring keeps, and calls every
// third event; and the cache serves most calls from what it held.
func TestFrameCacheServiceSignals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		history int
		every   int
	}{{"every event", 300, 1}, {"ring wraps", 40, 1}, {"every third event", 40, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &cacheScenario{t: t}
			sc.add("provider", 0, every(t0, 1000, 120),
				ts{model.MetricServerReceived, nil, "0+7x30 _x15 300+7x73"},
				ts{model.MetricServiceCompleted, nil, "0+6x119"},
				ts{model.MetricServiceInFlight, nil, "3+0x119"},
				ts{model.MetricServiceSlots, nil, "_x40 8+0x79"},
				ts{model.MetricServiceResponses, []string{"code", "200"}, "0+5x119"},
				ts{model.MetricServiceResponses, []string{"code", "503"}, "0+1x20 _x50 0+1x48"},
				ts{model.MetricServerServiceTime + "_bucket", []string{"le", "0.1"}, "0+3x119"},
				ts{model.MetricServerServiceTime + "_bucket", []string{"le", "+Inf"}, "0+5x119"},
				ts{model.MetricServerServiceTime + "_sum", nil, "0+0.4x119"},
				ts{model.MetricServerServiceTime + "_count", nil, "0+5x119"},
				ts{model.MetricServerReceived, dep("db"), "0+9x119"}, // a client's view: not the service's
			)
			sc.add("web", 300, every(t0+300, 1000, 50),
				ts{model.MetricPromHTTPRequests, []string{"code", "200"}, "0+4x49"},
				ts{model.MetricPromHTTPInFlight, nil, "1+0x49"},
			)
			sc.forget("web", t0+52_000)
			sc.add("web", 300, every(t0+60_300, 1000, 50),
				ts{model.MetricPromHTTPRequests, []string{"code", "200"}, "0+2x49"},
			)
			sc.add("app", 0, every(t0, 1000, 120), ts{model.MetricOriginals, dep("provider"), "0+5x119"}) // no service families
			sort.SliceStable(sc.events, func(i, j int) bool { return sc.events[i].at < sc.events[j].at })
			st := model.NewStore(model.StoreConfig{History: tc.history})
			cache := NewFrameCache()
			const window = 10_000
			for i, ev := range sc.events {
				if ev.forget != "" {
					st.Forget(ev.forget)
				} else {
					st.Append(ev.snap)
				}
				if i%tc.every != 0 {
					continue
				}
				for _, target := range st.Targets() {
					ts := st.Times(target)
					if len(ts) == 0 {
						continue
					}
					end := ts[len(ts)-1]
					want := ServiceSignalsFor(st, target, end-window, end)
					if got := cache.ServiceSignalsFor(st, target, end-window, end); !reflect.DeepEqual(got, want) {
						t.Fatalf("event %d, %s: through the cache\n got %+v\nwant %+v", i, target, got, want)
					}
				}
			}
			c := &cache.services
			t.Logf("%d events: %d targets brought up to date, %d selected afresh", len(sc.events), c.delta, c.fresh)
			if c.delta < 2*c.fresh {
				t.Errorf("cache: %d targets brought up to date, %d selected afresh", c.delta, c.fresh)
			}
		})
	}
}

// BenchmarkServiceSignalsCache is the live view's service signals of one
// service target over a minute's window of five minutes retained (the
// dashboard's frame), from the store (anchor) and through a FrameCache,
// with no scrape between calls: the cache's part is its fixed cost.
func BenchmarkServiceSignalsCache(b *testing.B) {
	var series []ts
	for c := range 20 {
		code := strconv.Itoa(200 + c)
		series = append(series, ts{model.MetricServiceResponses, []string{"code", code, "route", "/r"}, "0+5x299"})
	}
	series = append(series, ts{model.MetricServerReceived, nil, "0+7x299"}, ts{model.MetricServiceInFlight, nil, "3+0x299"},
		ts{model.MetricServerServiceTime + "_bucket", []string{"le", "0.1"}, "0+3x299"},
		ts{model.MetricServerServiceTime + "_bucket", []string{"le", "+Inf"}, "0+5x299"},
		ts{model.MetricServerServiceTime + "_sum", nil, "0+0.4x299"}, ts{model.MetricServerServiceTime + "_count", nil, "0+5x299"})
	st := load(b, nil, "provider", every(t0, 1000, 300), series...)
	times := st.Times("provider")
	end := times[len(times)-1]
	for _, tc := range []struct {
		name  string
		cache *FrameCache
	}{{"store", nil}, {"cache", NewFrameCache()}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var s model.ServiceSignals
				if tc.cache != nil {
					s = tc.cache.ServiceSignalsFor(st, "provider", end-60_000, end)
				} else {
					s = ServiceSignalsFor(st, "provider", end-60_000, end)
				}
				if !s.ReceivedPerS.OK() {
					b.Fatal("no received/s")
				}
			}
		})
	}
}

// TestFrameCacheKeepsWorkerBuffers: a frame on every core gives each
// worker a selection buffer of the cache's, kept across a store's change
// (a replay's seek) and a frame on one goroutine (the seek's first, of
// the moment before), so the seek's frame does not grow them from
// nothing; moreKept frames on one goroutine in a row let the other
// workers' go (watch keeps one buffer).
func TestFrameCacheKeepsWorkerBuffers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	a, b := benchStore(), benchStore() // ten targets each
	cache := NewFrameCache()
	opts := FrameOptions{Window: 30 * time.Second, Bin: 10 * time.Second, Bins: 30, Align: true, Cache: cache}
	BuildFrame(a, nil, opts)
	if len(cache.more) != 3 {
		t.Fatalf("after a frame on 4 workers: %d other buffers, want 3", len(cache.more))
	}
	first := cache.more[0]
	prev := BuildFrame(a, nil, opts)
	alone := opts
	alone.Prev = &prev
	BuildFrame(a, nil, alone) // on one goroutine
	BuildFrame(b, nil, opts)  // another store: on every core again
	if len(cache.more) != 3 || cache.more[0] != first {
		t.Errorf("after another store: %d other buffers, the first kept %v; want 3, the same", len(cache.more), len(cache.more) > 0 && cache.more[0] == first)
	}
	prev = BuildFrame(b, nil, opts)
	alone.Prev = &prev
	for k := 1; k <= moreKept; k++ {
		f := BuildFrame(b, nil, alone)
		if held := len(cache.more) > 0; held != (k < moreKept) {
			t.Fatalf("after %d frames on one goroutine: other buffers held %v", k, held)
		}
		alone.Prev = &f
	}
}
