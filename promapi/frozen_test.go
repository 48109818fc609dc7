package promapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// frozenServer answers the query API with empty results until frozen;
// then it holds each request until released (answering 503) or until the
// client gives up, counting the requests that reached it.
type frozenServer struct {
	*httptest.Server
	frozen   atomic.Bool
	held     atomic.Int64
	arrived  chan struct{} // a frozen request arrived
	release  chan struct{}
	releaser sync.Once
}

func newFrozenServer(t *testing.T) *frozenServer {
	fs := &frozenServer{arrived: make(chan struct{}, 1024), release: make(chan struct{})}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fs.frozen.Load() {
			fs.held.Add(1)
			fs.arrived <- struct{}{}
			select {
			case <-fs.release:
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"status":"error","errorType":"unavailable","error":"thawed"}`))
			case <-r.Context().Done():
			}
			return
		}
		typ := "vector"
		if strings.HasSuffix(r.URL.Path, "query_range") {
			typ = "matrix"
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"` + typ + `","result":[]}}`))
	}))
	t.Cleanup(func() { fs.thaw(); fs.Close() })
	return fs
}

func (fs *frozenServer) thaw() { fs.releaser.Do(func() { close(fs.release) }) }

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// TestFrozenServerShownUnresponsive: a server that stops answering (kill
// -STOP: connections accepted, no response) is shown down with how long
// it has been silent, and its targets' data stale, as soon as a refresh
// has waited longer than one query's timeout, while that refresh is
// still waiting; not before. Time is the test's clock; the server is
// held, not slept on.
func TestFrozenServerShownUnresponsive(t *testing.T) {
	fs := newFrozenServer(t)
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	const timeout = time.Minute // never reached in real time: the server is thawed first
	src, err := New(Options{Client: ClientConfig{URL: fs.URL, Timeout: timeout}, Clock: clock.Now,
		Step: time.Second, Backfill: -1, Delay: -1})
	if err != nil {
		t.Fatal(err)
	}
	if st := src.Refresh(t.Context()); !st[0].Up {
		t.Fatalf("healthy refresh: server %+v", st[0])
	}
	fs.frozen.Store(true)
	clock.Set(t0.Add(time.Second))
	done := make(chan struct{})
	go func() { defer close(done); src.Refresh(t.Context()) }()
	<-fs.arrived // the refresh waits on the server now

	clock.Set(t0.Add(time.Second + timeout)) // exactly one timeout: not yet
	if st := src.Statuses(); !st[0].Up {
		t.Errorf("after one query timeout exactly: server %+v, want still up", st[0])
	}
	clock.Set(t0.Add(time.Second + timeout + 12*time.Second))
	st := src.Statuses()
	want := "no answer for 1m13s"
	if st[0].Up || !strings.Contains(st[0].LastError, want) {
		t.Errorf("frozen: server up %v, %q; want down saying %q", st[0].Up, st[0].LastError, want)
	}
	for _, ts := range st[1:] {
		if ts.Up || !strings.HasPrefix(ts.LastError, "stale: prometheus no answer for") {
			t.Errorf("target %s: up %v, %q; want stale", ts.Name, ts.Up, ts.LastError)
		}
	}
	fs.thaw()
	<-done
	// The refresh got answers (503s): the server is up again, and says why
	// its queries failed.
	if st := src.Statuses(); !st[0].Up && !strings.Contains(st[0].LastError, "thawed") {
		t.Errorf("after the thaw: server %+v", st[0])
	}
}

// TestFrozenServerGivenUpInOneTimeout: when no query of a refresh gets an
// answer, the first timeout gives up the rest: at most one wave of
// Concurrency queries and the clock query reach the server, not one wave
// after another, each waiting out its timeout.
func TestFrozenServerGivenUpInOneTimeout(t *testing.T) {
	fs := newFrozenServer(t)
	const concurrency = 2
	src, err := New(Options{Client: ClientConfig{URL: fs.URL, Timeout: 100 * time.Millisecond},
		Step: time.Second, Backfill: -1, Delay: -1, Concurrency: concurrency})
	if err != nil {
		t.Fatal(err)
	}
	n := len(src.Queries())
	if n < 3*concurrency {
		t.Fatalf("%d queries: too few to see waves", n)
	}
	fs.frozen.Store(true)
	st := src.Refresh(t.Context())
	if got := fs.held.Load(); got > concurrency+1 {
		t.Errorf("%d requests reached the frozen server, want at most %d (one wave and the clock query)", got, concurrency+1)
	}
	if st[0].Up || !strings.Contains(st[0].LastError, "timed out") {
		t.Errorf("server up %v, %q; want down, timed out", st[0].Up, st[0].LastError)
	}
}
