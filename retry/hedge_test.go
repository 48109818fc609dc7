package retry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const hedgeDelay = 40 * ms

// hedgeClock is a fakeClock whose hedge timer (a Sleep of hedgeDelay)
// fires only when the test closes fire, or ends with its ctx.
type hedgeClock struct {
	*fakeClock
	fire chan struct{}
}

func (c *hedgeClock) Sleep(ctx context.Context, d time.Duration) error {
	if d != hedgeDelay {
		return c.fakeClock.Sleep(ctx, d)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.fire:
		c.Advance(d)
		return nil
	}
}

func hedgeHarness(t *testing.T, edit func(*Config)) (*harness, *hedgeClock) {
	var hc *hedgeClock
	h := newHarness(t, func(c *Config) {
		hc = &hedgeClock{fakeClock: c.Clock.(*fakeClock), fire: make(chan struct{})}
		c.Clock = hc
		c.Policy.HedgeDelay = hedgeDelay
		if edit != nil {
			edit(c)
		}
	})
	return h, hc
}

func TestHedgedRequests(t *testing.T) {
	errBad := errors.New("400")
	full := func() *Budget { return filledBudget(100) }
	tests := []struct {
		name   string
		budget *Budget
		// attempt n (1, 2, ...) with the test's controls.
		attempt      func(n int32, ctx context.Context, c *controls) error
		wantErr      error
		wantHedges   float64
		wantWon      float64 // hedges whose success decided
		wantLost     float64 // hedges still running when the round was decided
		wantOutcomes map[string]float64
		wantDecided  []bool // hedgeDecided calls
	}{
		{
			name: "an answer before the delay: no hedge",
			attempt: func(n int32, ctx context.Context, c *controls) error {
				return nil
			},
			wantOutcomes: map[string]float64{"success": 1},
		},
		{
			name:   "no answer by the delay: the hedge wins, the first is cancelled",
			budget: full(),
			attempt: func(n int32, ctx context.Context, c *controls) error {
				if n == 1 {
					close(c.fire)
					<-ctx.Done()
					return ctx.Err()
				}
				return nil
			},
			wantHedges:   1,
			wantWon:      1,
			wantOutcomes: map[string]float64{"success": 1, "cancelled": 1},
			wantDecided:  []bool{true},
		},
		{
			name:   "the first answers while the hedge runs: the hedge is abandoned",
			budget: full(),
			attempt: func(n int32, ctx context.Context, c *controls) error {
				if n == 1 {
					close(c.fire)
					<-c.hedgeRunning
					return nil
				}
				close(c.hedgeRunning)
				<-ctx.Done()
				return ctx.Err()
			},
			wantHedges:   1,
			wantLost:     1,
			wantOutcomes: map[string]float64{"success": 1, "cancelled": 1},
			wantDecided:  []bool{true},
		},
		{
			name:   "the first fails while the hedge runs: the hedge decides",
			budget: full(),
			attempt: func(n int32, ctx context.Context, c *controls) error {
				if n == 1 {
					close(c.fire)
					<-c.hedgeRunning
					return errBad // permanent, but the hedge is already out
				}
				close(c.hedgeRunning)
				<-c.firstCounted // so that the failure is seen first
				return nil
			},
			wantHedges:   1,
			wantWon:      1,
			wantOutcomes: map[string]float64{"success": 1, "permanent_error": 1},
			wantDecided:  []bool{true},
		},
		{
			name:   "both fail: the last failure decides, then retries go on",
			budget: full(),
			attempt: func(n int32, ctx context.Context, c *controls) error {
				switch n {
				case 1:
					close(c.fire)
					<-c.hedgeRunning
					return errTemp
				case 2:
					close(c.hedgeRunning)
					<-c.firstReturned
					return errTemp
				}
				return nil // the retry, after a backoff
			},
			wantHedges:   1,
			wantOutcomes: map[string]float64{"success": 1, "temporary_error": 2},
			wantDecided:  []bool{true},
		},
		{
			name:   "an empty budget sends no hedge",
			budget: NewBudget(BudgetConfig{}),
			attempt: func(n int32, ctx context.Context, c *controls) error {
				close(c.fire)
				<-c.decided
				return nil
			},
			wantOutcomes: map[string]float64{"success": 1},
			wantDecided:  []bool{false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &controls{hedgeRunning: make(chan struct{}), firstReturned: make(chan struct{}),
				firstCounted: make(chan struct{}), decided: make(chan struct{})}
			var decided []bool
			h, hc := hedgeHarness(t, func(cfg *Config) {
				cfg.Budget = tt.budget
				cfg.OnAttempt = func(a AttemptInfo) {
					if a.Attempt == 1 {
						close(c.firstCounted)
					}
				}
			})
			c.fire = hc.fire
			h.owner.hedgeDecided = func(sent bool) {
				decided = append(decided, sent)
				close(c.decided)
			}
			var n atomic.Int32
			err := h.owner.Do(context.Background(), Critical, func(ctx context.Context) error {
				i := n.Add(1)
				err := tt.attempt(i, ctx, c)
				if i == 1 {
					close(c.firstReturned)
				}
				return err
			})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("Do = %v, want %v", err, tt.wantErr)
			}
			if got := h.counter(t, h.m.hedges, "quote"); got != tt.wantHedges {
				t.Errorf("retry_hedges_total = %v, want %v", got, tt.wantHedges)
			}
			if got := h.counter(t, h.m.hedgesWon, "quote"); got != tt.wantWon {
				t.Errorf("retry_hedges_won_total = %v, want %v", got, tt.wantWon)
			}
			if got := h.counter(t, h.m.hedgesAbandoned, "quote"); got != tt.wantLost {
				t.Errorf("retry_hedges_abandoned_total = %v, want %v", got, tt.wantLost)
			}
			var attempts float64
			for _, o := range outcomeNames {
				attempts += h.attempts(t, o)
				if got := h.attempts(t, o); got != tt.wantOutcomes[o] {
					t.Errorf("attempts{%s} = %v, want %v", o, got, tt.wantOutcomes[o])
				}
			}
			if retries := h.counter(t, h.m.retries, "quote"); retries != attempts-1 {
				t.Errorf("retries = %v, want attempts-1 = %v", retries, attempts-1)
			}
			if len(decided) != len(tt.wantDecided) || (len(decided) > 0 && decided[0] != tt.wantDecided[0]) {
				t.Errorf("hedge decisions %v, want %v", decided, tt.wantDecided)
			}
		})
	}
}

type controls struct {
	fire          chan struct{}
	hedgeRunning  chan struct{}
	firstReturned chan struct{}
	firstCounted  chan struct{} // OnAttempt saw attempt 1
	decided       chan struct{}
}

// A hedge needs a free Limiter slot like any attempt.
func TestHedgeNeedsALimiterSlot(t *testing.T) {
	lim := NewLimiter(1, 0)
	h, hc := hedgeHarness(t, func(c *Config) { c.Limiter = lim })
	sent := make(chan bool, 1)
	h.owner.hedgeDecided = func(s bool) { sent <- s }
	err := h.owner.Do(context.Background(), Critical, func(context.Context) error {
		close(hc.fire)
		if <-sent {
			t.Error("a hedge was sent with the only slot taken")
		}
		return nil
	})
	if err != nil || lim.InUse() != 0 {
		t.Errorf("Do = %v, %d slots in use; want nil, 0", err, lim.InUse())
	}
}

// The caller's cancel ends a hedged round with both attempts running.
func TestHedgedRoundCancelled(t *testing.T) {
	h, hc := hedgeHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	returned := make(chan struct{}, 2)
	h.owner.abandonedReturned = func() { returned <- struct{}{} }
	err := h.owner.Do(ctx, Critical, func(actx context.Context) error {
		if n.Add(1) == 1 {
			close(hc.fire)
		} else {
			cancel()
		}
		<-actx.Done()
		return actx.Err()
	})
	<-returned
	<-returned
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("Do = %v, want ErrCancelled", err)
	}
	if got := h.attempts(t, "cancelled"); got != 2 {
		t.Errorf("attempts{cancelled} = %v, want 2", got)
	}
	// Both returned as soon as their ctx ended: not abandoned.
	if got := h.counter(t, h.m.abandoned, "quote"); got != 0 {
		t.Errorf("abandoned = %v, want 0", got)
	}
}

// HTTPClient hedges idempotent requests only.
func TestHTTPClientHedgesIdempotentRequestsOnly(t *testing.T) {
	tests := []struct {
		method     string
		wantServed int64
		wantHedges float64
	}{
		{http.MethodGet, 2, 1},
		{http.MethodPost, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			h, hc := hedgeHarness(t, func(c *Config) {
				c.Policy.PerAttemptTimeout = 5 * time.Second
				c.Policy.Deadline = 10 * time.Second
			})
			var served atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body) // the server notices a closed connection only after the body
				if served.Add(1) == 1 && r.Method == http.MethodGet {
					close(hc.fire)
					<-r.Context().Done() // slow: the hedge answers first
					return
				}
				_, _ = w.Write([]byte("ok"))
			}))
			defer srv.Close()
			req, _ := http.NewRequest(tt.method, srv.URL, strings.NewReader("{}"))
			resp, err := NewHTTPClient(h.owner, nil).Do(context.Background(), Critical, req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("got %v, %v", resp, err)
			}
			if served.Load() != tt.wantServed || h.counter(t, h.m.hedges, "quote") != tt.wantHedges {
				t.Errorf("served %d, hedges %v; want %d, %v", served.Load(), h.counter(t, h.m.hedges, "quote"), tt.wantServed, tt.wantHedges)
			}
		})
	}
}

// Both attempts ignore their ctx: Do still returns at the operation
// deadline, and their later successes are late.
func TestHedgedRoundAtTheDeadline(t *testing.T) {
	h, hc := hedgeHarness(t, func(c *Config) { c.Budget = filledBudget(100) })
	returned, counted := make(chan struct{}, 2), make(chan struct{}, 2)
	h.owner.abandonedReturned = func() { returned <- struct{}{} }
	h.owner.grace = ms
	h.owner.abandonCounted = func() { counted <- struct{}{} }
	release := make(chan struct{})
	var n atomic.Int32
	ctx := withFakeDeadline(context.Background(), h.clock.Now().Add(300*ms))
	err := h.owner.Do(ctx, Critical, func(context.Context) error {
		if n.Add(1) == 1 {
			close(hc.fire)
		}
		<-release // ignores its ctx
		return nil
	})
	<-counted
	<-counted
	close(release)
	<-returned
	<-returned
	if !errors.Is(err, ErrDeadlineExhausted) || n.Load() != 2 {
		t.Fatalf("Do = %v after %d attempts, want ErrDeadlineExhausted after 2", err, n.Load())
	}
	for _, c := range []struct {
		what string
		got  float64
	}{
		{"attempts{timeout}", h.attempts(t, "timeout")},
		{"abandoned", h.counter(t, h.m.abandoned, "quote")},
		{"late successes", h.counter(t, h.m.lateSuccesses, "quote")},
		{"hedges", h.counter(t, h.m.hedges, "quote") * 2},
	} {
		if c.got != 2 {
			t.Errorf("%s = %v, want 2", c.what, c.got)
		}
	}
}
