package retry

import (
	"fmt"
	"sync/atomic"
)

// BudgetConfig sets a Budget's integer credit rules. A zero field takes the
// seed's default: each original earns 1 credit, a retry costs 10, the
// balance is capped at 200 (at most 20 stored retries). Integer credits keep
// the ratio exact without floating point: 10 credits are one retry token.
type BudgetConfig struct {
	EarnPerOriginal int64 // credits earned by each original operation (default 1)
	CostPerRetry    int64 // credits one retry spends (default 10)
	Cap             int64 // balance ceiling in credits (default 200)
}

// Default budget rules (see BudgetConfig).
const (
	DefaultEarnPerOriginal = 1
	DefaultCostPerRetry    = 10
	DefaultBudgetCap       = 200
)

// Budget is a retry budget shared by every caller of one dependency: retries
// across all operations may add at most EarnPerOriginal/CostPerRetry of the
// original traffic (10% by default), plus the stored balance as a burst. It
// starts empty. All methods are lock-free and safe for concurrent use; the
// balance never goes below zero or above Cap.
//
// A Budget is process-scoped. It must outlive single requests and be shared
// by all operations it governs: a Budget made per request starts empty, earns
// one credit and never allows a retry. It limits this process's retries, not
// the cluster's; N replicas each allow their own share.
//
// The zero value is not usable; use NewBudget.
type Budget struct {
	earn, cost, cap int64
	credits         atomic.Int64
}

// NewBudget returns an empty budget with the given rules; zero fields take
// the defaults. Negative fields, and a Cap below CostPerRetry (a budget
// that could never pay for a retry), panic: configuration bugs should fail
// at start-up.
func NewBudget(cfg BudgetConfig) *Budget {
	if cfg.EarnPerOriginal < 0 || cfg.CostPerRetry < 0 || cfg.Cap < 0 {
		panic("retry: BudgetConfig fields must not be negative")
	}
	b := &Budget{earn: cfg.EarnPerOriginal, cost: cfg.CostPerRetry, cap: cfg.Cap}
	if b.earn == 0 {
		b.earn = DefaultEarnPerOriginal
	}
	if b.cost == 0 {
		b.cost = DefaultCostPerRetry
	}
	if b.cap == 0 {
		b.cap = DefaultBudgetCap
	}
	if b.cap < b.cost {
		panic(fmt.Sprintf("retry: BudgetConfig.Cap %d is below BudgetConfig.CostPerRetry %d: the budget could never pay for a retry", b.cap, b.cost))
	}
	return b
}

// RecordOriginal credits one original operation, up to the cap.
func (b *Budget) RecordOriginal() { b.add(b.earn) }

// TryConsume spends the cost of one retry if the balance covers it, and
// reports whether it did. The check and the spend are one atomic step, so
// racing callers can never spend more than was earned.
func (b *Budget) TryConsume() bool {
	for {
		cur := b.credits.Load()
		if cur < b.cost {
			return false
		}
		if b.credits.CompareAndSwap(cur, cur-b.cost) {
			return true
		}
	}
}

// refund returns a retry's cost when the retry was paid for but not made
// (the Owner pays before the backoff sleep, so a caller is never made to
// wait for a retry the budget would refuse).
func (b *Budget) refund() { b.add(b.cost) }

func (b *Budget) add(n int64) {
	for {
		cur := b.credits.Load()
		if cur >= b.cap {
			return // full: no write keeps the steady state contention-free
		}
		next := min(cur+n, b.cap)
		if b.credits.CompareAndSwap(cur, next) {
			return
		}
	}
}

// Balance returns the credits held now.
func (b *Budget) Balance() int64 { return b.credits.Load() }

// Retries returns how many retries the balance would allow now
// (Balance / CostPerRetry); this is the retry_budget_balance gauge.
func (b *Budget) Retries() int64 { return b.credits.Load() / b.cost }

// Config returns the rules in force, defaults filled in.
func (b *Budget) Config() BudgetConfig {
	return BudgetConfig{EarnPerOriginal: b.earn, CostPerRetry: b.cost, Cap: b.cap}
}
