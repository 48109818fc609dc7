package model

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// The metric contract (docs/metrics.md): the family names every dialect
// maps onto. Histogram families are named without the _bucket/_count/_sum
// suffix.
const (
	MetricOriginals         = "retry_originals_total"
	MetricAttempts          = "retry_attempts_total"
	MetricRetries           = "retry_retries_total"
	MetricRescued           = "retry_rescued_total"
	MetricBudgetDenied      = "retry_budget_denied_total"
	MetricAdmissionRejected = "retry_admission_rejected_total"
	MetricResults           = "retry_results_total"
	MetricActiveCalls       = "retry_active_calls"
	MetricConcurrencyLimit  = "retry_concurrency_limit"
	MetricPoolWait          = "retry_pool_wait_seconds"
	MetricRequestDuration   = "retry_request_duration_seconds"
	MetricAttemptDuration   = "retry_attempt_duration_seconds"
	MetricBackoff           = "retry_backoff_seconds"
	MetricBudgetBalance     = "retry_budget_balance"
	MetricPolicyMaxAttempts = "retry_policy_max_attempts"
	MetricPolicyDeadline    = "retry_policy_deadline_seconds"
	MetricAbandonedAttempts = "retry_abandoned_attempts_total"
	MetricLateSuccesses     = "retry_late_successes_total"
	MetricNestedOperations  = "retry_nested_operations_total"
	MetricHedges            = "retry_hedges_total"
	MetricHedgesWon         = "retry_hedges_won_total"
	MetricHedgesAbandoned   = "retry_hedges_abandoned_total"
	MetricOperationAttempts = "retry_operation_attempts_total"
)

// Server-side families: what a dependency that is itself a scrape target
// says about the requests it serves, without a dependency label. The sim's
// provider exports them; any provider may. analysis joins them onto the
// rows of the targets that call it (Signals.Dependency*).
const (
	MetricServerReceived        = "sim_provider_requests_received_total"
	MetricServerServiceTime     = "sim_provider_service_time_seconds"
	MetricServerWorkAfterCancel = "sim_provider_work_after_cancel_total"
	// MetricServerRequests counts the requests a server received by
	// whether the caller propagated its deadline (label deadline:
	// propagated, missing, invalid), as retry.DeadlineHandler exports it.
	MetricServerRequests = "retry_server_requests_total"
	LabelDeadline        = "deadline"
)

// Breaker, method and setting families beyond the contract's core
// (docs/metrics.md, "Breakers, methods and settings"): what dialects
// translate from emitters that tell it. Absent where no emitter does.
const (
	// MetricBreakerState is a circuit breaker's state now (gauge):
	// BreakerClosed, BreakerHalfOpen or BreakerOpen.
	MetricBreakerState = "retry_breaker_state"
	// MetricSettingOff is 1 for a dependency whose emitter a dialect
	// recognised but whose retry data a setting of the emitter switched
	// off (gauge; label setting names the setting, LabelSetting).
	MetricSettingOff = "retry_setting_off"

	BreakerClosed   = 0
	BreakerHalfOpen = 1
	BreakerOpen     = 2

	LabelSetting = "setting"
	// LabelMethod is the request method where an emitter labels it
	// (Traefik's method, OpenTelemetry's http_request_method): kept on
	// originals and attempts so that retries of non-idempotent requests
	// can be told apart.
	LabelMethod = "method"
	// ReasonCircuitOpen is the admission-rejection reason of calls an
	// open circuit breaker refused.
	ReasonCircuitOpen = "circuit_open"

	// Settings a dialect names in retry_setting_off.
	SettingIstioProxyStats = "proxyStatsMatcher"
	SettingTraefikServices = "addServicesLabels"
	SettingTraefikRouters  = "addRoutersLabels"
	SettingEnvoyUsedOnly   = "usedonly"
)

// Contract label names and values.
const (
	LabelDependency = "dependency"
	// LabelOuterDependency names, on retry_nested_operations_total, the
	// owner whose attempt a nested operation ran in.
	LabelOuterDependency = "outer_dependency"
	LabelPriority        = "priority"
	LabelOutcome         = "outcome"
	LabelReason          = "reason"
	LabelResult          = "result"
	LabelResultClass     = "result_class"

	// Priorities of the contract's originals: critical calls are shed
	// last; sheddable ones first.
	PriorityCritical  = "critical"
	PrioritySheddable = "sheddable"

	OutcomeSuccess        = "success"
	OutcomeTemporaryError = "temporary_error"
	OutcomePermanentError = "permanent_error"
	OutcomeTimeout        = "timeout"
	// OutcomeCancelled is an attempt its caller cancelled: never a
	// provider error.
	OutcomeCancelled = "cancelled"

	ResultSuccess           = "success"
	ResultCapacityRejected  = "capacity_rejected"
	ResultBudgetExhausted   = "budget_exhausted"
	ResultDeadlineExhausted = "deadline_exhausted"
	ResultProviderError     = "provider_error"
	ResultPermanentError    = "permanent_error"
	ResultCancelled         = "cancelled"
	// ResultNotRetryable is a failure not retried because the request is
	// not safe to repeat (a non-idempotent method without an idempotency
	// key): the retry library's refusal, never the provider's.
	ResultNotRetryable = "not_retryable"

	ClassSuccess     = "success"
	ClassFastFailure = "fast_failure"
	ClassFailure     = "failure"

	// Signals.AmplificationBasis values: what amplification is attempts
	// over. Operations: the attempts of the operations that ended over
	// those of them that made an attempt, both added when each ended
	// (exact in every window). Admitted: attempts that ended over
	// completed originals that made an attempt.
	// Completed: completed originals less those refused by admission
	// (retry_results_total without the class split). Started: originals
	// started less admission rejections, counted at different moments
	// from the attempts (a caveat during step changes).
	AmplificationOperations = "operations"
	AmplificationAdmitted   = "admitted"
	AmplificationCompleted  = "completed"
	AmplificationStarted    = "started"
)

// LatencyClasses are the result classes whose latency is kept apart, in
// display order.
var LatencyClasses = []string{ClassSuccess, ClassFastFailure, ClassFailure}

// Value is a signal that may be absent. Absent (the endpoint does not
// provide it, or the window has too little data) is different from zero
// everywhere: in JSON it is null, on screen "-".
//
// It takes 8 bytes, not 16: a float64's bits XOR absentBits, so the zero
// Value is absent and every float64 but one NaN payload is a present
// value. A timeline holds some 50 of them per row and bin.
type Value struct{ bits uint64 }

// absentBits is the one float64 a Value cannot hold: a signalling NaN
// whose payload no arithmetic produces.
const absentBits = 0x7ff4_6e75_6c6c_0001

// Some returns a present value. Some of the one NaN payload a Value cannot
// hold is another NaN.
func Some(v float64) Value {
	b := math.Float64bits(v)
	if b == absentBits {
		b = math.Float64bits(math.NaN())
	}
	return Value{bits: b ^ absentBits}
}

// Absent is the missing value.
var Absent = Value{}

// ValueOf is v when ok, else Absent (a Value from Go's v, ok idiom).
func ValueOf(v float64, ok bool) Value {
	if !ok {
		return Absent
	}
	return Some(v)
}

// V is the value; 0 when absent.
func (v Value) V() float64 {
	if v.bits == 0 {
		return 0
	}
	return math.Float64frombits(v.bits ^ absentBits)
}

// OK reports whether the value is present.
func (v Value) OK() bool { return v.bits != 0 }

// Get returns the value and whether it is present.
func (v Value) Get() (float64, bool) { return v.V(), v.OK() }

// Or returns the value, or def when absent.
func (v Value) Or(def float64) float64 {
	if v.OK() {
		return v.V()
	}
	return def
}

// MarshalJSON writes null when absent, and a value JSON numbers cannot
// hold as Prometheus' HTTP API does (AppendJSONFloat).
func (v Value) MarshalJSON() ([]byte, error) {
	if !v.OK() {
		return []byte("null"), nil
	}
	return AppendJSONFloat(nil, v.V()), nil
}

// UnmarshalJSON reads null as absent, and what MarshalJSON writes.
func (v *Value) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*v = Absent
		return nil
	}
	f, err := ParseJSONFloat(b)
	if err != nil {
		return err
	}
	*v = Some(f)
	return nil
}

// AppendJSONFloat appends f as JSON: a number when finite, else the string
// "+Inf", "-Inf" or "NaN", the encoding of Prometheus' HTTP API. A target
// may export any of them (a concurrency limit of +Inf for "unlimited"),
// and one such value must never make a whole report unwritable.
func AppendJSONFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"+Inf"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Inf"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// ParseJSONFloat reads what AppendJSONFloat writes.
func ParseJSONFloat(b []byte) (float64, error) {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		switch s := string(b[1 : len(b)-1]); s {
		case "NaN":
			return math.NaN(), nil
		case "+Inf", "Inf":
			return math.Inf(1), nil
		case "-Inf":
			return math.Inf(-1), nil
		default:
			return 0, fmt.Errorf("not a number: %q", s)
		}
	}
	return strconv.ParseFloat(string(b), 64)
}

// MarshalJSON writes PerS as AppendJSONFloat does.
func (b Breakdown) MarshalJSON() ([]byte, error) {
	key, err := json.Marshal(b.Key)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"key":`), key...)
	out = append(out, `,"per_s":`...)
	out = AppendJSONFloat(out, b.PerS)
	return append(out, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (b *Breakdown) UnmarshalJSON(data []byte) error {
	var raw struct {
		Key  string          `json:"key"`
		PerS json.RawMessage `json:"per_s"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	b.Key, b.PerS = raw.Key, 0
	if len(raw.PerS) > 0 {
		f, err := ParseJSONFloat(raw.PerS)
		if err != nil {
			return fmt.Errorf("per_s: %w", err)
		}
		b.PerS = f
	}
	return nil
}

// Quantiles holds the usual latency quantiles of one window, in seconds.
type Quantiles struct {
	P50 Value `json:"p50"`
	P90 Value `json:"p90"`
	P99 Value `json:"p99"`
}

// HistogramWindow is the increase of a classic histogram over a window:
// cumulative bucket counts of the observations made inside it.
type HistogramWindow struct {
	Buckets []Bucket `json:"buckets"`
	Count   float64  `json:"count"`
	Sum     float64  `json:"sum"`
}

// Breakdown is a per-second rate split by labels (reason, priority, result).
type Breakdown struct {
	Labels Labels  `json:"-"`
	Key    string  `json:"key"` // the labels as reason/priority text, for display and JSON
	PerS   float64 `json:"per_s"`
}

// Signals are the retry signals of one (target, dependency) over one window.
// Rates are per second; ratios are fractions (0..1), amplification is a
// multiple. Every field may be Absent.
type Signals struct {
	Target     string `json:"target"`
	Dependency string `json:"dependency"`
	Dialect    string `json:"dialect,omitempty"`

	StartMs int64 `json:"-"`
	EndMs   int64 `json:"-"`
	// SampledFromMs and SampledToMs are the times of the target's scrapes
	// the rates run between (0: unknown). Every target is scraped at its
	// own moments, so what compares two targets' counts over one window
	// (a chain's gaps) needs to know how far apart their samples were.
	SampledFromMs int64 `json:"-"`
	SampledToMs   int64 `json:"-"`

	OriginalsPerS Value `json:"originals_per_s"`
	AttemptsPerS  Value `json:"attempts_per_s"`
	// Amplification is attempts per admitted original, both counted when
	// they end (docs/metrics.md, "Counting moments"): an original that
	// never reached the provider (shed, no time left) is not in the
	// denominator, and a step change cannot push it below 1.
	// AmplificationBasis says which quantities it could be computed from:
	// AmplificationAdmitted, AmplificationCompleted or
	// AmplificationStarted, in that order of preference.
	Amplification      Value  `json:"amplification"`
	AmplificationBasis string `json:"amplification_basis,omitempty"`
	// AttemptsPerOriginal is attempts over originals started, the plain
	// ratio: below 1 under admission shedding, and during a step change,
	// since originals are counted when they start and attempts when they
	// end.
	AttemptsPerOriginal Value `json:"attempts_per_original"`
	// CompletedPerS is originals that ended (retry_results_total, every
	// result); AdmittedPerS those of them that made at least one attempt
	// (retry_request_duration_seconds classes success and failure), absent
	// when the emitter does not tell fast failures apart.
	CompletedPerS Value `json:"completed_per_s"`
	AdmittedPerS  Value `json:"admitted_per_s"`
	// OperationAttemptsPerS is the attempts of the operations that ended,
	// added when each ended (retry_operation_attempts_total): over
	// AdmittedPerS, amplification counted entirely at the operations'
	// end, never below 1 nor above the hop's max attempts in any window.
	OperationAttemptsPerS Value `json:"operation_attempts_per_s"`
	RetriesPerS           Value `json:"retries_per_s"`
	RescuedPerS           Value `json:"rescued_per_s"`
	BudgetDeniedPerS      Value `json:"budget_denied_per_s"`
	AdmissionRejectedPerS Value `json:"admission_rejected_per_s"`
	ProviderErrorsPerS    Value `json:"provider_errors_per_s"`
	TemporaryErrorsPerS   Value `json:"temporary_errors_per_s"`
	PermanentErrorsPerS   Value `json:"permanent_errors_per_s"`
	TimeoutsPerS          Value `json:"timeouts_per_s"`
	SuccessesPerS         Value `json:"successes_per_s"`
	DeadlineExhaustedPerS Value `json:"deadline_exhausted_per_s"`
	// CancelledAttemptsPerS is attempts their caller cancelled (outcome
	// cancelled): neither a provider error nor a timeout.
	CancelledAttemptsPerS Value `json:"cancelled_attempts_per_s"`
	// AbandonedAttemptsPerS is attempts still running when their
	// operation ended; LateSuccessesPerS those of them (or of any attempt)
	// that succeeded after the caller gave up: work done for nobody.
	AbandonedAttemptsPerS Value `json:"abandoned_attempts_per_s"`
	LateSuccessesPerS     Value `json:"late_successes_per_s"`
	// HedgesPerS is hedged attempts (a second attempt sent while the
	// first still runs): part of AttemptsPerS and RetriesPerS.
	HedgesPerS Value `json:"hedges_per_s"`
	// HedgesWonPerS is hedges whose success decided their operation;
	// HedgesAbandonedPerS hedges still running when their round was
	// decided, cancelled with their answer unused. Null unless the
	// emitter counts them (the contract does; gRPC, Polly and Envoy do
	// not).
	HedgesWonPerS       Value `json:"hedges_won_per_s"`
	HedgesAbandonedPerS Value `json:"hedges_abandoned_per_s"`
	// RetryLimitExceededPerS is originals that wanted another retry but
	// had used every allowed attempt (retry_limit_exceeded_total: Envoy,
	// Linkerd, resilience4j); RequestTimeoutsPerS those that ended at
	// their whole-request deadline (retry_request_timeouts_total).
	RetryLimitExceededPerS Value `json:"limit_exceeded_per_s"`
	RequestTimeoutsPerS    Value `json:"request_timeouts_per_s"`
	// BreakerRejectedPerS is calls an open circuit breaker refused
	// (admission rejections with reason circuit_open); BreakerState the
	// worst state of the row's breakers at the newest scrape
	// (BreakerClosed, BreakerHalfOpen, BreakerOpen). Absent without a
	// breaker the emitter reports.
	BreakerRejectedPerS Value `json:"breaker_rejected_per_s"`
	BreakerState        Value `json:"breaker_state"`
	// UnsafeOriginalsPerS and UnsafeAttemptsPerS are the originals and
	// attempts of non-idempotent requests (method POST or PATCH): absent
	// unless the emitter labels its originals and attempts by method.
	UnsafeOriginalsPerS Value `json:"unsafe_originals_per_s"`
	UnsafeAttemptsPerS  Value `json:"unsafe_attempts_per_s"`
	// SettingsOff names the emitter settings that switched off the data
	// the row's dialect needs (retry_setting_off), sorted.
	SettingsOff []string `json:"settings_off,omitempty"`
	// NestedPerS is operations of this dependency's owner started inside
	// attempts of another owner in the same process, split by that outer
	// dependency in NestedIn. Absent when the emitter never nested.
	NestedPerS       Value       `json:"nested_operations_per_s"`
	NestedIn         []Breakdown `json:"nested_in,omitempty"`
	EffectiveSuccess Value       `json:"effective_success"`
	AttemptSuccess   Value       `json:"attempt_success"`
	ActiveCalls      Value       `json:"active_calls"`
	// ActiveCallsChangePerS is how much ActiveCalls grew over the window,
	// per second (negative when it fell): attempts ended plus it are the
	// attempts started, counted when they start like the callee's
	// originals (the chain gap rules). Absent when a series of active
	// calls lacks a sample at either edge.
	ActiveCallsChangePerS Value `json:"-"`
	ConcurrencyLimit      Value `json:"concurrency_limit"`
	PoolWaitP50           Value `json:"pool_wait_p50_s"`
	PoolWaitP99           Value `json:"pool_wait_p99_s"`
	// PoolWaitMean is the window's mean wait (sum / count of the pool-wait
	// histogram): the only figure of an emitter that exports a count and
	// a sum without buckets (HikariCP's Micrometer timer, database/sql),
	// whose quantiles are absent. Absent when nothing waited in the window.
	PoolWaitMean Value `json:"pool_wait_mean_s"`
	// QueueDepth is the calls waiting now for a connection or slot
	// (retry_pending_calls: a pool's pending threads, a proxy's pending
	// queue), summed; absent when the emitter does not say.
	QueueDepth      Value `json:"queue_depth"`
	BackoffP50      Value `json:"backoff_p50_s"`
	BackoffP99      Value `json:"backoff_p99_s"`
	BudgetBalance   Value `json:"budget_balance"`
	MaxAttempts     Value `json:"policy_max_attempts"`
	DeadlineSeconds Value `json:"policy_deadline_seconds"`

	// The dependency's own view, when the dependency is itself a scrape
	// target exporting the server-side families (MetricServer*), over the
	// same window: requests it received (from every caller), the median
	// time a request held one of its execution slots, and requests it
	// finished after the caller had given up. Absent otherwise.
	DependencyReceivedPerS        Value `json:"dependency_received_per_s"`
	DependencyServiceTimeP50      Value `json:"dependency_service_time_p50_s"`
	DependencyWorkAfterCancelPerS Value `json:"dependency_work_after_cancel_per_s"`
	// DependencyDeadlinePropagatedPerS and DependencyDeadlineMissingPerS
	// split what the dependency received by whether the caller sent its
	// remaining deadline along (retry_server_requests_total; a header that
	// does not parse counts as missing). Absent unless the dependency
	// exports the family.
	DependencyDeadlinePropagatedPerS Value `json:"dependency_deadline_propagated_per_s"`
	DependencyDeadlineMissingPerS    Value `json:"dependency_deadline_missing_per_s"`
	// EdgeReceivedPerS is what the dependency received from this row's
	// workload (Istio's reporter="destination" series, by source
	// workload), every attempt of the edge; EdgeAmplification that over
	// the originals: the edge's amplification, derived from both ends
	// without the caller's retry stats. Absent unless both ends name
	// the workload.
	EdgeReceivedPerS  Value `json:"edge_received_per_s"`
	EdgeAmplification Value `json:"edge_amplification"`

	// AdmissionRejectedBy splits admission rejections by reason and priority.
	AdmissionRejectedBy []Breakdown `json:"admission_rejected_by,omitempty"`
	// ResultsPerS is the final result of originals, keyed by result.
	ResultsPerS map[string]Value `json:"results_per_s,omitempty"`
	// Latency is the whole-operation latency per result class
	// (success, fast_failure, failure) and MixedLatency all classes together.
	Latency      ByClass[Quantiles] `json:"latency,omitempty"`
	MixedLatency Quantiles          `json:"mixed_latency"`
	// LatencyHist is the window's latency histogram per result class.
	LatencyHist ByClass[HistogramWindow] `json:"-"`
}

// Key identifies a row: one dependency as seen by one target.
type Key struct {
	Target, Dependency string
}

// Key returns the signals' row key.
func (s *Signals) Key() Key { return Key{Target: s.Target, Dependency: s.Dependency} }
