package retry

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Transport is an http.RoundTripper for use under an Owner. It sends each
// request exactly once, reports connection pool wait and honours
// HeaderRetriesExhausted:
//
//   - Hidden retries are refused. net/http's Transport silently re-sends a
//     replayable request (GET, HEAD, OPTIONS, TRACE, or any request with an
//     Idempotency-Key header; with no body or with GetBody) when a reused
//     keep-alive connection fails. Those would be provider attempts the
//     Owner neither counts nor budgets. A request with a body reaches the
//     base with a body net/http cannot rewind (no GetBody), which it never
//     re-sends. A request without a body reaches it with none (nil Body),
//     so that a retrying RoundTripper underneath can send it again; should
//     a Base that is an *http.Transport start a second connection attempt
//     for it, Transport cancels that attempt and the round trip fails with
//     the connection lost (io.ErrUnexpectedEOF), for the Owner to retry or
//     not. (A Base that wraps an *http.Transport is not watched so.)
//     HTTP/2 may still re-send a bodyless request on a stream the server
//     refused (REFUSED_STREAM, or past a GOAWAY's last stream): the server
//     says it never processed those.
//   - Inside an Owner attempt it measures GetConn -> GotConn with
//     net/http/httptrace and records it in retry_pool_wait_seconds. That
//     span covers waiting for an idle connection (or for MaxConnsPerHost)
//     and, when a new connection is needed, dialing it (DNS, TCP, TLS).
//   - Inside an Owner attempt, a 429 or 5xx response carrying
//     HeaderRetriesExhausted makes the attempt final: the provider's own
//     owner has already retried, so the Owner never retries it, whatever
//     the attempt returns.
//
// Transport does not otherwise interpret responses; HTTPClient does.
type Transport struct {
	// Base does the round trips; nil means http.DefaultTransport. Set its
	// dial, TLS handshake and response header timeouts: the attempt ctx
	// bounds the whole attempt, but those bound each step.
	Base http.RoundTripper
	// PropagateDeadline sends the request context's remaining time (inside
	// an attempt: the attempt's) to the next hop in HeaderTimeout, for its
	// DeadlineHandler.
	PropagateDeadline bool
}

// errHiddenRetry is the cause Transport cancels net/http's hidden re-send
// with.
var errHiddenRetry = errors.New("retry: net/http's hidden re-send refused")

// errConnLost is what a round trip whose hidden re-send was refused
// returns: the reused connection failed before the response.
var errConnLost = fmt.Errorf("retry: connection lost before the response, not re-sent by net/http: %w", io.ErrUnexpectedEOF)

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	ctx := req.Context()
	a := attemptFrom(ctx)
	bodyless := req.Body == nil || req.Body == http.NoBody
	// Only net/http's own Transport re-sends behind our back; a RoundTripper
	// of another kind may be a retrying one, whose attempts are its own.
	_, direct := base.(*http.Transport)
	guard := direct && bodyless && replayable(req)
	var (
		cancel context.CancelCauseFunc
		conns  atomic.Int32
	)
	if a != nil || guard {
		trace := &httptrace.ClientTrace{}
		if a != nil {
			poolWaitTrace(a.o, trace)
		}
		if guard {
			ctx, cancel = context.WithCancelCause(ctx)
			getConn := trace.GetConn
			trace.GetConn = func(hostPort string) {
				if conns.Add(1) > 1 {
					cancel(errHiddenRetry) // one request, one connection attempt
				}
				if getConn != nil {
					getConn(hostPort)
				}
			}
		}
		ctx = httptrace.WithClientTrace(ctx, trace)
	}
	r := req.WithContext(ctx) // a shallow copy: a RoundTripper must not modify req
	switch {
	case bodyless:
		r.Body, r.GetBody = nil, nil // an empty body is no body
	case replayable(req):
		r.Body, r.GetBody = noRewind{req.Body}, nil
	}
	if t.PropagateDeadline {
		r.Header = req.Header.Clone()
		if r.Header == nil {
			r.Header = http.Header{}
		}
		setTimeoutHeader(r)
	}
	resp, err := base.RoundTrip(r)
	if cancel != nil {
		if err != nil || resp.StatusCode == http.StatusSwitchingProtocols {
			defer cancel(nil) // a switched connection lives until the caller's ctx ends
			if err != nil && conns.Load() > 1 && errors.Is(context.Cause(ctx), errHiddenRetry) {
				return nil, errConnLost
			}
			if err != nil {
				return nil, err
			}
		} else {
			resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		}
	}
	if err != nil {
		return nil, err
	}
	if a != nil && failureStatus(resp.StatusCode) && resp.Header.Get(HeaderRetriesExhausted) != "" {
		a.final.Store(true)
	}
	return resp, nil
}

// cancelOnClose ends a round trip's own context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}

// failureStatus reports whether code is one a caller might retry: 429 or
// 5xx.
func failureStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

// poolWaitTrace adds to trace the timing of GetConn -> GotConn. The mutex
// is belt and braces: the hooks normally run on the RoundTrip goroutine.
func poolWaitTrace(o *Owner, trace *httptrace.ClientTrace) {
	var (
		mu    sync.Mutex
		start time.Time
	)
	trace.GetConn = func(string) {
		mu.Lock()
		start = o.clock.Now()
		mu.Unlock()
	}
	trace.GotConn = func(httptrace.GotConnInfo) {
		mu.Lock()
		s := start
		mu.Unlock()
		if !s.IsZero() {
			o.in.poolWait.Observe(max(o.clock.Now().Sub(s), 0).Seconds())
		}
	}
}

// noRewind is a request body net/http cannot rewind, hence never replays.
type noRewind struct{ io.ReadCloser }

// replayable mirrors net/http's rule for when Transport may re-send.
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return hasIdempotencyKey(req)
}

func hasIdempotencyKey(req *http.Request) bool {
	_, a := req.Header["Idempotency-Key"]
	_, b := req.Header["X-Idempotency-Key"]
	return a || b
}

// idempotent reports whether re-sending req after an ambiguous failure (the
// request may have reached the provider) is safe: RFC 9110 idempotent
// methods, or an explicit idempotency key.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	return hasIdempotencyKey(req)
}

// resendable reports whether req's body, if any, can be sent again.
func resendable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// StatusError is a provider's answer with a failing HTTP status.
// HTTPClient returns it, classified, for 429 and 5xx responses and for
// the statuses of WithRetryableStatuses.
type StatusError struct {
	StatusCode int
	Status     string
	Header     http.Header
	// Wait is the parsed Retry-After (0 when absent or invalid).
	Wait time.Duration
	// Exhausted is true when the response carried HeaderRetriesExhausted:
	// the provider's own owner gave up, so the answer is final (Permanent,
	// and never retried by the Owner whatever Classify says).
	Exhausted bool

	class Class
}

func (e *StatusError) Error() string {
	if e.Wait > 0 {
		return fmt.Sprintf("http status %s (retry after %v)", e.Status, e.Wait)
	}
	return "http status " + e.Status
}

// RetryAfter implements RetryAfterer.
func (e *StatusError) RetryAfter() time.Duration { return e.Wait }

// Temporary reports whether the status is one worth retrying.
func (e *StatusError) Temporary() bool { return e.class == Temporary }

func (e *StatusError) retryClass() Class { return e.class }

// HTTPClient performs each HTTP request as one Owner operation. Each attempt
// goes through a Transport and reads the whole response body, up to
// WithMaxBodyBytes, before the attempt ends, so the per-attempt timeout and
// the admission slot cover the body too and the returned response's body is
// already in memory.
//
// Before any retry comes the question whether the request is safe to
// repeat. It is when its method is idempotent (GET, HEAD, OPTIONS, TRACE,
// PUT, DELETE) or it carries an Idempotency-Key or X-Idempotency-Key
// header, net/http's rule, or with WithNonIdempotentRetries; and its body,
// if any, can be sent again (Request.GetBody, which http.NewRequest sets
// for in-memory bodies). A request that is not safe to repeat gets one
// attempt: when that attempt fails in a way that would have been retried,
// the operation ends at once as ResultNotRetryable (ErrNotRetryable), with
// no retry counted, no backoff slept and no budget spent. A POST whose
// connection could not even be made is retried: it was never sent.
//
// An attempt's answer is classified as follows:
//   - 429 and 503 (or the statuses of WithRetryableStatuses) are Temporary,
//     with Retry-After (delta-seconds or HTTP-date) as the least wait
//     before the next attempt;
//   - any other 5xx is Permanent (only documented temporary failures are
//     retried); the body is discarded and a *StatusError returned;
//   - a 429 or 5xx with HeaderRetriesExhausted is final: the provider's
//     own owner has already retried it;
//   - any other status is a successful attempt: the provider answered, and
//     the response (4xx included) is returned to the caller to interpret;
//     a body over the size limit is Permanent (ErrBodyTooLarge);
//   - a failure to connect (the request was never sent) is Temporary;
//   - a timeout or a broken connection after the request may have been
//     sent is Temporary (and not retried when the request is not safe to
//     repeat, as above: a timed-out payment may have been charged);
//   - TLS certificate and unknown-host errors are Permanent.
//
// With Policy.HedgeDelay, only idempotent requests (as above) whose body
// can be sent again are hedged; the others run one attempt at a time.
type HTTPClient struct {
	s httpSender
}

// DefaultMaxBodyBytes is the response body size limit of HTTPClient and
// RoundTripper when WithMaxBodyBytes is not given: large enough for any
// API answer, small enough that a runaway body cannot exhaust memory.
const DefaultMaxBodyBytes = 10 << 20

// ErrBodyTooLarge is wrapped by the error of an attempt whose successful
// response body exceeded the size limit (WithMaxBodyBytes). Such an attempt
// is Permanent: the provider would send the same body again.
var ErrBodyTooLarge = errors.New("retry: response body too large")

// HTTPOption configures NewHTTPClient and NewRoundTripper.
type HTTPOption func(*httpOptions)

type httpOptions struct {
	maxBody       int64
	propagate     bool
	sendPriority  bool
	anyMethod     bool
	retryStatuses []int // Temporary statuses; nil means 429 and 503
}

// WithNonIdempotentRetries retries requests of any method as if each
// carried an Idempotency-Key: for a provider known to deduplicate them, or
// to refuse with 429/503 before doing any work. Requests that are not
// idempotent are still never hedged, and a body must still be re-sendable.
func WithNonIdempotentRetries() HTTPOption {
	return func(o *httpOptions) { o.anyMethod = true }
}

// WithRetryableStatuses sets the HTTP statuses that are Temporary, in place
// of the default 429 and 503 (for example 429, 502, 503, 504 for a provider
// behind a gateway that answers 502 while it restarts). Every other 5xx
// stays Permanent; Retry-After is read on every status of the set.
func WithRetryableStatuses(codes ...int) HTTPOption {
	set := append([]int{}, codes...)
	return func(o *httpOptions) { o.retryStatuses = set }
}

// WithMaxBodyBytes sets the largest successful response body read into
// memory; a larger one fails the attempt with ErrBodyTooLarge. n <= 0
// means DefaultMaxBodyBytes.
func WithMaxBodyBytes(n int64) HTTPOption {
	return func(o *httpOptions) {
		if n > 0 {
			o.maxBody = n
		}
	}
}

// WithDeadlinePropagation sends each attempt's remaining time to the
// provider in HeaderTimeout (Transport.PropagateDeadline), for a
// DeadlineHandler there. Leave it off towards providers that do not read
// it.
func WithDeadlinePropagation() HTTPOption {
	return func(o *httpOptions) { o.propagate = true }
}

// WithPriorityHeader sends each operation's priority to the provider in
// HeaderPriority, for a ShedHandler there.
func WithPriorityHeader() HTTPOption {
	return func(o *httpOptions) { o.sendPriority = true }
}

// defaultRetryStatuses are the statuses HTTPClient retries by default.
var defaultRetryStatuses = []int{http.StatusTooManyRequests, http.StatusServiceUnavailable}

func newHTTPOptions(opts []HTTPOption) httpOptions {
	o := httpOptions{maxBody: DefaultMaxBodyBytes, retryStatuses: defaultRetryStatuses}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// NewHTTPClient returns an HTTPClient running requests under o, with base as
// the Transport's base (nil means http.DefaultTransport). Redirects are
// followed as by http.Client, within the same attempt.
func NewHTTPClient(o *Owner, base http.RoundTripper, opts ...HTTPOption) *HTTPClient {
	hopts := newHTTPOptions(opts)
	client := &http.Client{Transport: &Transport{Base: base, PropagateDeadline: hopts.propagate}}
	return &HTTPClient{s: httpSender{owner: o, send: client.Do, opts: hopts}}
}

// Do sends req under the Owner with priority p and returns the successful
// attempt's response, its body fully read, or the Owner's *Error. req's
// context is ignored in favour of ctx. A request with a body needs GetBody
// (http.NewRequest sets it for in-memory bodies) to be retried.
func (c *HTTPClient) Do(ctx context.Context, p Priority, req *http.Request) (*http.Response, error) {
	return c.s.do(ctx, p, req)
}

// RoundTripper is an http.RoundTripper that runs every request as one
// Owner operation, exactly as HTTPClient.Do does, so that code taking an
// *http.Client (an SDK, a generated client) gets the owner's deadline,
// admission, budget, backoff and metrics without changes:
//
//	client := &http.Client{Transport: retry.NewRoundTripper(owner, nil)}
//	ctx = retry.WithPriority(ctx, retry.Critical) // default Sheddable
//	sdk := vendor.NewClient(vendor.WithHTTPClient(client))
//
// The priority comes from the request's context (WithPriority). The
// successful response's body is already in memory, read within the
// attempt up to WithMaxBodyBytes. A failed operation is returned as the
// RoundTrip error, the Owner's *Error (http.Client wraps it in a
// *url.Error; errors.Is and errors.As reach it), never as the last 429 or
// 503 response, so that nothing above retries it again. Turn the SDK's own
// retries off: they would multiply the owner's. Redirects are left to the
// http.Client above, each hop one operation.
type RoundTripper struct {
	s httpSender
}

// NewRoundTripper returns a RoundTripper running requests under o through a
// Transport over base (nil means http.DefaultTransport).
func NewRoundTripper(o *Owner, base http.RoundTripper, opts ...HTTPOption) *RoundTripper {
	hopts := newHTTPOptions(opts)
	t := &Transport{Base: base, PropagateDeadline: hopts.propagate}
	return &RoundTripper{s: httpSender{owner: o, send: t.RoundTrip, opts: hopts}}
}

// RoundTrip implements http.RoundTripper.
func (t *RoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.s.do(req.Context(), PriorityFrom(req.Context()), req)
	if err != nil {
		return nil, err
	}
	resp.Request = req // the attempt's request carried a context that is over now
	return resp, nil
}

type priorityKey struct{}

// WithPriority returns a copy of ctx that carries p for RoundTripper (and
// for PriorityFrom).
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityFrom returns the priority WithPriority put in ctx, or Sheddable,
// so that forgetting to choose never eats into the critical reserve.
func PriorityFrom(ctx context.Context) Priority {
	p, _ := ctx.Value(priorityKey{}).(Priority)
	return p
}

// httpSender is what HTTPClient and RoundTripper share: one request as one
// Owner operation, each attempt sent once by send.
type httpSender struct {
	owner *Owner
	send  func(*http.Request) (*http.Response, error)
	opts  httpOptions
}

func (c *httpSender) do(ctx context.Context, p Priority, req *http.Request) (*http.Response, error) {
	var sent atomic.Int32 // hedged attempts run at once
	// Safe to repeat is decided before anything is sent, never after a
	// failure: a body that cannot be sent again means one attempt.
	var noRetry string
	switch {
	case !resendable(req):
		noRetry = "the request body cannot be sent again (Request.GetBody is nil)"
	case !c.opts.anyMethod && !idempotent(req):
		noRetry = req.Method + " is not idempotent and carries no Idempotency-Key (WithNonIdempotentRetries)"
	}
	// Inline: net/http ends a round trip and a body read when their ctx is
	// done, so the attempt cannot outlive the deadline and the goroutine
	// handoff of Do would buy nothing. The base RoundTripper must honour
	// the request's context as net/http's does.
	v, err := c.owner.do(ctx, p, func(actx context.Context) error {
		a := actx.(*attemptCtx)
		n := sent.Add(1)
		r := req.WithContext(actx)
		if c.opts.sendPriority {
			r.Header = req.Header.Clone() // req's header is the caller's
			if r.Header == nil {
				r.Header = http.Header{}
			}
			r.Header.Set(HeaderPriority, p.String())
		}
		if n > 1 && !resendable(req) {
			return MarkPermanent(errors.New("retry: request body cannot be re-sent: Request.GetBody is nil"))
		}
		if n > 1 && req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				return MarkPermanent(err)
			}
			r.Body = body
		}
		resp, err := c.send(r)
		if err != nil {
			err, maybeSent := classifyTransportError(err)
			if maybeSent || !resendable(req) {
				a.noRetry = noRetry
			}
			return err
		}
		if serr := c.statusError(resp); serr != nil {
			// Drain a little so the connection can be reused.
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
			if serr.Exhausted {
				a.final.Store(true)
			}
			a.noRetry = noRetry
			return serr
		}
		b, err := readLimited(resp, c.opts.maxBody)
		_ = resp.Body.Close()
		if err != nil {
			if errors.Is(err, ErrBodyTooLarge) {
				return MarkPermanent(err)
			}
			a.noRetry = noRetry
			err, _ = classifyTransportError(err)
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		a.val = resp // per attempt: hedges may finish together
		return nil
	}, true, mayHedge(req))
	if sent.Load() == 0 && req.Body != nil {
		// No attempt took the body; a RoundTripper must close it anyway.
		_ = req.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	return v.(*http.Response), nil
}

// mayHedge reports whether req may be sent twice at once: idempotent, and
// its body can be sent again.
func mayHedge(req *http.Request) bool {
	return idempotent(req) && resendable(req)
}

// readLimited reads resp's body, refusing one over limit bytes without
// reading more than limit+1 of it.
func readLimited(resp *http.Response, limit int64) ([]byte, error) {
	tooLarge := func() error {
		return fmt.Errorf("%w: over %d bytes (WithMaxBodyBytes)", ErrBodyTooLarge, limit)
	}
	if resp.ContentLength > limit {
		return nil, tooLarge()
	}
	n := limit
	if n < math.MaxInt64 {
		n++ // one byte more tells "exactly limit" from "over"
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, n))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge()
	}
	return b, nil
}

// statusError returns the *StatusError of a failing response, or nil.
func (c *httpSender) statusError(resp *http.Response) *StatusError {
	code := resp.StatusCode
	retryable := slices.Contains(c.opts.retryStatuses, code)
	if !failureStatus(code) && !retryable {
		return nil
	}
	e := &StatusError{StatusCode: code, Status: resp.Status, Header: resp.Header, class: Permanent}
	if resp.Header.Get(HeaderRetriesExhausted) != "" {
		e.Exhausted = true
		return e
	}
	if retryable {
		e.class = Temporary
		if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), c.owner.clock.Now()); ok {
			e.Wait = d
		}
	}
	return e
}

// classifyTransportError marks a client.Do or body read error, and says
// whether the request may have reached the provider (false only when the
// connection could not be made).
func classifyTransportError(err error) (marked error, maybeSent bool) {
	var (
		cert *tls.CertificateVerificationError
		dns  *net.DNSError
		op   *net.OpError
	)
	switch {
	case errors.Is(err, context.Canceled):
		return err, true
	case errors.As(err, &cert):
		return MarkPermanent(err), false
	case errors.As(err, &dns) && dns.IsNotFound:
		return MarkPermanent(err), false
	case errors.As(err, &op) && op.Op == "dial":
		return MarkTemporary(err, 0), false // never sent: safe for any method
	}
	ambiguous := isTimeout(err) || errors.As(err, &op) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		// HTTP/2 refused the stream or went away, and would have re-sent it
		// had Transport not made the body non-rewindable. net/http does not
		// wrap the cause, so only the text identifies it.
		strings.Contains(err.Error(), "http2: Transport: cannot retry err")
	if !ambiguous {
		return MarkPermanent(err), true
	}
	// It may have reached the provider: retried only if safe to repeat
	// (httpSender decides that).
	return MarkTemporary(err, 0), true
}

// maxRetryAfterSeconds keeps delta-seconds from overflowing time.Duration.
const maxRetryAfterSeconds = math.MaxInt64 / int64(time.Second)

// ParseRetryAfter parses a Retry-After header value (RFC 9110 10.2.3):
// delta-seconds ("120") or an HTTP-date, relative to now. A date in the
// past means no wait (0, true). An empty or malformed value returns
// (0, false).
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) && strings.Trim(v, "0123456789") == "" {
				return time.Duration(maxRetryAfterSeconds) * time.Second, true
			}
			return 0, false
		}
		return time.Duration(min(n, maxRetryAfterSeconds)) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
