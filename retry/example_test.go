package retry_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/retrytop/retrytop/retry"
)

// The fetchQuote owner from the seed article: one Owner per dependency,
// sharing a process-wide Limiter and Budget, metrics on the caller's
// registry.
func ExampleOwner_Do() {
	reg := prometheus.NewRegistry()
	budget := retry.NewBudget(retry.BudgetConfig{}) // 1 credit earned, 10 per retry, cap 200
	for range 50 {
		budget.RecordOriginal() // earlier healthy traffic has filled the budget a little
	}
	quotes, err := retry.New(retry.Config{
		Dependency: "shipping-quote",
		Policy:     retry.DefaultPolicy(),
		Limiter:    retry.NewLimiter(4, 1), // 4 slots, 1 kept for critical work
		Budget:     budget,
		Metrics:    retry.NewMetrics(reg),
		Rand:       func(int64) int64 { return 0 }, // no jitter sleep in this example
	})
	if err != nil {
		panic(err)
	}

	calls := 0
	fetch := func(ctx context.Context) error {
		calls++
		if calls == 1 {
			// A documented temporary failure; 0 = no Retry-After.
			return retry.MarkTemporary(errors.New("503 from provider"), 0)
		}
		return nil
	}
	err = quotes.Do(context.Background(), retry.Critical, fetch)
	fmt.Println("err:", err, "attempts:", calls)

	err = quotes.Do(context.Background(), retry.Sheddable, func(context.Context) error {
		return errors.New("400 unknown postcode")
	})
	fmt.Println(errors.Is(err, retry.ErrPermanentError))
	fmt.Println(err)
	// Output:
	// err: <nil> attempts: 2
	// true
	// retry shipping-quote: permanent error after 1 attempt(s): 400 unknown postcode
}
