package retry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Regression tests for the defects found in review, one test per defect.

// provider503 is a provider that always answers with a documented
// temporary failure, counting the attempts that reach it.
type provider503 struct{ calls atomic.Int64 }

func (p *provider503) call(context.Context) error {
	p.calls.Add(1)
	return MarkTemporary(errors.New("503 from provider"), 0)
}

// Defect 1: an attempt that calls another Owner must not be retried by the
// outer one, whatever the inner result, the wrapping, or the outer's
// Classify: provider attempts never exceed the innermost MaxAttempts.
func TestNestedOwnersDoNotMultiplyRetries(t *testing.T) {
	full := func() *Budget { return filledBudget(1000) }
	tests := []struct {
		name          string
		innerBudget   *Budget
		wrap          func(error) error // what the outer attempt makes of the inner error
		outerClassify func(error) Class
		wantProvider  int64
		wantInnerRes  Result
	}{
		{name: "inner retries spent", innerBudget: full(), wantProvider: 3, wantInnerRes: ResultProviderError},
		{name: "inner budget empty", innerBudget: NewBudget(BudgetConfig{}), wantProvider: 1, wantInnerRes: ResultBudgetExhausted},
		{name: "re-marked temporary by the outer attempt", innerBudget: full(),
			wrap:         func(err error) error { return MarkTemporary(fmt.Errorf("quote: %w", err), 0) },
			wantProvider: 3, wantInnerRes: ResultProviderError},
		{name: "outer Classify says temporary", innerBudget: full(),
			outerClassify: func(error) Class { return Temporary },
			wantProvider:  3, wantInnerRes: ResultProviderError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := NewMetrics(reg)
			clock := newFakeClock()
			inner, err := New(Config{Dependency: "provider", Policy: DefaultPolicy(), Budget: tt.innerBudget,
				Metrics: m, Clock: clock, Rand: zeroRand})
			if err != nil {
				t.Fatal(err)
			}
			outer, err := New(Config{Dependency: "quote-service", Policy: DefaultPolicy(), Budget: full(),
				Metrics: m, Clock: clock, Rand: zeroRand, Classify: tt.outerClassify})
			if err != nil {
				t.Fatal(err)
			}
			var prov provider503
			outerAttempts := 0
			err = outer.Do(context.Background(), Critical, func(ctx context.Context) error {
				outerAttempts++
				err := inner.Do(ctx, Critical, prov.call)
				if tt.wrap != nil {
					err = tt.wrap(err)
				}
				return err
			})
			if got := prov.calls.Load(); got != tt.wantProvider {
				t.Errorf("provider attempts = %d, want %d (the innermost owner's)", got, tt.wantProvider)
			}
			if outerAttempts != 1 {
				t.Errorf("outer attempts = %d, want 1: an owner's result is final", outerAttempts)
			}
			var oe *Error
			if !errors.As(err, &oe) || oe.Result != ResultPermanentError || oe.Dependency != "quote-service" {
				t.Fatalf("err = %v, want the outer owner's permanent_error", err)
			}
			if !errors.Is(err, errorForResult(tt.wantInnerRes)) {
				t.Errorf("err = %v, want the inner %s still reachable", err, tt.wantInnerRes)
			}
			if got := testutilCounter(m.nested, "provider", "quote-service"); got != 1 {
				t.Errorf("retry_nested_operations_total = %v, want 1", got)
			}
			if got := testutilCounter(m.retries, "quote-service"); got != 0 {
				t.Errorf("outer retry_retries_total = %v, want 0", got)
			}
		})
	}
}

func errorForResult(r Result) error { return sentinels[r] }

func testutilCounter(vec *prometheus.CounterVec, labels ...string) float64 {
	return testutil.ToFloat64(vec.WithLabelValues(labels...))
}

// Defect 2: a Retry-After beyond Policy.MaxRetryAfter stops at once with
// the provider's error and says why; one within it is waited for in full.
func TestRetryAfterOverMaxRetryAfterStops(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter time.Duration
		wantResult Result
		wantSleeps []time.Duration
		wantCalls  int
	}{
		// A day: never slept, although the derived deadline would not stop it
		// before the check (3 x 300 ms + 2 x 5 s).
		{name: "a day", retryAfter: 24 * time.Hour, wantResult: ResultProviderError, wantCalls: 1},
		{name: "just over", retryAfter: DefaultMaxRetryAfter + time.Second, wantResult: ResultProviderError, wantCalls: 1},
		{name: "within", retryAfter: 2 * time.Second, wantResult: ResultSuccess,
			wantSleeps: []time.Duration{2 * time.Second}, wantCalls: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.Policy = Policy{MaxAttempts: 3, PerAttemptTimeout: 300 * ms}
				c.Rand = zeroRand
			})
			s := &script{clock: h.clock, steps: []step{{10 * ms, MarkTemporary(errors.New("503"), tt.retryAfter)}, {0, nil}}}
			err := h.owner.Do(context.Background(), Critical, s.attempt)
			if s.calls != tt.wantCalls {
				t.Errorf("attempts = %d, want %d", s.calls, tt.wantCalls)
			}
			if got := h.clock.Sleeps(); fmt.Sprint(got) != fmt.Sprint(tt.wantSleeps) {
				t.Errorf("slept %v, want %v", got, tt.wantSleeps)
			}
			if tt.wantResult == ResultSuccess {
				if err != nil {
					t.Fatalf("err = %v, want success", err)
				}
				return
			}
			var oe *Error
			if !errors.As(err, &oe) || oe.Result != tt.wantResult || oe.Err == nil {
				t.Fatalf("err = %v, want %s with the provider's error", err, tt.wantResult)
			}
			if !strings.Contains(oe.Reason, "MaxRetryAfter") || !strings.Contains(err.Error(), tt.retryAfter.String()) {
				t.Errorf("message %q does not say which wait was refused and why", err)
			}
		})
	}
}

// Defect 2 through HTTP: a real 503 with Retry-After: 86400 and no ctx
// deadline returns with one attempt instead of sleeping a day.
func TestHTTPRetryAfterOfADayIsNotSlept(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "86400")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	o, err := New(Config{Dependency: "pay", Policy: Policy{MaxAttempts: 3, PerAttemptTimeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	_, err = NewHTTPClient(o, nil).Do(context.Background(), Critical, req)
	if !errors.Is(err, ErrProviderError) || calls.Load() != 1 {
		t.Fatalf("err = %v after %d calls, want ErrProviderError after 1", err, calls.Load())
	}
	if !strings.Contains(err.Error(), "24h0m0s") {
		t.Errorf("err = %v, want the refused wait named", err)
	}
}

// Defect 3: a caller's cancel is its own attempt outcome, never a
// provider's permanent error.
func TestCallerCancelIsNotAProviderError(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := h.owner.Do(ctx, Critical, func(actx context.Context) error {
		cancel()
		<-actx.Done() // an honest attempt: it stops when its ctx does
		return actx.Err()
	})
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want ErrCancelled", err)
	}
	if got := h.attempts(t, "cancelled"); got != 1 {
		t.Errorf(`retry_attempts_total{outcome="cancelled"} = %v, want 1`, got)
	}
	if got := h.attempts(t, "permanent_error"); got != 0 {
		t.Errorf(`retry_attempts_total{outcome="permanent_error"} = %v, want 0`, got)
	}
}

// Defect 3: an attempt that ignores its ctx must not hold Do past the
// operation deadline or the caller's cancel; it finishes in the background
// with its slot held, and its success is late, never a success.
func TestAttemptIgnoringItsContextIsAbandoned(t *testing.T) {
	tests := []struct {
		name string
		// policy and how the caller stops waiting
		policy     Policy
		cancel     bool
		wantResult Result
		wantOut    string
	}{
		// The deadline is real time here (the attempt ctx's timer); the
		// attempt blocks until the test releases it after Do returned, so
		// no timing is asserted.
		{name: "operation deadline", policy: Policy{MaxAttempts: 3, Deadline: 20 * ms},
			wantResult: ResultDeadlineExhausted, wantOut: "timeout"},
		// Only the 5 ms per-attempt timeout passes first: Do waits on to the
		// 30 ms operation deadline and never starts a second attempt beside
		// the first.
		{name: "per-attempt timeout, then deadline", policy: Policy{MaxAttempts: 3, PerAttemptTimeout: 5 * ms, Deadline: 30 * ms},
			wantResult: ResultDeadlineExhausted, wantOut: "timeout"},
		{name: "caller cancel", policy: Policy{MaxAttempts: 3, Deadline: time.Hour}, cancel: true,
			wantResult: ResultCancelled, wantOut: "cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := NewMetrics(reg)
			lim := NewLimiter(4, 0)
			o, err := New(Config{Dependency: "quote", Policy: tt.policy, Limiter: lim, Metrics: m})
			if err != nil {
				t.Fatal(err)
			}
			accounted, counted := make(chan struct{}), make(chan struct{})
			o.abandonedReturned = func() { close(accounted) }
			o.grace = ms
			o.abandonCounted = func() { close(counted) }
			release, started := make(chan struct{}), make(chan struct{})
			calls := 0
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				go func() { <-started; cancel() }()
			}
			err = o.Do(ctx, Critical, func(context.Context) error {
				calls++
				close(started)
				<-release // ignores its ctx
				return nil
			})
			// Do has returned while the attempt still runs.
			var oe *Error
			if !errors.As(err, &oe) || oe.Result != tt.wantResult {
				t.Fatalf("err = %v, want %s", err, tt.wantResult)
			}
			if got := lim.InUse(); got != 1 {
				t.Errorf("slots in use after Do returned = %d, want 1: the abandoned attempt still loads the provider", got)
			}
			if got := testutilGauge(m.active, "quote"); got != 1 {
				t.Errorf("retry_active_calls = %v, want 1", got)
			}
			if got := testutilCounter(m.attempts, "quote", tt.wantOut); got != 1 {
				t.Errorf("retry_attempts_total{outcome=%q} = %v, want 1", tt.wantOut, got)
			}
			if got := testutilCounter(m.attempts, "quote", "success"); got != 0 {
				t.Errorf(`retry_attempts_total{outcome="success"} = %v, want 0`, got)
			}
			<-counted // still running past the grace: it ignores its ctx
			close(release)
			<-accounted
			if calls != 1 {
				t.Errorf("attempts = %d, want 1: never a second attempt beside a running one", calls)
			}
			if got := testutilCounter(m.lateSuccesses, "quote"); got != 1 {
				t.Errorf("retry_late_successes_total = %v, want 1", got)
			}
			if got := testutilCounter(m.abandoned, "quote"); got != 1 {
				t.Errorf("retry_abandoned_attempts_total = %v, want 1", got)
			}
			if got := lim.InUse(); got != 0 {
				t.Errorf("slots in use after the attempt returned = %d, want 0", got)
			}
			if got := testutilCounter(m.results, "quote", "critical", "success"); got != 0 {
				t.Errorf("success results = %v, want 0", got)
			}
		})
	}
}

// Defect 3: an attempt that honours its ctx is waited for through its
// per-attempt timeout and retried as before: no abandonment.
func TestHonestAttemptTimeoutsAreRetried(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	o, err := New(Config{Dependency: "quote", Metrics: m,
		Policy: Policy{MaxAttempts: 3, PerAttemptTimeout: 2 * ms, Deadline: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	err = o.Do(context.Background(), Critical, func(ctx context.Context) error {
		calls++
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, ErrProviderError) || calls != 3 {
		t.Fatalf("err = %v after %d attempts, want ErrProviderError after 3", err, calls)
	}
	if got := testutilCounter(m.attempts, "quote", "timeout"); got != 3 {
		t.Errorf(`retry_attempts_total{outcome="timeout"} = %v, want 3`, got)
	}
	if got := testutilCounter(m.abandoned, "quote"); got != 0 {
		t.Errorf("retry_abandoned_attempts_total = %v, want 0", got)
	}
}

// Defect 3: a success that returns after the operation deadline on the
// Owner's clock is late: the operation ended at the deadline.
func TestSuccessAfterTheDeadlineIsLate(t *testing.T) {
	h := newHarness(t, nil) // 900 ms cap, 50 ms reserve: 850 ms usable
	s := &script{clock: h.clock, steps: []step{{851 * ms, nil}}}
	err := h.owner.Do(context.Background(), Critical, s.attempt)
	if !errors.Is(err, ErrDeadlineExhausted) {
		t.Fatalf("err = %v, want ErrDeadlineExhausted", err)
	}
	if got := h.counter(t, h.m.lateSuccesses, "quote"); got != 1 {
		t.Errorf("retry_late_successes_total = %v, want 1", got)
	}
	if got := h.attempts(t, "success"); got != 0 {
		t.Errorf(`retry_attempts_total{outcome="success"} = %v, want 0`, got)
	}
}

// jumpClock is a fake clock whose every reading is step later than the
// previous one: time passes between any two decisions of Do, as it does
// on a starved machine while TryAcquire runs.
type jumpClock struct {
	fakeClock
	step   time.Duration
	onRead func(n int)
	reads  int
}

func (c *jumpClock) Now() time.Time {
	c.mu.Lock()
	c.reads++
	n := c.reads
	c.now = c.now.Add(c.step)
	t := c.now
	hook := c.onRead
	c.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return t
}

// Defect 4: time and ctx are looked at again after the slot is taken, so
// no attempt starts with less than MinAttemptTime left or a done ctx.
func TestAttemptNeverStartsWithExpiredContext(t *testing.T) {
	// Deadline 100 ms, MinAttemptTime 50 ms, 60 ms pass between readings:
	// the check before TryAcquire sees the whole 100 ms (the start's
	// reading, read 1), the one after it 40 ms (read 2).
	t.Run("deadline passes while acquiring", func(t *testing.T) {
		clock := &jumpClock{fakeClock: fakeClock{now: time.Now()}, step: 60 * ms}
		o, err := New(Config{Dependency: "quote", Clock: clock, Limiter: NewLimiter(1, 0),
			Policy: Policy{MaxAttempts: 1, Deadline: 100 * ms, MinAttemptTime: 50 * ms}})
		if err != nil {
			t.Fatal(err)
		}
		called := false
		err = o.Do(context.Background(), Critical, func(context.Context) error { called = true; return nil })
		if called || !errors.Is(err, ErrDeadlineExhausted) {
			t.Fatalf("attempt started = %v, err = %v; want no attempt and ErrDeadlineExhausted", called, err)
		}
		if n := o.limiter.InUse(); n != 0 {
			t.Errorf("slots held = %d, want 0", n)
		}
	})
	t.Run("caller cancels while acquiring", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clock := &jumpClock{fakeClock: fakeClock{now: time.Now()}, step: ms}
		clock.onRead = func(n int) {
			if n == 2 { // the reading right after TryAcquire
				cancel()
			}
		}
		o, err := New(Config{Dependency: "quote", Clock: clock, Limiter: NewLimiter(1, 0),
			Policy: Policy{MaxAttempts: 1, Deadline: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		called := false
		err = o.Do(ctx, Critical, func(context.Context) error { called = true; return nil })
		if called || !errors.Is(err, ErrCancelled) {
			t.Fatalf("attempt started = %v, err = %v; want no attempt and ErrCancelled", called, err)
		}
		if n := o.limiter.InUse(); n != 0 {
			t.Errorf("slots held = %d, want 0", n)
		}
	})
}

// Defect 5: New fills documented defaults or refuses; it never accepts a
// policy that could start a retry with microseconds left or run unbounded.
func TestNewFillsDefaultsOrRefusesPolicy(t *testing.T) {
	tests := []struct {
		name    string
		in      Policy
		want    Policy // zero when New must fail
		wantErr string
	}{
		{name: "nothing bounds it", in: Policy{MaxAttempts: 3}, wantErr: "needs a Deadline or a PerAttemptTimeout"},
		{name: "per-attempt only: deadline derived", in: Policy{MaxAttempts: 3, PerAttemptTimeout: 300 * ms},
			want: Policy{MaxAttempts: 3, PerAttemptTimeout: 300 * ms, Deadline: 900*ms + 2*DefaultMaxRetryAfter,
				MinAttemptTime: DefaultMinAttemptTime, MaxRetryAfter: DefaultMaxRetryAfter}},
		{name: "derived deadline counts backoff ceilings beyond MaxRetryAfter",
			in: Policy{MaxAttempts: 3, PerAttemptTimeout: 100 * ms, BackoffBase: 2 * time.Second, BackoffCap: 8 * time.Second, MaxRetryAfter: time.Second},
			want: Policy{MaxAttempts: 3, PerAttemptTimeout: 100 * ms, BackoffBase: 2 * time.Second, BackoffCap: 8 * time.Second,
				MaxRetryAfter: time.Second, Deadline: 300*ms + 2*time.Second + 4*time.Second, MinAttemptTime: 50 * ms}},
		{name: "short attempts get a short minimum", in: Policy{MaxAttempts: 2, PerAttemptTimeout: 20 * ms},
			want: Policy{MaxAttempts: 2, PerAttemptTimeout: 20 * ms, Deadline: 40*ms + DefaultMaxRetryAfter,
				MinAttemptTime: 10 * ms, MaxRetryAfter: DefaultMaxRetryAfter}},
		{name: "short deadline gets a short minimum", in: Policy{MaxAttempts: 2, Deadline: 60 * ms, DeadlineReserve: 20 * ms},
			want: Policy{MaxAttempts: 2, Deadline: 60 * ms, DeadlineReserve: 20 * ms, MinAttemptTime: 20 * ms, MaxRetryAfter: DefaultMaxRetryAfter}},
		{name: "minimum beyond the deadline", in: Policy{MaxAttempts: 2, Deadline: 100 * ms, MinAttemptTime: 200 * ms},
			wantErr: "no attempt could ever start"},
		{name: "huge MaxAttempts saturates", in: Policy{MaxAttempts: 1 << 40, PerAttemptTimeout: time.Hour},
			want: Policy{MaxAttempts: 1 << 40, PerAttemptTimeout: time.Hour, Deadline: 1<<63 - 1,
				MinAttemptTime: DefaultMinAttemptTime, MaxRetryAfter: DefaultMaxRetryAfter}},
		{name: "the seed's policy is kept", in: DefaultPolicy(), want: DefaultPolicy()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := New(Config{Dependency: "quote", Policy: tt.in})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New: err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Policy(); got != tt.want {
				t.Errorf("Policy() = %+v\nwant      %+v", got, tt.want)
			}
		})
	}
}

// Defect 5: with MinAttemptTime left zero, a retry is not started with
// microseconds left (it was: 10 µs).
func TestNoRetryWithMicrosecondsLeft(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Policy = Policy{MaxAttempts: 3, Deadline: 100 * ms}
		c.Rand = zeroRand
	})
	s := &script{clock: h.clock, steps: []step{{100*ms - 10*time.Microsecond, errTemp}, {0, nil}}}
	err := h.owner.Do(context.Background(), Critical, s.attempt)
	if !errors.Is(err, ErrDeadlineExhausted) || s.calls != 1 {
		t.Fatalf("err = %v after %d attempts, want ErrDeadlineExhausted after 1", err, s.calls)
	}
}

// Defect 1 for callers of DefaultClassify in their own Classify: another
// owner's result and a cancellation are permanent however they are marked.
func TestDefaultClassifyOwnerResultsAreFinal(t *testing.T) {
	inner := &Error{Dependency: "provider", Result: ResultProviderError, Attempts: 3, Err: errTemp}
	tests := []struct {
		name string
		err  error
		want Class
	}{
		{"owner result", inner, Permanent},
		{"owner result wrapped", fmt.Errorf("quote: %w", inner), Permanent},
		{"owner result re-marked temporary", MarkTemporary(inner, 0), Permanent},
		{"cancellation", fmt.Errorf("read: %w", context.Canceled), Permanent},
		{"cancellation marked temporary", MarkTemporary(context.Canceled, 0), Permanent},
		{"plain temporary", errTemp, Temporary},
		{"timeout", context.DeadlineExceeded, Temporary},
	}
	for _, tt := range tests {
		if got := DefaultClassify(tt.err); got != tt.want {
			t.Errorf("%s: DefaultClassify = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// retry_operation_attempts_total adds an operation's attempts when it
// ends, so attempts per admitted original can be counted at one moment
// (3 for an operation that tried three times, nothing for one
// shed before any attempt).
func TestOperationAttemptsCountedAtTheEnd(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Policy = Policy{MaxAttempts: 3, PerAttemptTimeout: 100 * ms}
		c.Rand = zeroRand
		c.Limiter = NewLimiter(1, 0)
	})
	s := &script{clock: h.clock, steps: []step{{ms, errTemp}, {ms, errTemp}, {ms, nil}}}
	if err := h.owner.Do(context.Background(), Critical, s.attempt); err != nil {
		t.Fatal(err)
	}
	if got := h.counter(t, h.m.operationAttempts, "quote"); got != 3 {
		t.Errorf("after 3 attempts: retry_operation_attempts_total = %v, want 3", got)
	}
	// A full limiter sheds the next one before any attempt.
	h.owner.limiter.TryAcquire(Critical)
	_ = h.owner.Do(context.Background(), Critical, s.attempt)
	h.owner.limiter.Release()
	if got := h.counter(t, h.m.operationAttempts, "quote"); got != 3 {
		t.Errorf("after a shed operation: %v, want still 3", got)
	}
}
