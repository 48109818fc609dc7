package sim

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/retrytop/retrytop/retry"
)

// A hop with PropagateDeadline works within what its caller has left (the
// library's HeaderTimeout, read by retry.DeadlineHandler) and counts the
// request as propagated; without it, its own policy alone bounds it.
func TestHopPropagatesDeadlineThroughTheLibrary(t *testing.T) {
	tests := []struct {
		name             string
		propagate        bool
		maxSent, minSent time.Duration // what the hop sends on, given ~600 ms from its caller
		wantPropagated   float64       // -1: family absent
	}{
		{"propagating", true, 600 * time.Millisecond, 0, 1},
		{"not propagating", false, 1500 * time.Millisecond, time.Second, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var sent []string
			stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				sent = append(sent, r.Header.Get(retry.HeaderTimeout))
				mu.Unlock()
				_, _ = w.Write([]byte("ok"))
			}))
			defer stub.Close()

			reg := prometheus.NewRegistry()
			server, err := newHop("client", "client", "provider", stub.URL, false, HopPolicy{
				Retry:             retry.Policy{MaxAttempts: 1, Deadline: 2 * time.Second, DeadlineReserve: 50 * time.Millisecond, PerAttemptTimeout: 1500 * time.Millisecond},
				PropagateDeadline: tt.propagate,
			}, reg, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer closeIdleOf(server)
			srv := httptest.NewServer(server)
			defer srv.Close()
			caller, err := newHop("app", "app", "client", srv.URL, false, HopPolicy{
				Retry: retry.Policy{MaxAttempts: 1, Deadline: 5 * time.Second},
			}, nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer closeIdleOf(caller)

			ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
			defer cancel()
			if res := caller.call(ctx); res.err != nil {
				t.Fatalf("call: %v (%s)", res.err, res.result)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(sent) != 1 {
				t.Fatalf("stub saw %d requests, want 1", len(sent))
			}
			d, ok := retry.ParseTimeout(sent[0])
			if !ok || d > tt.maxSent || d < tt.minSent {
				t.Errorf("hop sent %s %q, want within [%v, %v]", retry.HeaderTimeout, sent[0], tt.minSent, tt.maxSent)
			}
			got, ok := value(families(t, reg), "retry_server_requests_total", map[string]string{"deadline": "propagated"})
			if !ok {
				got = -1
			}
			if got != tt.wantPropagated {
				t.Errorf("retry_server_requests_total{deadline=propagated} = %v, want %v", got, tt.wantPropagated)
			}
		})
	}
}

// closeIdleOf frees the idle connections of a hop's loopback transport.
func closeIdleOf(h *hop) {
	if c, ok := h.transport.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
