package model

// Service-side families: what a scrape target says about the requests it
// serves (the provider's half of the story), read by analysis.Services and
// analysis.ServiceSignalsFor. Three shapes are understood, in order of
// preference for each signal: the contract's service families (the sim
// provider's names, which the HAProxy, Envoy and Istio dialects also
// translate into), the common client_golang promhttp shapes, and
// OpenTelemetry HTTP server metrics as the Prometheus exporter names them.
// Histogram families are named without the _bucket/_count/_sum suffix.
// MetricServerReceived, MetricServerServiceTime and
// MetricServerWorkAfterCancel (signals.go) are the families also joined
// onto caller rows. docs/metrics.md describes every family.
const (
	// The sim provider (sim/provider.go). Slots and QueueLimit are
	// configuration gauges (queue limit 0: unbounded); Rejected counts the
	// 503s answered with Retry-After (label reason); Cancelled the requests
	// abandoned because the caller gave up (label stage: queued,
	// executing); Responses the responses sent, by status code (label
	// code: "200", "503"; a dialect that only knows the class writes
	// "2xx", "5xx", "other").
	MetricServiceInFlight       = "sim_provider_in_flight"
	MetricServiceSlots          = "sim_provider_slots"
	MetricServiceQueueDepth     = "sim_provider_queue_depth"
	MetricServiceQueueLimit     = "sim_provider_queue_limit"
	MetricServiceQueueOldestAge = "sim_provider_queue_oldest_age_seconds"
	MetricServiceQueueWait      = "sim_provider_queue_wait_seconds"
	MetricServiceCompleted      = "sim_provider_completed_total"
	MetricServiceErrorsInjected = "sim_provider_errors_injected_total"
	MetricServiceRejected       = "sim_provider_rejected_total"
	MetricServiceCancelled      = "sim_provider_cancelled_total"
	MetricServiceResponses      = "sim_provider_responses_total"

	// client_golang promhttp (InstrumentHandlerCounter/Duration/InFlight
	// under their conventional names): a counter by status code, a
	// duration histogram and an in-flight gauge.
	MetricPromHTTPRequests = "http_requests_total"
	MetricPromHTTPDuration = "http_request_duration_seconds"
	MetricPromHTTPInFlight = "http_requests_in_flight"

	// OpenTelemetry semantic conventions, as exported to Prometheus:
	// http.server.request.duration (s) and http.server.active_requests.
	MetricOTelServerDuration = "http_server_request_duration_seconds"
	MetricOTelServerActive   = "http_server_active_requests"

	// Status code labels of the sim (responses), promhttp and OTel shapes.
	LabelCode           = "code"
	LabelOTelStatusCode = "http_response_status_code"
	// LabelStage is the stage a cancelled request was in (queued,
	// executing) on the sim's cancelled counter.
	LabelStage = "stage"
)

// ServiceFamilies are every service-side family by base name, for scrape
// filters.
var ServiceFamilies = []string{
	MetricServerReceived, MetricServerServiceTime, MetricServerWorkAfterCancel,
	MetricServiceInFlight, MetricServiceSlots, MetricServiceQueueDepth, MetricServiceQueueLimit,
	MetricServiceQueueOldestAge, MetricServiceQueueWait, MetricServiceCompleted,
	MetricServiceErrorsInjected, MetricServiceRejected, MetricServiceCancelled,
	MetricServiceResponses,
	MetricPromHTTPRequests, MetricPromHTTPDuration, MetricPromHTTPInFlight,
	MetricOTelServerDuration, MetricOTelServerActive,
}

// Service shapes, the value of ServiceSignals.Source. ServiceSourceSim is
// the contract's service families, whoever emits them: the sim provider, or
// a dialect that translated a proxy's server-side stats (the target's
// TargetStatus.Dialect says which).
const (
	ServiceSourceSim      = "sim"
	ServiceSourcePromHTTP = "promhttp"
	ServiceSourceOTel     = "otel"
)

// ServiceSignals are what one service target says about the requests it
// serves over one window. Rates are per second, times in seconds, gauges
// are read at the newest scrape in the window. Every field may be Absent:
// a shape that does not export a signal leaves it Absent, never 0.
type ServiceSignals struct {
	Target string `json:"target"`
	// Source names the shape(s) read, "+"-joined when several contribute
	// (sim, promhttp, otel).
	Source string `json:"source"`

	StartMs int64 `json:"-"`
	EndMs   int64 `json:"-"`

	ReceivedPerS Value `json:"received_per_s"`
	InFlight     Value `json:"in_flight"`
	// Slots is how many requests the service executes at once (its
	// concurrency limit); QueueLimit the bound of its wait queue (0:
	// unbounded). Both are configuration read from gauges.
	Slots      Value `json:"slots"`
	QueueDepth Value `json:"queue_depth"`
	QueueLimit Value `json:"queue_limit"`
	// QueueOldestAge is the age of the oldest waiting request; QueueWaitP99
	// the p99 of the time requests waited for an execution slot.
	QueueOldestAge Value `json:"queue_oldest_age_s"`
	QueueWaitP99   Value `json:"queue_wait_p99_s"`
	// QueueWaitMean is the exact mean wait of the requests granted a slot
	// in the window (the queue-wait histogram's _sum/_count increases);
	// Absent when none was.
	QueueWaitMean  Value `json:"queue_wait_mean_s"`
	ServiceTimeP50 Value `json:"service_time_p50_s"`
	ServiceTimeP99 Value `json:"service_time_p99_s"`
	// Service time split by outcome where the shape labels it (promhttp and
	// OTel by status code: success is 1xx-4xx except 429, error 429 and
	// 5xx); Absent where it cannot be split.
	SuccessServiceTimeP50 Value `json:"success_service_time_p50_s"`
	SuccessServiceTimeP99 Value `json:"success_service_time_p99_s"`
	ErrorServiceTimeP50   Value `json:"error_service_time_p50_s"`
	ErrorServiceTimeP99   Value `json:"error_service_time_p99_s"`
	// Responses by status class. The sim's 2xx are the requests it
	// finished for a caller still waiting; its 503s are injected errors
	// plus queue-full rejections.
	Responses2xxPerS Value `json:"responses_2xx_per_s"`
	Responses429PerS Value `json:"responses_429_per_s"`
	Responses503PerS Value `json:"responses_503_per_s"`
	// Responses503RetryAfterPerS are the 503s that carried Retry-After
	// (load shedding that tells callers when to come back), a part of
	// Responses503PerS; Absent when the shape does not say.
	Responses503RetryAfterPerS Value `json:"responses_503_retry_after_per_s"`
	ResponsesOther5xxPerS      Value `json:"responses_other_5xx_per_s"`
	// Responses5xxPerS is every 5xx, 503 included: the only 5xx figure of
	// a shape that counts responses by class (HAProxy, Envoy), where 429,
	// 503 and other 5xx stay Absent.
	Responses5xxPerS Value `json:"responses_5xx_per_s"`
	// WorkAfterCancelPerS counts requests finished after their caller had
	// disconnected.
	WorkAfterCancelPerS Value `json:"work_after_cancel_per_s"`
	// CancelledPerS counts requests abandoned because their caller gave up
	// (and the service noticed), whatever stage they were in.
	CancelledPerS Value `json:"cancelled_per_s"`
}
