package sim

import (
	"net"
	"net/http"
	"time"
)

// HTTP headers the sim's hops speak.
const (
	// HeaderResult carries, on a failed response, the result that ended
	// the operation where it was decided (a retry result such as
	// capacity_rejected, or provider_error / provider_overloaded from the
	// provider), so the end user can tell a local refusal from a timeout.
	HeaderResult = "X-Sim-Result"
)

// The caller's remaining time travels in retry.HeaderTimeout (see
// HopPolicy.PropagateDeadline).

// newTransport is one hop's HTTP client transport to its next hop: enough
// idle keep-alive connections that steady traffic does not churn loopback
// ports, and no transport-level retries or timeouts of its own (the retry
// owner's attempt context bounds every call).
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2048,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
}
