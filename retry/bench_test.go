package retry

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkDoSuccess measures one successful operation through the whole
// owner: deadline, limiter, budget, attempt context and every metric, with
// the real clock and random source. The attempt itself does nothing.
func BenchmarkDoSuccess(b *testing.B) { benchDoSuccess(b, false) }

// BenchmarkDoSuccessInline is BenchmarkDoSuccess with InlineAttempts, the
// way HTTPClient runs: no goroutine handoff per attempt.
func BenchmarkDoSuccessInline(b *testing.B) { benchDoSuccess(b, true) }

func benchDoSuccess(b *testing.B, inline bool) {
	o, err := New(Config{
		Dependency:     "quote",
		Policy:         DefaultPolicy(),
		Limiter:        NewLimiter(64, 8),
		Budget:         NewBudget(BudgetConfig{}),
		Metrics:        NewMetrics(prometheus.NewRegistry()),
		InlineAttempts: inline,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := o.Do(ctx, Critical, ok); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnchorTimeoutCall is the anchor the owner's cost is quoted
// against: what a caller without any owner pays to bound one call, a
// context.WithTimeout around it.
func BenchmarkAnchorTimeoutCall(b *testing.B) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		c, cancel := context.WithTimeout(ctx, time.Second)
		_ = ok(c)
		cancel()
	}
}

// BenchmarkAnchorGoroutineCall is the anchor for the handoff Do pays so
// that it can return at the deadline: one goroutine per call and a wait
// for it, with nothing else.
func BenchmarkAnchorGoroutineCall(b *testing.B) {
	ok := func(context.Context) error { return nil }
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		done := make(chan error)
		go func() { done <- ok(ctx) }()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoSuccessParallel is the same under contention on the shared
// limiter, budget and metric children.
func BenchmarkDoSuccessParallel(b *testing.B) {
	o, err := New(Config{
		Dependency: "quote",
		Policy:     DefaultPolicy(),
		Limiter:    NewLimiter(1<<20, 8),
		Budget:     NewBudget(BudgetConfig{}),
		Metrics:    NewMetrics(prometheus.NewRegistry()),
	})
	if err != nil {
		b.Fatal(err)
	}
	ok := func(context.Context) error { return nil }
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if err := o.Do(ctx, Critical, ok); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
