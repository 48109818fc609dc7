package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

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

// An SDK that takes an *http.Client gets the owner through its transport;
// the priority travels in the request's context.
func ExampleRoundTripper() {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable) // overloaded: retried by the owner
			return
		}
		fmt.Fprint(w, "quote: 4.20")
	}))
	defer srv.Close()

	owner, err := retry.New(retry.Config{
		Dependency: "shipping-quote",
		Policy:     retry.DefaultPolicy(),
		Rand:       func(int64) int64 { return 0 }, // no jitter sleep in this example
	})
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: retry.NewRoundTripper(owner, nil, retry.WithMaxBodyBytes(1<<20))}

	ctx := retry.WithPriority(context.Background(), retry.Critical)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body), "after", calls, "attempts")
	// Output: 200 quote: 4.20 after 2 attempts
}

// DoValue returns the value of the attempt that succeeded; OnAttempt and
// OnRetry see every attempt and every retry decision, e.g. for logs.
func ExampleDoValue() {
	quotes, err := retry.New(retry.Config{
		Dependency: "shipping-quote",
		Policy:     retry.DefaultPolicy(),
		Rand:       func(int64) int64 { return 0 }, // no jitter sleep in this example
		OnAttempt: func(a retry.AttemptInfo) {
			fmt.Printf("attempt %d: %s\n", a.Attempt, a.Outcome)
		},
		OnRetry: func(r retry.RetryInfo) {
			fmt.Printf("retry %d after %v: %v\n", r.Attempt, r.Delay, r.Err)
		},
	})
	if err != nil {
		panic(err)
	}
	calls := 0
	price, err := retry.DoValue(context.Background(), quotes, retry.Critical, func(ctx context.Context) (float64, error) {
		calls++
		if calls == 1 {
			return 0, retry.MarkTemporary(errors.New("503 from provider"), 0)
		}
		return 4.20, nil
	})
	fmt.Println(price, err)
	// Output:
	// attempt 1: temporary_error
	// retry 2 after 0s: 503 from provider
	// attempt 2: success
	// 4.2 <nil>
}

// The provider's side: DeadlineHandler bounds each request by the time its
// caller has left, ShedHandler refuses work it has no room for, at once
// and with Retry-After. The caller's owner propagates its deadline and
// priority, and backs off for the Retry-After.
func ExampleShedHandler() {
	reg := prometheus.NewRegistry()
	sm := retry.NewServerMetrics(reg)
	lim := retry.NewLimiter(2, 1)   // 2 requests at once, 1 kept for critical work
	lim.TryAcquire(retry.Sheddable) // another request holds the sheddable slot
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, hasDeadline := r.Context().Deadline()
		fmt.Fprintf(w, "deadline propagated: %v", hasDeadline)
	})
	srv := httptest.NewServer(&retry.DeadlineHandler{
		Max:     2 * time.Second, // a trust boundary: no caller buys more
		Metrics: sm,
		Next:    &retry.ShedHandler{Limiter: lim, Metrics: sm, Next: work},
	})
	defer srv.Close()

	owner, err := retry.New(retry.Config{Dependency: "checkout", Policy: retry.DefaultPolicy()})
	if err != nil {
		panic(err)
	}
	client := retry.NewHTTPClient(owner, nil, retry.WithDeadlinePropagation(), retry.WithPriorityHeader())
	for _, p := range []retry.Priority{retry.Critical, retry.Sheddable} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := client.Do(context.Background(), p, req)
		if err != nil {
			fmt.Println(p, "->", err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		fmt.Println(p, "->", resp.StatusCode, string(body))
	}
	// Output:
	// critical -> 200 deadline propagated: true
	// sheddable -> retry checkout: deadline exhausted after 1 attempt(s): http status 503 Service Unavailable (retry after 1s)
}

// Hedging: when the first attempt has not answered after HedgeDelay, a
// second one is sent beside it; the first success wins and the other is
// cancelled. The hedge is paid from the same budget and limiter.
func ExamplePolicy_hedgeDelay() {
	policy := retry.DefaultPolicy()
	policy.HedgeDelay = 20 * time.Millisecond // about the provider's p95
	budget := retry.NewBudget(retry.BudgetConfig{})
	for range 100 {
		budget.RecordOriginal()
	}
	reg := prometheus.NewRegistry()
	owner, err := retry.New(retry.Config{
		Dependency: "catalog",
		Policy:     policy,
		Limiter:    retry.NewLimiter(4, 1),
		Budget:     budget,
		Metrics:    retry.NewMetrics(reg),
		OnAttempt: func(a retry.AttemptInfo) {
			fmt.Printf("attempt %d: %s\n", a.Attempt, a.Outcome)
		},
	})
	if err != nil {
		panic(err)
	}
	var calls atomic.Int32
	item, err := retry.DoValue(context.Background(), owner, retry.Critical, func(ctx context.Context) (string, error) {
		if calls.Add(1) == 1 {
			<-ctx.Done() // a slow replica: never answers before the hedge
			return "", ctx.Err()
		}
		return "item 42", nil
	})
	fmt.Println(item, err)
	// Output:
	// attempt 1: cancelled
	// attempt 2: success
	// item 42 <nil>
}

// The remaining time travels between hops in grpc-timeout's shape,
// rounded down so the next hop never thinks it has more time than it has.
func ExampleEncodeTimeout() {
	for _, d := range []time.Duration{250 * time.Millisecond, 1500 * time.Microsecond, 36 * time.Hour} {
		v := retry.EncodeTimeout(d)
		back, _ := retry.ParseTimeout(v)
		fmt.Println(v, back)
	}
	// Output:
	// 250m 250ms
	// 1m 1ms
	// 129600S 36h0m0s
}

// ClassifyWith adds a rule of the provider's own to the default
// classification instead of replacing it.
func ExampleClassifyWith() {
	errQuotaResetting := errors.New("quota resetting")
	classify := retry.ClassifyWith(func(err error) (retry.Class, bool) {
		if errors.Is(err, errQuotaResetting) {
			return retry.Temporary, true
		}
		return 0, false // no opinion: the defaults decide
	})
	fmt.Println(classify(errQuotaResetting))
	fmt.Println(classify(retry.MarkTemporary(errors.New("503"), 0)))
	fmt.Println(classify(errors.New("400 unknown postcode")))
	// Output:
	// temporary
	// temporary
	// permanent
}

// A service whose own owner gave up answers 503 with
// HeaderRetriesExhausted (DeadlineHandler adds it), and the caller's owner
// does not retry on top: the provider sees 3 calls, not 9.
func ExampleHeaderRetriesExhausted() {
	var providerCalls atomic.Int32
	provider, err := retry.New(retry.Config{Dependency: "provider", Policy: retry.DefaultPolicy(),
		Rand: func(int64) int64 { return 0 }})
	if err != nil {
		panic(err)
	}
	service := httptest.NewServer(&retry.DeadlineHandler{Next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := provider.Do(r.Context(), retry.Critical, func(context.Context) error {
			providerCalls.Add(1)
			return retry.MarkTemporary(errors.New("503 from provider"), 0)
		})
		if err != nil {
			http.Error(w, "provider unavailable", http.StatusServiceUnavailable)
		}
	})})
	defer service.Close()

	caller, err := retry.New(retry.Config{Dependency: "service", Policy: retry.DefaultPolicy()})
	if err != nil {
		panic(err)
	}
	req, _ := http.NewRequest(http.MethodGet, service.URL, nil)
	_, err = retry.NewHTTPClient(caller, nil).Do(context.Background(), retry.Critical, req)
	var se *retry.StatusError
	fmt.Println(errors.As(err, &se) && se.Exhausted, providerCalls.Load())
	fmt.Println(err)
	// Output:
	// true 3
	// retry service: permanent error after 1 attempt(s): http status 503 Service Unavailable
}
