package retry

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkDoSuccess measures one successful operation through the whole
// owner: deadline, limiter, budget, attempt context and every metric, with
// the real clock and random source. The attempt itself does nothing.
func BenchmarkDoSuccess(b *testing.B) {
	o, err := New(Config{
		Dependency: "quote",
		Policy:     DefaultPolicy(),
		Limiter:    NewLimiter(64, 8),
		Budget:     NewBudget(BudgetConfig{}),
		Metrics:    NewMetrics(prometheus.NewRegistry()),
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
