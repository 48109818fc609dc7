package retry

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HeaderPriority is the request header ShedHandler reads an operation's
// priority from ("critical" or "sheddable", Priority.String), and that
// HTTPClient and RoundTripper send with WithPriorityHeader.
const HeaderPriority = "X-Priority"

// ShedHandler is the provider's half of load shedding (seed 004): before
// any expensive work it takes a Limiter slot for the request, without
// waiting, and refuses the request at once when there is none, with 503
// (or StatusCode) and a Retry-After, so that callers back off instead of
// queueing. Sheddable requests are refused first; Critical ones may use
// the Limiter's reserved slots. The slot is held until Next returns.
//
//	lim := retry.NewLimiter(64, 8) // what the database pool can serve at once
//	http.Handle("/checkout", &retry.ShedHandler{Next: checkout, Limiter: lim, Metrics: sm})
//
// Put DeadlineHandler outside it, so that refused requests are counted
// there too. Refusals are counted in retry_server_shed_total.
type ShedHandler struct {
	Next http.Handler
	// Limiter bounds the requests in Next at once; it must not be nil.
	// Size it by the resource that really limits the service (a connection
	// pool, a dependency's quota), not by CPU.
	Limiter *Limiter
	// PriorityHeader names the header read for the priority; "" means
	// HeaderPriority.
	PriorityHeader string
	// DefaultPriority applies when the header is absent or unknown. The
	// zero value, Sheddable, keeps unmarked traffic out of the reserve.
	DefaultPriority Priority
	// StatusCode is the refusal's status; 0 means 503 Service Unavailable.
	// Use 429 for a per-client limit.
	StatusCode int
	// RetryAfter is sent with the refusal, rounded up to whole seconds;
	// 0 means one second.
	RetryAfter time.Duration
	// Metrics counts refusals; nil counts nothing.
	Metrics *ServerMetrics
}

// ServeHTTP implements http.Handler.
func (h *ShedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := h.priority(r)
	if !h.Limiter.TryAcquire(p) {
		h.Metrics.countShed(p)
		after := h.RetryAfter
		if after <= 0 {
			after = time.Second
		}
		secs := int64((after + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		code := h.StatusCode
		if code == 0 {
			code = http.StatusServiceUnavailable
		}
		http.Error(w, "overloaded, retry after "+strconv.FormatInt(secs, 10)+"s", code)
		return
	}
	defer h.Limiter.Release()
	h.Next.ServeHTTP(w, r)
}

func (h *ShedHandler) priority(r *http.Request) Priority {
	name := h.PriorityHeader
	if name == "" {
		name = HeaderPriority
	}
	switch v := r.Header.Get(name); {
	case strings.EqualFold(v, "critical"):
		return Critical
	case strings.EqualFold(v, "sheddable"):
		return Sheddable
	}
	return h.DefaultPriority
}
