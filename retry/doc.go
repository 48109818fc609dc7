// Package retry is an instrumented retry owner: the single place that
// retries calls to one dependency, bounded by one operation deadline, a
// non-blocking admission limiter, a shared retry budget and full-jitter
// backoff, and that emits the metric contract retrytop reads
// (docs/metrics.md).
//
// It follows the fetchQuote owner of "When Retries Make Things Worse"
// (shared/seeds/000_*.txt) and the load-shedding notes (004_*.txt). It
// depends only on the standard library and prometheus/client_golang.
//
// # Use
//
// Create one Owner per dependency at start-up and keep it for the life of
// the process, with the Limiter and Budget it shares:
//
//	reg := prometheus.NewRegistry()
//	metrics := retry.NewMetrics(reg) // one per registry, many dependencies
//	quotes, err := retry.New(retry.Config{
//		Dependency: "shipping-quote",
//		Policy:     retry.DefaultPolicy(),
//		Limiter:    retry.NewLimiter(4, 1),              // 4 slots, 1 for Critical
//		Budget:     retry.NewBudget(retry.BudgetConfig{}), // 1 earned, 10 per retry, cap 200
//		Metrics:    metrics,
//	})
//	...
//	err = quotes.Do(ctx, retry.Critical, func(ctx context.Context) error {
//		return client.Fetch(ctx, postcode) // must honour ctx; no retries inside
//	})
//	switch {
//	case errors.Is(err, retry.ErrCapacityRejected): // shed locally: show the agreed fallback
//	case errors.Is(err, retry.ErrBudgetExhausted):  // provider failing too often to retry
//	...
//	}
//
// DoValue is Do for attempts that return a value. Config.OnAttempt and
// Config.OnRetry are hooks for logs and traces, called on Do's goroutine
// once per attempt counted and per retry made; nil hooks cost nothing.
// Config.Classify may extend the defaults with ClassifyWith.
//
// An attempt reports a documented temporary failure with MarkTemporary
// (optionally with the provider's Retry-After) and anything it must not
// retry with MarkPermanent; unmarked errors are permanent unless they are
// timeouts (DefaultClassify), or Config.Classify decides. For HTTP,
// HTTPClient does all of this; RoundTripper does the same under any
// *http.Client (an SDK's), with the priority from the request's context
// (WithPriority); both read a successful body within the attempt, up to
// WithMaxBodyBytes (DefaultMaxBodyBytes, else ErrBodyTooLarge). Transport
// alone sends each request once and reports connection pool wait.
//
// Limiter, Budget and Metrics may be nil: a nil Limiter admits everything, a
// nil Budget lets Policy.MaxAttempts alone bound retries, nil Metrics are
// kept unregistered. The seed experiment's baseline is therefore
// Config{Policy: Policy{MaxAttempts: 3, PerAttemptTimeout: 300 *
// time.Millisecond}} with nothing else; New derives its deadline and least
// useful attempt time (see Policy).
//
// # The rules
//
// Deadline: min(caller's ctx deadline, now+Policy.Deadline) minus
// Policy.DeadlineReserve, fixed when Do starts. Every operation has one:
// New derives Policy.Deadline when it is zero, and refuses a policy that
// nothing bounds. Each attempt's ctx expires at min(now+PerAttemptTimeout,
// that deadline): a retry gets what is left, never a fresh budget. No
// attempt starts with less than Policy.MinAttemptTime left, checked again
// after the admission slot is taken. Do returns at the deadline or on the
// caller's cancel even if the attempt ignores its ctx: the attempt is
// abandoned and finishes in the background, holding its slot; its success,
// if it comes, is late (retry_late_successes_total), never the operation's.
//
// Admission: Limiter.TryAcquire before each attempt, never waiting; refused
// means ErrCapacityRejected at once. Critical work may use reserved slots,
// so Sheddable work is refused first. The slot is released when the attempt
// returns, before any backoff sleep, and taken again for the next attempt.
//
// Budget: each original earns 1 credit, a retry costs 10, the balance is
// capped at 200 (BudgetConfig). Lock-free; the balance never goes below
// zero or above the cap. An empty budget means ErrBudgetExhausted. A cap
// below the cost of a retry could never pay for one: NewBudget panics, as
// New refuses a MinAttemptTime over PerAttemptTimeout and a HedgeDelay
// that leaves no MinAttemptTime before the deadline.
//
// Backoff: before retry n the delay is uniform in [0, min(BackoffCap,
// BackoffBase*2^(n-1))] (full jitter; 25 ms doubling to 200 ms by default).
// A provider's Retry-After is a floor, never shortened; one longer than
// Policy.MaxRetryAfter (5 s by default) ends the operation with
// ErrProviderError and a Reason; if the delay plus MinAttemptTime no longer
// fits the deadline the loop stops with ErrDeadlineExhausted and the
// provider's error attached. retry_backoff_seconds records the time slept
// (the part slept, when the caller cancels during it).
//
// Hedging (Policy.HedgeDelay, off by default): an attempt that has not
// answered after the delay gets a second attempt beside it; the first
// success wins and the other is cancelled. A hedge is an attempt and a
// retry (MaxAttempts, Limiter, Budget, deadline all apply; any refusal
// means no hedge) and is counted in retry_hedges_total; one whose success
// decides its operation in retry_hedges_won_total, one still running when
// the round is decided in retry_hedges_abandoned_total. Attempts of a
// hedged operation run on goroutines of their own even with
// InlineAttempts; HTTPClient and RoundTripper hedge idempotent requests
// only.
//
// One owner per call path: an operation started with another Owner's
// attempt ctx is nested, counted in retry_nested_operations_total, and
// marks that attempt structurally, whatever becomes of the errors on the
// way up (re-created with errors.New, wrapped with %v): the outer attempt
// is never hedged while it runs, and if the nested operation fails, the
// outer attempt is final and never retried. An attempt whose error is
// another Owner's *Error, or a cancellation, is final too, whatever
// Classify says. So nested owners cannot multiply attempts (3 x 3 = 9):
// the provider sees at most the innermost owner's MaxAttempts.
//
// Safe to repeat comes first: HTTPClient and RoundTripper give a request
// that is not idempotent (no idempotent method, no Idempotency-Key or
// X-Idempotency-Key; WithNonIdempotentRetries opts in), or whose body
// cannot be sent again (no GetBody), a single attempt, and such an
// operation that would otherwise have been retried ends
// ErrNotRetryable, with no retry, backoff or budget spent.
//
// Panics: a panic in an attempt Do waits for is counted (a permanent_error
// attempt and result) and re-raised in Do's goroutine. A panic in an
// attempt nobody waits for any more (abandoned, or a hedge's loser) is
// recovered on its goroutine, counted in retry_attempt_panics_total and
// handed to Config.OnPanic (by default logged with its stack), since
// nothing could recover it there.
//
// Results: every Do ends in exactly one Result, counted in
// retry_results_total, and every failure is an *Error wrapping exactly one
// sentinel (ErrCapacityRejected, ErrBudgetExhausted, ErrDeadlineExhausted,
// ErrProviderError, ErrPermanentError, ErrCancelled, ErrNotRetryable) plus
// the last attempt's error.
//
// # Across hops
//
// The deadline travels: WithDeadlinePropagation (Transport.PropagateDeadline)
// sends each attempt's remaining time in HeaderTimeout, in gRPC's
// grpc-timeout shape ("250m"), rounded down; DeadlineHandler on the next
// hop bounds the request's context by it, capped at Max where the caller
// is not trusted, so that hop's own Owner gets what is left and never a
// fresh budget. It counts requests that arrived without a deadline in
// retry_server_requests_total{deadline="missing"}.
//
// So does the news that retries are spent: when an Owner serving a
// request through DeadlineHandler gives up and the handler answers 429 or
// 5xx, the response carries HeaderRetriesExhausted, and Transport,
// HTTPClient and RoundTripper on the calling side never retry it.
//
// The provider's half of load shedding: ShedHandler takes a Limiter slot
// before the expensive work and answers 503 (or 429) with Retry-After when
// there is none, Sheddable requests first, the priority read from
// HeaderPriority (sent by WithPriorityHeader). It counts refusals in
// retry_server_shed_total. NewServerMetrics registers both families.
//
// # Scope
//
// Limiter and Budget are process-scoped: they count what this process does.
// A limit of 10 on each of 20 replicas admits 200 concurrent attempts to the
// provider; a budget allows 10% retries per replica. Adjust per-replica
// numbers when the replica count changes, or put the limit in a shared
// gateway when the provider's quota is cluster-wide. Both must be shared by
// every caller of the dependency in the process: a Budget created per
// request starts empty and never allows a retry.
//
// # Metrics
//
// NewMetrics registers the families of docs/metrics.md on the Registerer it
// is given, never on the global one. Duration histograms share the buckets
// 0.5 ms, 1 ms, 2.5 ms, 5 ms, 10 ms, 25 ms, 50 ms, 100 ms, 250 ms, 500 ms,
// 1 s, 2.5 s, 5 s, 10 s (+Inf), which separate a 1 ms local refusal from
// a multi-second slow call. Package retryotel exports the same families,
// names and labels through an OpenTelemetry SDK reader (a metric.Producer
// reading the registry), so that package retry itself needs no
// OpenTelemetry module.
//
// # Testing
//
// Config.Clock and Config.Rand make Do deterministic: a fake Clock whose
// Sleep advances Now runs every rule without sleeping (see fakes_test.go).
//
// # Cost
//
// One successful operation through limiter, budget, attempt deadline and
// all metrics, with the real clock, measured beside two anchors in one run:
//
//	go test -run '^$' -bench 'DoSuccess$|DoSuccessInline|Anchor' -benchmem -count 6 ./retry/
//
// BenchmarkDoSuccessInline (HTTPClient's way, Config.InlineAttempts) costs
// 4 allocations and about 1.5-2x BenchmarkAnchorTimeoutCall, a bare
// context.WithTimeout around the call; the attempt context is one
// allocation of our own that carries the deadline, the Owner and the
// result. BenchmarkDoSuccess, the default, runs each attempt on a goroutine
// of its own so that Do can return at the deadline whatever the attempt
// does: 5 allocations, and the inline cost plus about one
// BenchmarkAnchorGoroutineCall (a goroutine and a wait). docs/metrics.md
// ("Cost of instrumentation") has the measured numbers.
package retry
