package retry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestBudgetFromEmpty100OriginalsAllowAtMost10Retries(t *testing.T) {
	b := NewBudget(BudgetConfig{})
	for range 100 {
		b.RecordOriginal()
	}
	granted := 0
	for range 1000 {
		if b.TryConsume() {
			granted++
		}
	}
	if granted != 10 {
		t.Errorf("retries granted = %d, want 10", granted)
	}
	if b.Balance() != 0 {
		t.Errorf("balance = %d, want 0", b.Balance())
	}
}

func TestBudgetThroughOwner100OriginalsAllowAtMost10Retries(t *testing.T) {
	// Every operation fails once, temporarily, and would succeed on retry.
	h := newHarness(t, func(c *Config) { c.Budget = NewBudget(BudgetConfig{}); c.Rand = zeroRand })
	for range 100 {
		first := true
		_ = h.owner.Do(context.Background(), Critical, func(context.Context) error {
			if first {
				first = false
				return errTemp
			}
			return nil
		})
	}
	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"retry_originals_total", h.counter(t, h.m.originals, "quote", "critical"), 100},
		{"retry_retries_total", h.counter(t, h.m.retries, "quote"), 10},
		{"retry_rescued_total", h.counter(t, h.m.rescued, "quote"), 10},
		{"retry_budget_denied_total", h.counter(t, h.m.budgetDenied, "quote"), 90},
		{"results success", h.result(t, Critical, ResultSuccess), 10},
		{"results budget_exhausted", h.result(t, Critical, ResultBudgetExhausted), 90},
		{"retry_attempts_total", h.attempts(t, "success") + h.attempts(t, "temporary_error"), 110},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestBudgetBalanceNeverExceedsCap(t *testing.T) {
	tests := []struct {
		name        string
		cfg         BudgetConfig
		wantCredits int64
		wantRetries int64
	}{
		{"defaults", BudgetConfig{}, 200, 20},
		{"custom cap", BudgetConfig{EarnPerOriginal: 3, CostPerRetry: 10, Cap: 50}, 50, 5},
		{"earn overshoots cap", BudgetConfig{EarnPerOriginal: 7, CostPerRetry: 10, Cap: 20}, 20, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBudget(tt.cfg)
			for i := range 10_000 {
				b.RecordOriginal()
				if got := b.Balance(); got > b.Config().Cap {
					t.Fatalf("after %d originals balance = %d, above cap %d", i+1, got, b.Config().Cap)
				}
			}
			b.refund()
			if b.Balance() != tt.wantCredits || b.Retries() != tt.wantRetries {
				t.Errorf("balance = %d credits / %d retries, want %d / %d",
					b.Balance(), b.Retries(), tt.wantCredits, tt.wantRetries)
			}
		})
	}
}

func TestBudgetDefaults(t *testing.T) {
	want := BudgetConfig{EarnPerOriginal: 1, CostPerRetry: 10, Cap: 200}
	if got := NewBudget(BudgetConfig{}).Config(); got != want {
		t.Errorf("Config() = %+v, want %+v", got, want)
	}
}

func TestBudgetRacingNeverSpendsMoreThanEarned(t *testing.T) {
	tests := []struct {
		name string
		cfg  BudgetConfig
	}{
		// An unreachable cap makes the ledger exact: spent + balance = earned.
		{"no clipping", BudgetConfig{Cap: 1 << 40}},
		{"default cap", BudgetConfig{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const workers, perWorker = 32, 2000
			b := NewBudget(tt.cfg)
			cfg := b.Config()
			var granted atomic.Int64
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for range perWorker {
						b.RecordOriginal()
						// Several spenders per original keep the balance
						// near zero, where a non-atomic check-then-spend
						// would overdraw.
						for range 3 {
							if b.TryConsume() {
								granted.Add(1)
							}
						}
					}
				})
			}
			wg.Wait()
			earned := int64(workers*perWorker) * cfg.EarnPerOriginal
			spent := granted.Load() * cfg.CostPerRetry
			bal := b.Balance()
			if bal < 0 || bal > cfg.Cap {
				t.Fatalf("balance = %d, want within [0, %d]", bal, cfg.Cap)
			}
			if spent+bal > earned {
				t.Fatalf("spent %d + balance %d > earned %d", spent, bal, earned)
			}
			if tt.cfg.Cap != 0 && spent+bal != earned {
				t.Fatalf("spent %d + balance %d != earned %d without clipping", spent, bal, earned)
			}
		})
	}
}

func TestBudgetSharedByConcurrentOwnerCalls(t *testing.T) {
	b := NewBudget(BudgetConfig{})
	o, err := New(Config{
		Dependency: "quote",
		Policy:     Policy{MaxAttempts: 3, Deadline: time.Hour},
		Budget:     b,
		Clock:      newFakeClock(),
		Rand:       zeroRand,
	})
	if err != nil {
		t.Fatal(err)
	}
	const ops = 2000
	var attempts atomic.Int64
	var wg sync.WaitGroup
	for range ops {
		wg.Go(func() {
			_ = o.Do(context.Background(), Critical, func(context.Context) error {
				attempts.Add(1)
				return errTemp
			})
		})
	}
	wg.Wait()
	retries := attempts.Load() - ops
	if retries*10 > ops {
		t.Fatalf("%d retries for %d originals; budget allows at most %d", retries, ops, ops/10)
	}
	if !errors.Is(o.Do(context.Background(), Critical, func(context.Context) error { return errTemp }), ErrBudgetExhausted) {
		t.Error("an empty budget must refuse the next retry")
	}
}
