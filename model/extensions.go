package model

// Families outside the metric contract (docs/metrics.md) that dialects
// (dialect, docs/dialects.md) emit for signals some emitters provide
// and the contract has no family for. They carry the dependency label like
// the contract's families.
const (
	// MetricRetryLimitExceeded counts originals that wanted another retry
	// but had used every allowed attempt (counter). Our library says this
	// as retry_results_total{result="provider_error"}; emitters whose
	// final results cannot be split completely say it here.
	MetricRetryLimitExceeded = "retry_limit_exceeded_total"
	// MetricRequestTimeouts counts originals that ended because their
	// whole-request deadline passed (counter), for emitters whose final
	// results cannot be split completely (retry_results_total would say
	// deadline_exhausted).
	MetricRequestTimeouts = "retry_request_timeouts_total"
	// MetricPendingCalls is calls waiting now for a slot or a connection
	// before their attempt can start (gauge).
	MetricPendingCalls = "retry_pending_calls"
	// MetricPoolWaitAverage is the emitter's own average of the time calls
	// waited for a slot or connection, in seconds (gauge). It is not a
	// window average: HAProxy averages its last 1024 requests. Shown as
	// what it is, never turned into quantiles.
	MetricPoolWaitAverage = "retry_pool_wait_average_seconds"
)
