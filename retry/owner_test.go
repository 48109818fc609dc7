package retry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestAttemptTimeoutIsWhatIsLeft(t *testing.T) {
	tests := []struct {
		name       string
		ctxTimeout time.Duration // 0: caller's ctx has no deadline
		steps      []step
		// want attempt deadlines, relative to the operation start
		want []time.Duration
	}{
		{
			// Policy cap binds: op deadline = 900-50 = 850 ms. Attempts of
			// 300 ms each with ceiling jitter 25 ms, then 50 ms.
			name:  "policy cap",
			steps: []step{{300 * ms, context.DeadlineExceeded}},
			want:  []time.Duration{300 * ms, 625 * ms, 850 * ms},
		},
		{
			// Caller's deadline binds: 300-50 = 250 ms, less than the
			// per-attempt cap. The first attempt fails after 100 ms, sleeps
			// 25 ms, and the second gets the remaining 125 ms, not a fresh
			// 250 ms or 300 ms.
			name:       "caller deadline",
			ctxTimeout: 300 * ms,
			steps:      []step{{100 * ms, errTemp}, {0, nil}},
			want:       []time.Duration{250 * ms, 250 * ms},
		},
		{
			// No Deadline of its own: the derived one (3 x 300 ms + 2 x
			// 5 s) leaves every attempt its per-attempt cap.
			name:  "derived deadline",
			steps: []step{{10 * ms, errTemp}, {10 * ms, errTemp}, {0, nil}},
			// Starts at 0, 10+25 = 35, 35+10+50 = 95 ms.
			want: []time.Duration{300 * ms, 335 * ms, 395 * ms},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				if tt.name == "derived deadline" {
					c.Policy.Deadline, c.Policy.DeadlineReserve = 0, 0
				}
			})
			start := h.clock.Now()
			ctx := context.Background()
			if tt.ctxTimeout > 0 {
				ctx = withFakeDeadline(ctx, start.Add(tt.ctxTimeout))
			}
			s := &script{clock: h.clock, steps: tt.steps}
			_ = h.owner.Do(ctx, Critical, s.attempt)
			var got []time.Duration
			for _, d := range s.deadlines {
				got = append(got, d.Sub(start))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("attempt deadlines = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRetryAfterLongerThanRemainingStops(t *testing.T) {
	budget := filledBudget(100)
	h := newHarness(t, func(c *Config) { c.Budget = budget })
	s := &script{clock: h.clock, steps: []step{{10 * ms, MarkTemporary(errors.New("busy"), time.Second)}}}

	err := h.owner.Do(context.Background(), Critical, s.attempt)

	if !errors.Is(err, ErrDeadlineExhausted) {
		t.Fatalf("err = %v, want ErrDeadlineExhausted", err)
	}
	if s.calls != 1 {
		t.Errorf("attempts = %d, want 1", s.calls)
	}
	if got := h.clock.Sleeps(); len(got) != 0 {
		t.Errorf("slept %v; a Retry-After that cannot fit must not be slept, nor shortened", got)
	}
	if got := budget.Balance(); got != 101 {
		t.Errorf("budget balance = %d, want 101: no retry was paid for", got)
	}
	var rerr *Error
	if !errors.As(err, &rerr) || rerr.Attempts != 1 || rerr.Err == nil {
		t.Errorf("err = %#v, want *Error with Attempts 1 and the provider's error", err)
	}
}

func TestRetryAfterIsAFloor(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter time.Duration
		rand       func(int64) int64
		want       time.Duration
	}{
		{"retry-after above jitter", 100 * ms, maxRand, 100 * ms},
		{"jitter above retry-after", 10 * ms, maxRand, 25 * ms},
		{"zero jitter keeps retry-after", 100 * ms, zeroRand, 100 * ms},
		{"no retry-after", 0, zeroRand, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Rand = tt.rand })
			s := &script{clock: h.clock, steps: []step{{10 * ms, MarkTemporary(errors.New("busy"), tt.retryAfter)}, {0, nil}}}
			if err := h.owner.Do(context.Background(), Critical, s.attempt); err != nil {
				t.Fatal(err)
			}
			if tt.want == 0 {
				if got := h.clock.Sleeps(); len(got) != 0 {
					t.Errorf("slept %v, want no sleep for a zero delay", got)
				}
				return
			}
			if got := h.clock.Sleeps(); !slices.Equal(got, []time.Duration{tt.want}) {
				t.Errorf("slept %v, want [%v]", got, tt.want)
			}
		})
	}
}

func TestFullJitterBackoff(t *testing.T) {
	// Ceilings before retries 1..5: 25, 50, 100, 200, 200 ms (capped).
	ceilings := []time.Duration{25 * ms, 50 * ms, 100 * ms, 200 * ms, 200 * ms}
	tests := []struct {
		name string
		pick func(n int64) int64
		want func(ceiling time.Duration) time.Duration
	}{
		{"top of range", maxRand, func(c time.Duration) time.Duration { return c }},
		{"middle", func(n int64) int64 { return n / 2 }, func(c time.Duration) time.Duration { return (c + 1) / 2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bounds []int64
			h := newHarness(t, func(c *Config) {
				c.Policy.MaxAttempts = 6
				c.Policy.Deadline, c.Policy.DeadlineReserve = 0, 0
				c.Rand = func(n int64) int64 { bounds = append(bounds, n); return tt.pick(n) }
			})
			s := &script{clock: h.clock, steps: []step{{ms, errTemp}}}
			if err := h.owner.Do(context.Background(), Critical, s.attempt); !errors.Is(err, ErrProviderError) {
				t.Fatalf("err = %v, want ErrProviderError", err)
			}
			var wantBounds []int64
			var wantSleeps []time.Duration
			for _, c := range ceilings {
				wantBounds = append(wantBounds, int64(c)+1) // [0, ceiling] inclusive
				wantSleeps = append(wantSleeps, tt.want(c))
			}
			if !slices.Equal(bounds, wantBounds) {
				t.Errorf("Rand bounds = %v, want %v", bounds, wantBounds)
			}
			if got := h.clock.Sleeps(); !slices.Equal(got, wantSleeps) {
				t.Errorf("sleeps = %v, want %v", got, wantSleeps)
			}
			if got := histCount(t, h.m.backoff, "quote"); got != 5 {
				t.Errorf("retry_backoff_seconds count = %d, want 5", got)
			}
		})
	}
}

func TestBackoffCeilingDoesNotOverflow(t *testing.T) {
	p := Policy{BackoffBase: time.Hour}
	if got := p.backoffCeiling(200); got <= 0 {
		t.Fatalf("uncapped ceiling after 200 doublings = %v, want positive", got)
	}
	if got := (Policy{}).backoffCeiling(3); got != 0 {
		t.Fatalf("zero base ceiling = %v, want 0", got)
	}
}

func TestNoSlotHeldDuringBackoff(t *testing.T) {
	lim := NewLimiter(1, 0)
	h := newHarness(t, func(c *Config) { c.Limiter = lim })
	var checked int
	h.clock.onSleep = func(time.Duration) {
		checked++
		if n := lim.InUse(); n != 0 {
			t.Errorf("limiter holds %d slot(s) during backoff, want 0", n)
		}
		// The freed slot is really usable by other work meanwhile.
		if !lim.TryAcquire(Sheddable) {
			t.Error("slot not available to others during backoff")
		} else {
			lim.Release()
		}
	}
	s := &script{clock: h.clock, steps: []step{{10 * ms, errTemp}, {10 * ms, errTemp}, {0, nil}}}
	if err := h.owner.Do(context.Background(), Critical, s.attempt); err != nil {
		t.Fatal(err)
	}
	if checked != 2 {
		t.Errorf("backoff sleeps = %d, want 2", checked)
	}
	if n := lim.InUse(); n != 0 {
		t.Errorf("limiter holds %d slot(s) after Do, want 0", n)
	}
}

// timeoutError is a net.Error-style timeout.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestPermanentErrorsAreNeverRetried(t *testing.T) {
	cause := errors.New("400 bad postcode")
	tests := []struct {
		name     string
		err      error
		classify func(error) Class
		outcome  string
	}{
		{"unmarked error", cause, nil, "permanent_error"},
		{"marked permanent", MarkPermanent(cause), nil, "permanent_error"},
		{"timeout marked permanent", MarkPermanent(fmt.Errorf("charge: %w", timeoutError{})), nil, "timeout"},
		{"status 500", &StatusError{StatusCode: 500, Status: "500 Internal Server Error"}, nil, "permanent_error"},
		{"custom classifier", MarkTemporary(cause, 0), func(error) Class { return Permanent }, "permanent_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			budget := NewBudget(BudgetConfig{})
			for range 100 {
				budget.RecordOriginal()
			}
			h := newHarness(t, func(c *Config) { c.Classify = tt.classify; c.Budget = budget })
			s := &script{clock: h.clock, steps: []step{{ms, tt.err}}}
			err := h.owner.Do(context.Background(), Critical, s.attempt)
			if s.calls != 1 {
				t.Errorf("attempts = %d, want 1", s.calls)
			}
			if !errors.Is(err, ErrPermanentError) || !errors.Is(err, tt.err) {
				t.Errorf("err = %v, want ErrPermanentError wrapping the attempt's error", err)
			}
			if got := h.attempts(t, tt.outcome); got != 1 {
				t.Errorf("retry_attempts_total{outcome=%q} = %v, want 1", tt.outcome, got)
			}
			if got := h.counter(t, h.m.retries, "quote"); got != 0 {
				t.Errorf("retry_retries_total = %v, want 0", got)
			}
			if len(h.clock.Sleeps()) != 0 || budget.Balance() != 101 {
				t.Errorf("slept %v, balance %d: a permanent error must cost no backoff and no budget", h.clock.Sleeps(), budget.Balance())
			}
		})
	}
}

func TestEveryResultIncrementsOnlyItsOwnCounter(t *testing.T) {
	tests := []struct {
		want  Result
		class string // retry_request_duration_seconds result_class
		setup func(c *Config)
		ctx   func(h *harness) (context.Context, context.CancelFunc)
		steps []step
	}{
		{want: ResultSuccess, class: "success", steps: []step{{ms, nil}}},
		{
			want: ResultCapacityRejected, class: "fast_failure",
			setup: func(c *Config) {
				c.Limiter = NewLimiter(1, 0)
				c.Limiter.TryAcquire(Critical) // someone else holds the only slot
			},
			steps: []step{{ms, nil}},
		},
		{
			want: ResultBudgetExhausted, class: "failure",
			setup: func(c *Config) { c.Budget = NewBudget(BudgetConfig{}) }, // empty
			steps: []step{{ms, errTemp}},
		},
		{
			want: ResultDeadlineExhausted, class: "fast_failure",
			ctx: func(h *harness) (context.Context, context.CancelFunc) {
				// 60 ms left minus the 50 ms reserve is under MinAttemptTime.
				return withFakeDeadline(context.Background(), h.clock.Now().Add(60*ms)), func() {}
			},
			steps: []step{{ms, nil}},
		},
		{want: ResultProviderError, class: "failure", steps: []step{{ms, errTemp}}},
		{want: ResultPermanentError, class: "failure", steps: []step{{ms, errors.New("404")}}},
		{
			want: ResultCancelled, class: "fast_failure",
			ctx: func(*harness) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			},
			steps: []step{{ms, nil}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.want.String(), func(t *testing.T) {
			h := newHarness(t, tt.setup)
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.ctx != nil {
				ctx, cancel = tt.ctx(h)
			}
			defer cancel()
			s := &script{clock: h.clock, steps: tt.steps}

			err := h.owner.Do(ctx, Sheddable, s.attempt)

			for r := range Result(numResults) {
				for _, pri := range []Priority{Sheddable, Critical} {
					want := 0.0
					if r == tt.want && pri == Sheddable {
						want = 1
					}
					if got := h.result(t, pri, r); got != want {
						t.Errorf("retry_results_total{priority=%q,result=%q} = %v, want %v", pri, r, got, want)
					}
				}
				if r == ResultSuccess {
					continue
				}
				if got, want := errors.Is(err, sentinels[r]), r == tt.want; got != want {
					t.Errorf("errors.Is(err, %v) = %v, want %v (err: %v)", sentinels[r], got, want, err)
				}
			}
			if (err == nil) != (tt.want == ResultSuccess) {
				t.Errorf("err = %v for result %v", err, tt.want)
			}
			var rerr *Error
			if err != nil && (!errors.As(err, &rerr) || rerr.Result != tt.want) {
				t.Errorf("errors.As(*Error).Result = %v, want %v", rerr, tt.want)
			}
			if got := h.counter(t, h.m.originals, "quote", "sheddable"); got != 1 {
				t.Errorf("retry_originals_total = %v, want 1", got)
			}
			for _, c := range resultClassNames {
				want := uint64(0)
				if c == tt.class {
					want = 1
				}
				if got := histCount(t, h.m.requestDuration, "quote", c); got != want {
					t.Errorf("retry_request_duration_seconds{result_class=%q} count = %d, want %d", c, got, want)
				}
			}
		})
	}
}

func TestCancelledResultKeepsContextError(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := h.owner.Do(ctx, Critical, func(actx context.Context) error {
		cancel()
		return actx.Err()
	})
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrCancelled and context.Canceled", err)
	}
	if got := h.result(t, Critical, ResultCancelled); got != 1 {
		t.Errorf("cancelled results = %v, want 1", got)
	}
}

func TestCallerDeadlinePassedIsDeadlineExhausted(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	err := h.owner.Do(ctx, Critical, func(context.Context) error { return nil })
	if !errors.Is(err, ErrDeadlineExhausted) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrDeadlineExhausted and context.DeadlineExceeded", err)
	}
}

func TestRetryAccountingAndRescue(t *testing.T) {
	h := newHarness(t, nil)
	s := &script{clock: h.clock, steps: []step{
		{300 * ms, fmt.Errorf("read: %w", os.ErrDeadlineExceeded)}, // a timeout
		{10 * ms, errTemp},
		{5 * ms, nil},
	}}
	if err := h.owner.Do(context.Background(), Critical, s.attempt); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"timeout": 1, "temporary_error": 1, "success": 1, "permanent_error": 0}
	for outcome, w := range want {
		if got := h.attempts(t, outcome); got != w {
			t.Errorf("retry_attempts_total{outcome=%q} = %v, want %v", outcome, got, w)
		}
		if got := histCount(t, h.m.attemptDuration, "quote", outcome); got != uint64(w) {
			t.Errorf("retry_attempt_duration_seconds{outcome=%q} count = %d, want %v", outcome, got, w)
		}
	}
	if got := h.counter(t, h.m.retries, "quote"); got != 2 {
		t.Errorf("retry_retries_total = %v, want 2", got)
	}
	if got := h.counter(t, h.m.rescued, "quote"); got != 1 {
		t.Errorf("retry_rescued_total = %v, want 1", got)
	}
}

func TestUnpaidRetryIsRefunded(t *testing.T) {
	tests := []struct {
		name string
		edit func(h *harness, lim *Limiter, cancel context.CancelFunc)
		want Result
	}{
		{
			name: "cancelled during backoff",
			edit: func(h *harness, _ *Limiter, cancel context.CancelFunc) {
				h.clock.onSleep = func(time.Duration) { cancel() }
			},
			want: ResultCancelled,
		},
		{
			name: "capacity rejected after backoff",
			edit: func(h *harness, lim *Limiter, _ context.CancelFunc) {
				h.clock.onSleep = func(time.Duration) { lim.TryAcquire(Critical) }
			},
			want: ResultCapacityRejected,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			budget := NewBudget(BudgetConfig{})
			for range 100 {
				budget.RecordOriginal()
			}
			lim := NewLimiter(1, 0)
			h := newHarness(t, func(c *Config) { c.Budget = budget; c.Limiter = lim })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tt.edit(h, lim, cancel)
			s := &script{clock: h.clock, steps: []step{{ms, errTemp}}}
			err := h.owner.Do(ctx, Critical, s.attempt)
			var rerr *Error
			if !errors.As(err, &rerr) || rerr.Result != tt.want {
				t.Fatalf("err = %v, want result %v", err, tt.want)
			}
			if got := budget.Balance(); got != 101 {
				t.Errorf("balance = %d, want 101: the retry was paid for but not made", got)
			}
			if got := h.counter(t, h.m.retries, "quote"); got != 0 {
				t.Errorf("retry_retries_total = %v, want 0", got)
			}
		})
	}
}

func TestPanickingAttemptReleasesSlot(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			lim := NewLimiter(1, 0)
			h := newHarness(t, func(c *Config) { c.Limiter = lim; c.InlineAttempts = inline })
			var got any
			func() {
				defer func() { got = recover() }()
				_ = h.owner.Do(context.Background(), Critical, func(context.Context) error { panic("boom") })
			}()
			if got != "boom" {
				t.Fatalf("Do's goroutine recovered %v, want the attempt's panic", got)
			}
			if n := lim.InUse(); n != 0 {
				t.Fatalf("slots held after panic = %d, want 0", n)
			}
			if got := testutilGauge(h.m.active, "quote"); got != 0 {
				t.Fatalf("retry_active_calls after panic = %v, want 0", got)
			}
			// The call was made: one attempt, a permanent error, and the
			// operation has its result.
			for _, outcome := range outcomeNames {
				want := 0.0
				if outcome == "permanent_error" {
					want = 1
				}
				if got := h.attempts(t, outcome); got != want {
					t.Errorf("retry_attempts_total{outcome=%q} = %v after a panic, want %v", outcome, got, want)
				}
			}
			if got := h.result(t, Critical, ResultPermanentError); got != 1 {
				t.Errorf("permanent_error results = %v, want 1", got)
			}
		})
	}
}

// An attempt that calls t.FailNow (runtime.Goexit) ends Do's goroutine
// too, as it would inline, instead of leaving Do waiting forever.
func TestGoexitInAttemptEndsDosGoroutine(t *testing.T) {
	h := newHarness(t, nil)
	returned, exited := make(chan bool, 1), make(chan struct{})
	go func() {
		defer close(exited)
		_ = h.owner.Do(context.Background(), Critical, func(context.Context) error {
			runtime.Goexit()
			return nil
		})
		returned <- true
	}()
	<-exited
	select {
	case <-returned:
		t.Fatal("Do returned after its attempt called runtime.Goexit")
	default:
	}
}

func TestBaselineConfigurationWithoutLimiterBudgetOrMetrics(t *testing.T) {
	// The sim's baseline: 3 attempts, 300 ms per attempt, no admission
	// limit, no retry budget, no backoff of our own.
	clk := newFakeClock()
	o, err := New(Config{
		Dependency: "baseline",
		Policy:     Policy{MaxAttempts: 3, PerAttemptTimeout: 300 * ms},
		Clock:      clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &script{clock: clk, steps: []step{{300 * ms, context.DeadlineExceeded}}}
	err = o.Do(context.Background(), Sheddable, s.attempt)
	if !errors.Is(err, ErrProviderError) || s.calls != 3 {
		t.Fatalf("err = %v after %d attempts, want ErrProviderError after 3", err, s.calls)
	}
	if len(clk.Sleeps()) != 0 {
		t.Errorf("slept %v with no backoff configured", clk.Sleeps())
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	valid := DefaultPolicy()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no dependency", Config{Policy: valid}},
		{"zero attempts", Config{Dependency: "d"}},
		{"negative timeout", Config{Dependency: "d", Policy: Policy{MaxAttempts: 1, PerAttemptTimeout: -1}}},
		{"reserve eats deadline", Config{Dependency: "d", Policy: Policy{MaxAttempts: 1, Deadline: ms, DeadlineReserve: ms}}},
		{"cap below base", Config{Dependency: "d", Policy: Policy{MaxAttempts: 1, BackoffBase: 2 * ms, BackoffCap: ms}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil {
				t.Error("New succeeded, want an error")
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	err := &Error{Dependency: "quote", Result: ResultBudgetExhausted, Attempts: 1, Err: errors.New("503")}
	if got, want := err.Error(), "retry quote: retry budget exhausted after 1 attempt(s): 503"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
