package retry_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/retrytop/retrytop/retry"
)

// statusServer answers each request with the next of codes (the last one
// repeating) and counts the requests and their bodies.
type statusServer struct {
	*httptest.Server
	mu     sync.Mutex
	n      int
	bodies []string
}

func newStatusServer(t *testing.T, codes ...int) *statusServer {
	s := &statusServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		code := codes[min(s.n, len(codes)-1)]
		s.n++
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *statusServer) served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func filled(n int) *retry.Budget {
	b := retry.NewBudget(retry.BudgetConfig{})
	for range n {
		b.RecordOriginal()
	}
	return b
}

// A retrying RoundTripper under retry.Transport (here this package's own,
// under HTTPClient) can send a bodyless request again: it gets no body,
// not an empty one it cannot rewind, and every attempt it counts reached
// the server.
func TestStackedRoundTrippersResendBodylessRequests(t *testing.T) {
	srv := newStatusServer(t, 503, 503, 200)
	reg := prometheus.NewRegistry()
	clock := retry.NewFakeClock()
	inner := newOwner(t, "provider", reg, clock, nil)
	outer := newOwner(t, "gateway", reg, clock, nil)
	client := retry.NewHTTPClient(outer, retry.NewRoundTripper(inner, nil))
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := client.Do(context.Background(), retry.Critical, req)
	if err != nil {
		t.Fatalf("Do = %v, want the inner owner's third attempt to succeed", err)
	}
	_ = resp.Body.Close()
	if got := srv.served(); got != 3 {
		t.Errorf("server saw %d requests, want 3", got)
	}
	if got := metric(t, reg, "retry_attempts_total", "dependency", "provider"); got != float64(srv.served()) {
		t.Errorf("inner attempts = %v, server saw %d: every attempt counted must reach the network", got, srv.served())
	}
}

// A body that cannot be sent again means one attempt, decided before the
// first: no retry, no backoff, no budget spent, and the not_retryable fate.
func TestBodyThatCannotBeResentIsOneAttempt(t *testing.T) {
	srv := newStatusServer(t, 503)
	reg := prometheus.NewRegistry()
	budget := filled(100)
	var retries atomic.Int64
	o := newOwner(t, "payments", reg, retry.NewFakeClock(), func(c *retry.Config) {
		c.Budget = budget
		c.OnRetry = func(retry.RetryInfo) { retries.Add(1) }
	})
	before := budget.Balance()
	req, _ := http.NewRequest(http.MethodPut, srv.URL, io.NopCloser(strings.NewReader("x"))) // no GetBody
	_, err := retry.NewHTTPClient(o, nil).Do(context.Background(), retry.Critical, req)
	if !errors.Is(err, retry.ErrNotRetryable) {
		t.Fatalf("err = %v, want ErrNotRetryable", err)
	}
	if got := srv.served(); got != 1 {
		t.Errorf("server saw %d requests, want 1", got)
	}
	for _, c := range []struct {
		what string
		got  float64
		want float64
	}{
		{"attempts", metric(t, reg, "retry_attempts_total"), 1},
		{"retries", metric(t, reg, "retry_retries_total"), 0},
		{"OnRetry calls", float64(retries.Load()), 0},
		{"backoff samples", float64(histCount(t, reg, "retry_backoff_seconds")), 0},
		{"budget spent", float64(before + 1 - budget.Balance()), 0}, // the original earned 1
		{"not_retryable results", metric(t, reg, "retry_results_total", "result", "not_retryable"), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

// A request is retried only when it is safe to repeat: an idempotent
// method, an idempotency key, or the caller's explicit opt-in.
func TestNonIdempotentRequestsAreNotRetried(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		header     string
		opts       []retry.HTTPOption
		wantServed int
		wantErr    error
	}{
		{"POST", http.MethodPost, "", nil, 1, retry.ErrNotRetryable},
		{"PATCH", http.MethodPatch, "", nil, 1, retry.ErrNotRetryable},
		{"POST with Idempotency-Key", http.MethodPost, "Idempotency-Key", nil, 3, retry.ErrProviderError},
		{"POST with X-Idempotency-Key", http.MethodPost, "X-Idempotency-Key", nil, 3, retry.ErrProviderError},
		{"POST with WithNonIdempotentRetries", http.MethodPost, "", []retry.HTTPOption{retry.WithNonIdempotentRetries()}, 3, retry.ErrProviderError},
		{"PUT", http.MethodPut, "", nil, 3, retry.ErrProviderError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newStatusServer(t, 503)
			reg := prometheus.NewRegistry()
			o := newOwner(t, "payments", reg, retry.NewFakeClock(), nil)
			req, _ := http.NewRequest(tt.method, srv.URL, strings.NewReader("charge $10"))
			if tt.header != "" {
				req.Header.Set(tt.header, "order-42")
			}
			_, err := retry.NewHTTPClient(o, nil, tt.opts...).Do(context.Background(), retry.Critical, req)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got := srv.served(); got != tt.wantServed {
				t.Errorf("server saw %d requests (%q delivered %d times), want %d", got, "charge $10", got, tt.wantServed)
			}
			wantFate := 0.0
			if tt.wantErr == retry.ErrNotRetryable {
				wantFate = 1
			}
			if got := metric(t, reg, "retry_results_total", "result", "not_retryable"); got != wantFate {
				t.Errorf("not_retryable results = %v, want %v", got, wantFate)
			}
		})
	}
}

// panicHook collects the panics an Owner hands to Config.OnPanic.
type panicHook struct {
	ch chan *retry.PanicError
}

func (h *panicHook) on(p *retry.PanicError) { h.ch <- p }

// An attempt that panics after Do stopped waiting for it (abandoned at the
// deadline, or a hedge's loser) does not kill the process: the panic is
// recovered, counted and handed to OnPanic.
func TestPanicNobodyWaitsForIsRecovered(t *testing.T) {
	t.Run("abandoned at the deadline", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		hook := &panicHook{ch: make(chan *retry.PanicError, 1)}
		o := newOwner(t, "quote", reg, nil, func(c *retry.Config) {
			c.Policy = retry.Policy{MaxAttempts: 1, Deadline: 20 * time.Millisecond}
			c.OnPanic = hook.on
		})
		release := make(chan struct{})
		err := o.Do(context.Background(), retry.Critical, func(context.Context) error {
			<-release // ignores its ctx
			panic("late boom")
		})
		if !errors.Is(err, retry.ErrDeadlineExhausted) {
			t.Fatalf("Do = %v, want ErrDeadlineExhausted", err)
		}
		close(release)
		p := <-hook.ch
		if p.Value != "late boom" || !bytes.Contains(p.Stack, []byte("panic")) || p.Dependency != "quote" || p.Attempt != 1 {
			t.Errorf("OnPanic got %+v, want the attempt's panic and stack", p)
		}
		if got := metric(t, reg, "retry_attempt_panics_total"); got != 1 {
			t.Errorf("retry_attempt_panics_total = %v, want 1", got)
		}
	})
	t.Run("hedge loser", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		hook := &panicHook{ch: make(chan *retry.PanicError, 1)}
		clock := retry.NewHedgeClock()
		o := newOwner(t, "quote", reg, clock, func(c *retry.Config) {
			c.Policy.HedgeDelay = hedgeAfter
			c.Budget = filled(100)
			c.OnPanic = hook.on
		})
		release := make(chan struct{})
		var n atomic.Int32
		err := o.Do(context.Background(), retry.Critical, func(ctx context.Context) error {
			if n.Add(1) == 1 {
				clock.Fire()
				<-release // ignores the cancel
				panic("loser boom")
			}
			return nil // the hedge wins
		})
		if err != nil {
			t.Fatalf("Do = %v, want the hedge's success", err)
		}
		close(release)
		if p := <-hook.ch; p.Value != "loser boom" {
			t.Errorf("OnPanic got %v, want the loser's panic", p.Value)
		}
	})
	t.Run("default logs the stack", func(t *testing.T) {
		var buf syncBuffer
		log.SetOutput(&buf)
		defer log.SetOutput(io.Discard)
		reg := prometheus.NewRegistry()
		o := newOwner(t, "quote", reg, nil, func(c *retry.Config) {
			c.Policy = retry.Policy{MaxAttempts: 1, Deadline: 20 * time.Millisecond}
		})
		release, done := make(chan struct{}), make(chan struct{})
		_ = o.Do(context.Background(), retry.Critical, func(context.Context) error {
			<-release
			defer close(done)
			panic("logged boom")
		})
		close(release)
		<-done
		for !strings.Contains(buf.String(), "goroutine") { // the log line follows the recover
			time.Sleep(time.Millisecond)
		}
		if s := buf.String(); !strings.Contains(s, "logged boom") {
			t.Errorf("log = %q, want the panic and its stack", s)
		}
	})
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A panic Do waits for is re-raised in Do's goroutine, after the attempt
// and the operation are counted: results stay equal to originals.
func TestPanicDoWaitsForIsReraisedAndCounted(t *testing.T) {
	for _, inline := range []bool{false, true} {
		reg := prometheus.NewRegistry()
		o := newOwner(t, "quote", reg, retry.NewFakeClock(), func(c *retry.Config) { c.InlineAttempts = inline })
		var got any
		func() {
			defer func() { got = recover() }()
			_ = o.Do(context.Background(), retry.Critical, func(context.Context) error { panic("boom") })
		}()
		if got != "boom" {
			t.Fatalf("inline=%v: recovered %v, want the attempt's panic", inline, got)
		}
		originals, results := metric(t, reg, "retry_originals_total"), metric(t, reg, "retry_results_total")
		if originals != 1 || results != originals {
			t.Errorf("inline=%v: originals %v, results %v; want 1 and 1", inline, originals, results)
		}
		if got := metric(t, reg, "retry_attempts_total", "outcome", "permanent_error"); got != 1 {
			t.Errorf("inline=%v: permanent_error attempts = %v, want 1 (the call was made)", inline, got)
		}
	}
}

// stepClock is a fake clock whose backoff sleeps run a hook first (to
// cancel, take the slot, or let time pass), as the cases need.
type stepClock struct {
	*retry.FakeClock
	onSleep func(ctx context.Context, d time.Duration) error
}

func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.onSleep != nil {
		if err := c.onSleep(ctx, d); err != nil {
			return err
		}
	}
	return c.FakeClock.Sleep(ctx, d)
}

// OnRetry and retry_retries_total count the retries made, nothing else: a
// retry paid for and then stopped by a cancel, a full limiter or the
// deadline is neither.
func TestOnRetryCountsRetriesMade(t *testing.T) {
	tests := []struct {
		name    string
		onSleep func(lim *retry.Limiter, cancel context.CancelFunc, clock *retry.FakeClock) error
		wantErr error
	}{
		{"cancelled during the backoff", func(_ *retry.Limiter, cancel context.CancelFunc, _ *retry.FakeClock) error {
			cancel()
			return context.Canceled
		}, retry.ErrCancelled},
		{"limiter full after the backoff", func(lim *retry.Limiter, _ context.CancelFunc, _ *retry.FakeClock) error {
			lim.TryAcquire(retry.Critical) // someone else takes the only slot
			return nil
		}, retry.ErrCapacityRejected},
		{"deadline passed during the backoff", func(_ *retry.Limiter, _ context.CancelFunc, clock *retry.FakeClock) error {
			clock.Advance(time.Second) // a late wake-up
			return nil
		}, retry.ErrDeadlineExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			lim := retry.NewLimiter(1, 0)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			clock := &stepClock{FakeClock: retry.NewFakeClock()}
			clock.onSleep = func(context.Context, time.Duration) error { return tt.onSleep(lim, cancel, clock.FakeClock) }
			var onRetry atomic.Int64
			o := newOwner(t, "quote", reg, clock, func(c *retry.Config) {
				c.Limiter = lim
				c.Budget = filled(100)
				c.Rand = func(n int64) int64 { return n - 1 } // a backoff to sleep
				c.OnRetry = func(retry.RetryInfo) { onRetry.Add(1) }
			})
			var p provider
			err := o.Do(ctx, retry.Critical, p.call)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Do = %v, want %v", err, tt.wantErr)
			}
			retries := metric(t, reg, "retry_retries_total")
			if float64(onRetry.Load()) != retries || retries != float64(p.calls.Load()-1) {
				t.Errorf("OnRetry calls %d, retry_retries_total %v, provider calls %d: want calls-1 of each",
					onRetry.Load(), retries, p.calls.Load())
			}
		})
	}
}

// retry_backoff_seconds records the time slept: a 2 s Retry-After cut
// short by the caller's cancel after 100 ms records 100 ms.
func TestBackoffRecordsTheTimeSlept(t *testing.T) {
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := &stepClock{FakeClock: retry.NewFakeClock()}
	clock.onSleep = func(context.Context, time.Duration) error {
		clock.Advance(100 * time.Millisecond)
		cancel()
		return context.Canceled
	}
	o := newOwner(t, "quote", reg, clock, func(c *retry.Config) {
		c.Policy.Deadline = 10 * time.Second
	})
	err := o.Do(ctx, retry.Critical, func(context.Context) error {
		return retry.MarkTemporary(errors.New("429"), 2*time.Second)
	})
	if !errors.Is(err, retry.ErrCancelled) {
		t.Fatalf("Do = %v, want ErrCancelled", err)
	}
	if got := metric(t, reg, "retry_backoff_seconds"); got != 0.1 {
		t.Errorf("retry_backoff_seconds sum = %v, want 0.1 (the part slept)", got)
	}
}

// retry_abandoned_attempts_total counts attempts that ignore their ctx,
// not those that return as soon as it ends.
func TestAbandonedCountsOnlyAttemptsIgnoringTheirContext(t *testing.T) {
	const n = 100
	reg := prometheus.NewRegistry()
	lim := retry.NewLimiter(n, 0)
	o := newOwner(t, "quote", reg, nil, func(c *retry.Config) {
		c.Limiter = lim
		c.Policy.Deadline = time.Hour
		c.Policy.PerAttemptTimeout = time.Hour
	})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			_ = o.Do(ctx, retry.Critical, func(actx context.Context) error {
				cancel()
				<-actx.Done() // honours its ctx
				return actx.Err()
			})
		}()
	}
	wg.Wait()
	waitFor(t, func() bool { return lim.InUse() == 0 })
	if got := metric(t, reg, "retry_abandoned_attempts_total"); got != 0 {
		t.Errorf("abandoned = %v of %d attempts that returned on their ctx's end, want 0", got, n)
	}
	if got := metric(t, reg, "retry_attempts_total", "outcome", "cancelled"); got != n {
		t.Errorf("cancelled attempts = %v, want %d", got, n)
	}

	// One that ignores it is abandoned.
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	_ = o.Do(ctx, retry.Critical, func(context.Context) error {
		cancel()
		<-release
		return nil
	})
	waitFor(t, func() bool { return metric(t, reg, "retry_abandoned_attempts_total") == 1 })
	close(release)
	waitFor(t, func() bool { return lim.InUse() == 0 })
}

// waitFor polls cond until it holds, failing after a generous bound.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
	}
}

// Configuration that can never work is refused, naming the fields.
func TestConfigTrapsAreRefused(t *testing.T) {
	tests := []struct {
		name   string
		policy retry.Policy
		fields []string
	}{
		{"MinAttemptTime above PerAttemptTimeout",
			retry.Policy{MaxAttempts: 3, PerAttemptTimeout: 100 * time.Millisecond, MinAttemptTime: 200 * time.Millisecond, Deadline: time.Second},
			[]string{"MinAttemptTime", "PerAttemptTimeout"}},
		{"HedgeDelay above Deadline",
			retry.Policy{MaxAttempts: 3, Deadline: time.Second, HedgeDelay: 2 * time.Second},
			[]string{"HedgeDelay", "Deadline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := retry.New(retry.Config{Dependency: "quote", Policy: tt.policy})
			if err == nil {
				t.Fatal("New accepted the policy")
			}
			for _, f := range tt.fields {
				if !strings.Contains(err.Error(), "Policy."+f) {
					t.Errorf("error %q does not name Policy.%s", err, f)
				}
			}
		})
	}
	t.Run("budget Cap below the retry cost", func(t *testing.T) {
		defer func() {
			r := recover()
			s, _ := r.(string)
			if !strings.Contains(s, "BudgetConfig.Cap") || !strings.Contains(s, "BudgetConfig.CostPerRetry") {
				t.Errorf("NewBudget panicked with %v, want a message naming Cap and CostPerRetry", r)
			}
		}()
		retry.NewBudget(retry.BudgetConfig{Cap: 5})
	})
}

var errQuotaResetting = errors.New("quota resetting")

// ClassifyWith adds rules and keeps the defaults.
func TestClassifyWithExtendsTheDefaults(t *testing.T) {
	classify := retry.ClassifyWith(func(err error) (retry.Class, bool) {
		if errors.Is(err, errQuotaResetting) {
			return retry.Temporary, true
		}
		return 0, false
	})
	for _, tt := range []struct {
		name string
		err  error
		want retry.Class
	}{
		{"extra rule", errQuotaResetting, retry.Temporary},
		{"marked temporary (default)", retry.MarkTemporary(errors.New("503"), 0), retry.Temporary},
		{"timeout (default)", context.DeadlineExceeded, retry.Temporary},
		{"marked permanent (default)", retry.MarkPermanent(errors.New("400")), retry.Permanent},
		{"unknown (default)", errors.New("boom"), retry.Permanent},
	} {
		if got := classify(tt.err); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The set of retryable HTTP statuses is configurable.
func TestRetryableStatuses(t *testing.T) {
	for _, tt := range []struct {
		code       int
		wantServed int
	}{
		{502, 3}, {504, 3}, {503, 3}, {500, 1}, {429, 1},
	} {
		srv := newStatusServer(t, tt.code)
		o := newOwner(t, "quote", prometheus.NewRegistry(), retry.NewFakeClock(), nil)
		client := retry.NewHTTPClient(o, nil, retry.WithRetryableStatuses(502, 503, 504))
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		if _, err := client.Do(context.Background(), retry.Critical, req); err == nil {
			t.Fatalf("%d: Do succeeded", tt.code)
		}
		if got := srv.served(); got != tt.wantServed {
			t.Errorf("%d: server saw %d requests, want %d", tt.code, got, tt.wantServed)
		}
	}
}
