package analysis

import "github.com/retrytop/retrytop/model"

// FateLedger says how a dependency's originals ended over a window, per
// second: succeeded at the first try, after retries,
// failed with every attempt used, or not retried and why. It is read from
// the contract's final results (retry_results_total) and rescued count,
// which every dialect translates into; a fate the source cannot tell is
// Absent (JSON null), never 0.
type FateLedger struct {
	Target     string `json:"target"`
	Dependency string `json:"dependency"`
	// SucceededFirstTry is successes minus rescued; SucceededAfterRetry
	// the rescued (retry_rescued_total).
	SucceededFirstTry   model.Value `json:"succeeded_first_try_per_s"`
	SucceededAfterRetry model.Value `json:"succeeded_after_retry_per_s"`
	// FailedAfterAttempts: the last allowed attempt failed (result
	// provider_error, or retry_limit_exceeded_total without results).
	FailedAfterAttempts model.Value `json:"failed_after_attempts_per_s"`
	// NotRetried* are originals whose failure was not retried, by reason:
	// the retry budget (budget_exhausted), the admission limiter
	// (capacity_rejected: the contract does not tell a first attempt shed
	// from a retry refused), no time left (deadline_exhausted), a
	// non-retryable error (permanent_error), an open circuit breaker
	// (calls it refused: admission rejections with reason circuit_open,
	// Absent unless a dialect says so). Without final results, a
	// dialect's own counts stand in (either): retries refused by the budget
	// (Envoy's and Linkerd's overflow), the attempt cap reached
	// (retry_limit_exceeded_total), the request timeout
	// (retry_request_timeouts_total).
	NotRetriedBudget   model.Value `json:"not_retried_budget_per_s"`
	NotRetriedLimiter  model.Value `json:"not_retried_limiter_per_s"`
	NotRetriedDeadline model.Value `json:"not_retried_deadline_per_s"`
	NotRetriedNonRetry model.Value `json:"not_retried_non_retryable_per_s"`
	// NotRetriedUnsafe: not safe to repeat (not_retryable: a
	// non-idempotent request without an idempotency key).
	NotRetriedUnsafe  model.Value `json:"not_retried_unsafe_per_s"`
	NotRetriedBreaker model.Value `json:"not_retried_breaker_per_s"`
	// Cancelled: the caller gave up.
	Cancelled model.Value `json:"cancelled_per_s"`
	// BudgetBalance is retry_budget_balance where exported.
	BudgetBalance model.Value `json:"budget_balance"`
	// Budget is the balance left, exported or rebuilt with the dialect's
	// policy model, and how soon it runs out (BudgetFor); nil when neither
	// the emitter nor a model can say.
	Budget *Budget `json:"budget"`
}

// Fates is the fate ledger of one row's signals.
func Fates(s model.Signals) FateLedger {
	f := FateLedger{Target: s.Target, Dependency: s.Dependency, BudgetBalance: s.BudgetBalance}
	res := func(k string) model.Value {
		if s.ResultsPerS == nil {
			return model.Absent
		}
		return s.ResultsPerS[k]
	}
	if ok, rescued := res(model.ResultSuccess), s.RescuedPerS; ok.OK() && rescued.OK() {
		f.SucceededFirstTry = model.Some(max(ok.V()-rescued.V(), 0))
	}
	f.SucceededAfterRetry = s.RescuedPerS
	f.FailedAfterAttempts = either(res(model.ResultProviderError), s.RetryLimitExceededPerS)
	f.NotRetriedBudget = either(res(model.ResultBudgetExhausted), s.BudgetDeniedPerS)
	f.NotRetriedLimiter = res(model.ResultCapacityRejected)
	f.NotRetriedDeadline = either(res(model.ResultDeadlineExhausted), s.RequestTimeoutsPerS)
	f.NotRetriedNonRetry = res(model.ResultPermanentError)
	f.NotRetriedUnsafe = res(model.ResultNotRetryable)
	f.NotRetriedBreaker = s.BreakerRejectedPerS
	f.Cancelled = res(model.ResultCancelled)
	return f
}

// either is the final result when the emitter reports results, else the
// emitter's own count of the same fate (a proxy that counts retries
// refused or given up, but not how each original ended): Envoy's and
// Linkerd's retry_limit_exceeded and overflow, Envoy's and Polly's
// request timeouts. Absent when neither is known.
func either(result, own model.Value) model.Value {
	if result.OK() {
		return result
	}
	return own
}

// GRPCTokens reconstructs gRPC's retry-throttling token count (gRFC A6:
// starts at maxTokens, an attempt that failed with a status in
// retryableStatusCodes takes 1, a success adds ratio, capped at maxTokens)
// at the end of each bin of a timeline, for an emitter that does not
// export it. The failures counted are the temporary errors (UNAVAILABLE,
// RESOURCE_EXHAUSTED, ABORTED as the gRPC dialects classify them, A6's
// retryable codes): permanent errors, cancels and timeouts
// (DEADLINE_EXCEEDED, retryable in A6's example policy only when listed)
// take nothing; successes are the successful attempts. Transparent
// retries are attempts the counts cannot tell apart: a failed one reads
// as a failure A6 does not count. Within a bin the order of successes and
// failures is unknown: the count is clamped once per bin, so a bin that
// both drains and refills it reads high. Absent from the first bin whose
// attempts, or their split by outcome, are unknown on.
func GRPCTokens(timeline []model.Signals, maxTokens, ratio float64) []model.Value {
	return grpcTokensFrom(timeline, maxTokens, maxTokens, ratio)
}

// grpcTokensFrom is GRPCTokens from a count of start before the first bin.
func grpcTokensFrom(timeline []model.Signals, start, maxTokens, ratio float64) []model.Value {
	out := make([]model.Value, len(timeline))
	tokens := start
	for i, s := range timeline {
		failed, ok, known := grpcCounted(&s)
		if !known {
			return out
		}
		secs := rateSeconds(&s)
		tokens = min(max(tokens-failed*secs+ok*secs*ratio, 0), maxTokens)
		out[i] = model.Some(tokens)
	}
	return out
}

// grpcCounted is what A6's throttling counts of a row, per second: the
// attempts that failed with a retryable status (temporary errors) and the
// successful ones; known is false when the attempts or their split by
// outcome are unknown.
func grpcCounted(s *model.Signals) (failed, ok float64, known bool) {
	att, has := s.AttemptsPerS.Get()
	if !has {
		return 0, 0, false
	}
	if att == 0 {
		return 0, 0, true
	}
	succ, has1 := s.AttemptSuccess.Get()
	temp, has2 := s.TemporaryErrorsPerS.Get()
	if !has1 || !has2 {
		return 0, 0, false
	}
	return temp, att * succ, true
}
