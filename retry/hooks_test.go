package retry

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestDoValue(t *testing.T) {
	errBad := errors.New("400 unknown postcode")
	tests := []struct {
		name    string
		steps   []func() (int, error)
		want    int
		wantErr error
	}{
		{"first try", []func() (int, error){func() (int, error) { return 42, nil }}, 42, nil},
		{"value of the retry that succeeded", []func() (int, error){
			func() (int, error) { return 7, errTemp }, // a value with an error is dropped
			func() (int, error) { return 42, nil },
		}, 42, nil},
		{"permanent error gives the zero value", []func() (int, error){func() (int, error) { return 9, errBad }}, 0, ErrPermanentError},
	}
	for _, inline := range []bool{false, true} {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				h := newHarness(t, func(c *Config) { c.InlineAttempts = inline })
				n := 0
				got, err := DoValue(context.Background(), h.owner, Critical, func(context.Context) (int, error) {
					n++
					return tt.steps[min(n, len(tt.steps))-1]()
				})
				if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
					t.Errorf("DoValue = %d, %v; want %d, %v", got, err, tt.want, tt.wantErr)
				}
			})
		}
	}
}

func TestDoValueLateSuccessIsNotTheResult(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	got, err := DoValue(ctx, h.owner, Critical, func(context.Context) (string, error) {
		cancel()  // the caller gives up while the attempt runs
		<-release // and the attempt ignores it
		return "late", nil
	})
	close(release)
	if got != "" || !errors.Is(err, ErrCancelled) {
		t.Errorf("DoValue = %q, %v; want \"\", ErrCancelled", got, err)
	}
}

func TestHooks(t *testing.T) {
	type call struct {
		kind    string // "attempt" or "retry"
		attempt int
		outcome string
		delay   time.Duration
		err     bool
	}
	tests := []struct {
		name  string
		steps []step
		want  []call
	}{
		{"success", []step{{10 * ms, nil}}, []call{{"attempt", 1, "success", 0, false}}},
		{"retry then success", []step{{10 * ms, errTemp}, {20 * ms, nil}}, []call{
			{"attempt", 1, "temporary_error", 0, true},
			{"retry", 2, "", 25 * ms, true}, // maxRand: the full ceiling
			{"attempt", 2, "success", 0, false},
		}},
		{"timeouts to the last attempt", []step{{10 * ms, context.DeadlineExceeded}}, []call{
			{"attempt", 1, "timeout", 0, true},
			{"retry", 2, "", 25 * ms, true},
			{"attempt", 2, "timeout", 0, true},
			{"retry", 3, "", 50 * ms, true},
			{"attempt", 3, "timeout", 0, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []call
			var durations []time.Duration
			h := newHarness(t, func(c *Config) {
				c.OnAttempt = func(a AttemptInfo) {
					if a.Dependency != "quote" || a.Priority != Critical {
						t.Errorf("AttemptInfo = %+v", a)
					}
					got = append(got, call{"attempt", a.Attempt, a.Outcome, 0, a.Err != nil})
					durations = append(durations, a.Duration)
				}
				c.OnRetry = func(r RetryInfo) {
					got = append(got, call{"retry", r.Attempt, "", r.Delay, r.Err != nil})
				}
			})
			s := &script{clock: h.clock, steps: tt.steps}
			_ = h.owner.Do(context.Background(), Critical, s.attempt)
			if !slices.Equal(got, tt.want) {
				t.Errorf("hook calls = %+v\nwant %+v", got, tt.want)
			}
			for i, d := range durations {
				if want := tt.steps[min(i, len(tt.steps)-1)].d; d != want {
					t.Errorf("attempt %d Duration = %v, want %v", i+1, d, want)
				}
			}
		})
	}
}

// The no-failure path stays within the budget of 6 allocations,
// with the hooks nil and with them set.
func TestNoFailurePathAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	const budget = 6
	for _, tt := range []struct {
		name   string
		inline bool
		hooks  bool
	}{
		{"goroutine", false, false},
		{"inline", true, false},
		{"goroutine with hooks", false, true},
		{"inline with hooks", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Dependency: "quote", Policy: DefaultPolicy(), Limiter: NewLimiter(64, 8),
				Budget: NewBudget(BudgetConfig{}), InlineAttempts: tt.inline}
			var seen int
			if tt.hooks {
				cfg.OnAttempt = func(AttemptInfo) { seen++ }
				cfg.OnRetry = func(RetryInfo) {}
			}
			o, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ok := func(context.Context) error { return nil }
			got := testing.AllocsPerRun(200, func() {
				if err := o.Do(context.Background(), Critical, ok); err != nil {
					t.Fatal(err)
				}
			})
			if got > budget {
				t.Errorf("%v allocations per Do, want at most %d", got, budget)
			}
			if tt.hooks && seen == 0 {
				t.Error("OnAttempt never called")
			}
		})
	}
}
