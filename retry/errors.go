package retry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Result is the final result of one operation; its String is the
// retry_results_total "result" label value.
type Result uint8

// Results, one per retry_results_total label value.
const (
	ResultSuccess           Result = iota // an attempt succeeded
	ResultCapacityRejected                // the Limiter refused an attempt (load shed)
	ResultBudgetExhausted                 // a retry was wanted but the Budget was empty
	ResultDeadlineExhausted               // too little time left for a useful attempt
	ResultProviderError                   // the last allowed attempt failed temporarily
	ResultPermanentError                  // an attempt failed permanently; not retried
	ResultCancelled                       // the caller's context was cancelled
	ResultNotRetryable                    // failed temporarily, but the call is not safe to repeat

	numResults = 8
)

var resultNames = [numResults]string{
	"success", "capacity_rejected", "budget_exhausted", "deadline_exhausted",
	"provider_error", "permanent_error", "cancelled", "not_retryable",
}

// phrase is the sentinel's text without its package prefix.
func (r Result) phrase() string {
	if int(r) < numResults && sentinels[r] != nil {
		return strings.TrimPrefix(sentinels[r].Error(), "retry: ")
	}
	return r.String()
}

// String returns the metric label value.
func (r Result) String() string {
	if int(r) < numResults {
		return resultNames[r]
	}
	return fmt.Sprintf("Result(%d)", r)
}

// Sentinel errors, one per failing Result. Every error Do returns wraps
// exactly one of them; test with errors.Is.
var (
	ErrCapacityRejected  = errors.New("retry: capacity rejected")
	ErrBudgetExhausted   = errors.New("retry: retry budget exhausted")
	ErrDeadlineExhausted = errors.New("retry: deadline exhausted")
	ErrProviderError     = errors.New("retry: provider error after last attempt")
	ErrPermanentError    = errors.New("retry: permanent error")
	ErrCancelled         = errors.New("retry: cancelled")
	ErrNotRetryable      = errors.New("retry: not safe to retry")
)

var sentinels = [numResults]error{
	nil, ErrCapacityRejected, ErrBudgetExhausted, ErrDeadlineExhausted,
	ErrProviderError, ErrPermanentError, ErrCancelled, ErrNotRetryable,
}

// Error is the error Do returns for every operation that did not succeed.
//
// errors.Is(err, ErrX) tells which result it was; errors.Is/As also reach the
// last attempt's error (Err) and, for cancellation, the context's error. When
// owners are nested (an attempt of one calls another Owner), the inner
// *Error is part of the chain too; read Result from errors.As to get the
// outermost result exactly.
//
// An *Error is final for every other Owner: an attempt that returns one
// (wrapped or marked in any way) is never retried, because the owner that
// produced it has already spent its attempts, budget and deadline on it, and
// retrying on top would multiply attempts (3 x 3 = 9 per original). The
// Owner does not depend on seeing it: an attempt in which another Owner's
// operation failed is final however its error was rewritten.
type Error struct {
	Dependency string
	Result     Result
	// Attempts is how many attempts reached the provider.
	Attempts int
	// Err is the last attempt's error; nil if no attempt was made.
	Err error
	// Reason says why the owner stopped when the Result alone does not
	// (a Retry-After over Policy.MaxRetryAfter, an attempt that outran its
	// deadline); empty otherwise.
	Reason string

	ctxErr error // the caller's ctx.Err() for cancelled/deadline results
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("retry %s: %s after %d attempt(s)", e.Dependency, e.Result.phrase(), e.Attempts)
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	switch {
	case e.Err != nil:
		return msg + ": " + e.Err.Error()
	case e.ctxErr != nil:
		return msg + ": " + e.ctxErr.Error()
	}
	return msg
}

// Unwrap returns the result's sentinel, then the last attempt's error and
// the caller's context error when present.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 3)
	if int(e.Result) < numResults && sentinels[e.Result] != nil {
		errs = append(errs, sentinels[e.Result])
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.ctxErr != nil {
		errs = append(errs, e.ctxErr)
	}
	return errs
}

// RetryAfterer is implemented by errors that carry a provider's Retry-After
// hint. The Owner waits at least that long before the next attempt.
type RetryAfterer interface {
	RetryAfter() time.Duration
}

// classifiedError marks an error's Class for DefaultClassify.
type classifiedError struct {
	err   error
	class Class
	after time.Duration
}

func (e *classifiedError) Error() string             { return e.err.Error() }
func (e *classifiedError) Unwrap() error             { return e.err }
func (e *classifiedError) RetryAfter() time.Duration { return e.after }
func (e *classifiedError) retryClass() Class         { return e.class }

type classer interface{ retryClass() Class }

// MarkTemporary marks err as worth retrying. retryAfter is the provider's
// requested minimum wait (0 if none); the Owner never waits less. This is
// how an attempt reports a documented temporary failure (the seed's
// TemporaryQuoteFailure).
func MarkTemporary(err error, retryAfter time.Duration) error {
	if err == nil {
		return nil
	}
	return &classifiedError{err: err, class: Temporary, after: max(retryAfter, 0)}
}

// MarkPermanent marks err as not to be retried, overriding
// DefaultClassify's rule that timeouts are temporary (for example a timed
// out payment without an idempotency contract).
func MarkPermanent(err error) error {
	if err == nil {
		return nil
	}
	return &classifiedError{err: err, class: Permanent}
}

// ClassifyWith returns a classification that asks each of extra in turn
// and takes the first verdict given (ok true), and otherwise falls back to
// DefaultClassify: a way to add rules (a provider's own error codes) without
// losing the defaults, as setting Config.Classify alone would.
//
//	Classify: retry.ClassifyWith(func(err error) (retry.Class, bool) {
//		if errors.Is(err, errQuotaResetting) {
//			return retry.Temporary, true
//		}
//		return 0, false // no opinion: the defaults decide
//	}),
//
// The Owner's own rules (another Owner's result, a cancellation) still
// apply over any verdict.
func ClassifyWith(extra ...func(error) (Class, bool)) func(error) Class {
	rules := append([]func(error) (Class, bool)(nil), extra...)
	return func(err error) Class {
		for _, r := range rules {
			if c, ok := r(err); ok {
				return c
			}
		}
		return DefaultClassify(err)
	}
}

// DefaultClassify is the classification used when Config.Classify is nil.
// Another Owner's *Error anywhere in the chain is Permanent (its result is
// final; see Error). Otherwise the first error in the chain marked by
// MarkTemporary, MarkPermanent or a *StatusError decides; otherwise
// timeouts (context.DeadlineExceeded, a net.Error whose Timeout is true)
// are Temporary and everything else is Permanent: only documented
// temporary failures are retried. A cancellation (context.Canceled) is
// Permanent: nobody is waiting for a retry.
//
// The Owner applies the *Error and cancellation rules itself whatever
// Config.Classify says.
func DefaultClassify(err error) Class {
	if finalForOwner(err) {
		return Permanent
	}
	var c classer
	if errors.As(err, &c) {
		return c.retryClass()
	}
	if isTimeout(err) {
		return Temporary
	}
	return Permanent
}

// finalForOwner reports whether err must never be retried by an Owner:
// another Owner's result, or a cancellation.
func finalForOwner(err error) bool {
	var oe *Error
	return errors.As(err, &oe) || errors.Is(err, context.Canceled)
}

// isTimeout decides the "timeout" attempt outcome.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// retryAfter extracts a Retry-After hint from err's chain.
func retryAfter(err error) time.Duration {
	var ra RetryAfterer
	if errors.As(err, &ra) {
		return max(ra.RetryAfter(), 0)
	}
	return 0
}

// PanicError is a panic recovered from an attempt: the value it panicked
// with and the stack of its goroutine at the time. AttemptInfo.Err holds it
// for an attempt that panicked, and Config.OnPanic receives it for a panic
// nobody was waiting for.
type PanicError struct {
	Dependency string
	// Attempt is the attempt's number in its operation, 1 for the first.
	Attempt int
	// Value is what the attempt passed to panic.
	Value any
	// Stack is the panicking goroutine's stack (runtime/debug.Stack).
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("retry %s: attempt %d panicked: %v", e.Dependency, e.Attempt, e.Value)
}
