package retry

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// HeaderTimeout is the request header that carries the caller's remaining
// time to the next hop, in the shape of gRPC's grpc-timeout ("250m" is
// 250 ms): see EncodeTimeout. A relative time, not an absolute deadline,
// because the two hosts' clocks need not agree.
const HeaderTimeout = "X-Request-Timeout"

// HeaderRetriesExhausted marks a failure response (429 or 5xx) of a
// service whose own retry owner gave up while serving the request: the
// retries were already spent below, so the caller must not retry on top
// (3 x 3 = 9 provider calls). DeadlineHandler sets it to "1"; Transport,
// HTTPClient and RoundTripper honour any non-empty value by never
// retrying the attempt. It plays the part of gRPC's retry pushback.
const HeaderRetriesExhausted = "X-Retries-Exhausted"

// exhaustedKey carries, in the context of a request DeadlineHandler serves,
// the *atomic.Bool an Owner sets when an operation started with that
// context fails.
type exhaustedKey struct{}

// timeoutUnits are grpc-timeout's units, coarsest last.
var timeoutUnits = []struct {
	unit byte
	d    time.Duration
}{
	{'n', time.Nanosecond}, {'u', time.Microsecond}, {'m', time.Millisecond},
	{'S', time.Second}, {'M', time.Minute}, {'H', time.Hour},
}

// maxTimeoutValue: grpc-timeout allows at most 8 digits.
const maxTimeoutValue = 99_999_999

// EncodeTimeout formats d as a grpc-timeout value: at most 8 digits and a
// unit (H, M, S, m, u, n). It uses milliseconds when d is at least 1 ms
// and fits, the next coarser unit that fits otherwise, and rounds down, so
// the next hop never believes it has more time than its caller left it. A
// d of zero or less is "0m".
func EncodeTimeout(d time.Duration) string {
	if d <= 0 {
		return "0m"
	}
	first := 2 // milliseconds
	switch {
	case d < time.Microsecond:
		first = 0
	case d < time.Millisecond:
		first = 1
	}
	for _, u := range timeoutUnits[first:] {
		if v := int64(d / u.d); v <= maxTimeoutValue {
			return strconv.FormatInt(v, 10) + string(u.unit)
		}
	}
	return strconv.FormatInt(int64(d/time.Hour), 10) + "H" // unreachable: MaxInt64 ns is 2562047 H
}

// ParseTimeout parses a grpc-timeout value ("250m", "3S", "100u"): 1 to 8
// digits and a unit. It reports false for anything else.
func ParseTimeout(s string) (time.Duration, bool) {
	if len(s) < 2 || len(s) > 9 {
		return 0, false
	}
	unit := s[len(s)-1]
	var d time.Duration
	for _, u := range timeoutUnits {
		if u.unit == unit {
			d = u.d
		}
	}
	if d == 0 {
		return 0, false
	}
	var v int64
	for _, c := range []byte(s[:len(s)-1]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if v > int64(maxDuration/d) {
		return maxDuration, true // 8 digits of hours overflow a Duration
	}
	return time.Duration(v) * d, true
}

const maxDuration = time.Duration(1<<63 - 1)

// setTimeoutHeader sets HeaderTimeout on r (whose header the caller owns)
// from its context's deadline, on the Owner's clock inside an attempt.
func setTimeoutHeader(r *http.Request) {
	ctx := r.Context()
	d, ok := ctx.Deadline()
	if !ok {
		return
	}
	now := time.Now()
	if o := ownerFrom(ctx); o != nil {
		now = o.clock.Now()
	}
	r.Header.Set(HeaderTimeout, EncodeTimeout(d.Sub(now)))
}

// DeadlineHandler is the server side of deadline propagation: it bounds
// each request's context by the caller's remaining time (HeaderTimeout),
// so that an Owner used while serving it, and anything else honouring the
// context, stops when the caller has given up instead of working for
// nobody. Wrap the handler with it before any expensive work:
//
//	http.Handle("/quote", &retry.DeadlineHandler{Next: quoteHandler, Max: 2 * time.Second, Metrics: sm})
//
// Every request is counted in retry_server_requests_total by whether its
// deadline was propagated, so the hops that drop it can be found.
//
// It also marks the answer of a request whose own Owner gave up: when an
// Owner operation started with the request's context (or one derived from
// it) failed and the handler answers 429 or 5xx, the response carries
// HeaderRetriesExhausted, and the caller's Owner does not retry what was
// retried here already. Put it outermost, so that every answer passes it.
// Next then writes to a wrapped ResponseWriter: reach Hijack, Flush and
// the write deadlines through http.NewResponseController, which unwraps it.
type DeadlineHandler struct {
	Next http.Handler
	// Max caps a propagated timeout: at a trust boundary, never let a
	// caller buy more of this service's time than it allows. Zero means no
	// cap.
	Max time.Duration
	// Default bounds requests that carry no valid HeaderTimeout; zero
	// leaves their context as it came.
	Default time.Duration
	// Metrics counts requests; nil counts nothing.
	Metrics *ServerMetrics
	// OmitExhausted leaves failure responses unmarked even when an Owner
	// gave up below, so callers may retry them again (a simulation of a
	// naive stack does this on purpose).
	OmitExhausted bool
}

// Values of retry_server_requests_total's "deadline" label.
const (
	deadlinePropagated = iota
	deadlineMissing
	deadlineInvalid
	numDeadlineStates
)

var deadlineStateNames = [numDeadlineStates]string{"propagated", "missing", "invalid"}

// ServeHTTP implements http.Handler.
func (h *DeadlineHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	state := deadlinePropagated
	timeout, ok := time.Duration(0), false
	if v := r.Header.Get(HeaderTimeout); v == "" {
		state = deadlineMissing
	} else if timeout, ok = ParseTimeout(v); !ok {
		state = deadlineInvalid
	}
	h.Metrics.countRequest(state)
	if state != deadlinePropagated {
		timeout = h.Default
	} else if h.Max > 0 {
		timeout = min(timeout, h.Max)
	}
	if timeout > 0 || state == deadlinePropagated {
		// A propagated "0m" means the caller has no time left: the ctx is
		// done at once, and honest work stops before it starts.
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		r = r.WithContext(ctx)
	}
	if !h.OmitExhausted {
		mark := new(atomic.Bool)
		r = r.WithContext(context.WithValue(r.Context(), exhaustedKey{}, mark))
		w = &exhaustedWriter{ResponseWriter: w, mark: mark}
	}
	h.Next.ServeHTTP(w, r)
}

// exhaustedWriter adds HeaderRetriesExhausted to a failure response once
// an Owner serving the request has given up.
type exhaustedWriter struct {
	http.ResponseWriter
	mark  *atomic.Bool
	wrote bool
}

func (w *exhaustedWriter) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.wrote = true
		if failureStatus(code) && w.mark.Load() {
			w.Header().Set(HeaderRetriesExhausted, "1")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *exhaustedWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher when the underlying writer does.
func (w *exhaustedWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *exhaustedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServerMetrics are the server-side families of docs/metrics.md, for
// DeadlineHandler and ShedHandler. Create one per registry.
type ServerMetrics struct {
	requests [numDeadlineStates]prometheus.Counter
	shed     [numPriorities]prometheus.Counter
}

// NewServerMetrics creates the server-side families and registers them on
// reg (nil: unregistered). It panics if registration fails.
func NewServerMetrics(reg prometheus.Registerer) *ServerMetrics {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "retry_server_requests_total",
		Help: "Requests served, by whether the caller propagated its deadline (propagated, missing, invalid).",
	}, []string{"deadline"})
	shed := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "retry_server_shed_total",
		Help: "Requests refused by local load shedding before any work, answered 503 or 429 with Retry-After.",
	}, []string{"priority"})
	m := &ServerMetrics{}
	for i := range numDeadlineStates {
		m.requests[i] = requests.WithLabelValues(deadlineStateNames[i])
	}
	for _, p := range []Priority{Sheddable, Critical} {
		m.shed[p.index()] = shed.WithLabelValues(p.String())
	}
	if reg != nil {
		reg.MustRegister(requests, shed)
	}
	return m
}

func (m *ServerMetrics) countShed(p Priority) {
	if m != nil {
		m.shed[p.index()].Inc()
	}
}

func (m *ServerMetrics) countRequest(state int) {
	if m != nil {
		m.requests[state].Inc()
	}
}
