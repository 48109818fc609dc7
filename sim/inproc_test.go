package sim

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

type ctxKey struct{}

// The in-process transport behaves towards caller and handler as a
// loopback round trip does: the answer as written, the caller's cancel and
// deadline end the round trip at once with the context's error, the
// handler sees its caller hang up but neither the caller's deadline nor
// its context values. In virtual time, so "at once" is exact.
func TestInProcessRoundTrip(t *testing.T) {
	type seen struct {
		deadline    bool
		value       any
		header      string
		cancelledAt time.Duration // when the handler's context ended, from the start
	}
	tests := []struct {
		name    string
		work    time.Duration // the handler's work before it answers
		caller  func(context.Context) (context.Context, context.CancelFunc)
		cancel  time.Duration // the caller cancels after this (0: never)
		wantErr error
		wantAt  time.Duration // when RoundTrip returns
		// wantCancel is when the handler's context ends: when the caller
		// gives up, else when the handler returns.
		wantCancel time.Duration
	}{
		{"answer", 30 * time.Millisecond, nil, 0, nil, 30 * time.Millisecond, 30 * time.Millisecond},
		{"caller cancels", time.Second, nil, 100 * time.Millisecond, context.Canceled, 100 * time.Millisecond, 100 * time.Millisecond},
		{"caller deadline", time.Second, func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 300*time.Millisecond)
		}, 0, context.DeadlineExceeded, 300 * time.Millisecond, 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var got seen
				start := time.Now()
				tr := newInProcess()
				tr.handlers["svc.sim"] = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, got.deadline = r.Context().Deadline()
					got.value = r.Context().Value(ctxKey{})
					got.header = r.Header.Get("X-Test")
					go func() {
						<-r.Context().Done()
						got.cancelledAt = time.Since(start)
					}()
					select {
					case <-time.After(tt.work):
					case <-r.Context().Done():
						return
					}
					w.Header().Set(HeaderResult, "provider_error")
					w.WriteHeader(http.StatusServiceUnavailable)
					_, _ = w.Write([]byte("busy"))
				})
				ctx := context.WithValue(context.Background(), ctxKey{}, "caller's")
				if tt.caller != nil {
					var cancel context.CancelFunc
					ctx, cancel = tt.caller(ctx)
					defer cancel()
				}
				if tt.cancel > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					defer cancel()
					time.AfterFunc(tt.cancel, cancel)
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.sim/work", nil)
				req.Header.Set("X-Test", "travels")
				resp, err := tr.RoundTrip(req)
				if at := time.Since(start); at != tt.wantAt {
					t.Errorf("RoundTrip returned after %v, want %v", at, tt.wantAt)
				}
				if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				if err == nil {
					body, _ := io.ReadAll(resp.Body)
					_ = resp.Body.Close()
					if resp.StatusCode != http.StatusServiceUnavailable || string(body) != "busy" ||
						resp.Header.Get(HeaderResult) != "provider_error" || resp.Request != req {
						t.Errorf("response %d %q %v", resp.StatusCode, body, resp.Header)
					}
				}
				tr.wait()
				synctest.Wait() // the handler's watcher has seen its cancel
				if got.deadline || got.value != nil || got.header != "travels" {
					t.Errorf("handler saw deadline %v, value %v, header %q; want none, none, travels", got.deadline, got.value, got.header)
				}
				if got.cancelledAt != tt.wantCancel {
					t.Errorf("handler's context ended after %v, want %v", got.cancelledAt, tt.wantCancel)
				}
			})
		})
	}
	t.Run("unknown host", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, "http://nowhere.sim/", nil)
		if _, err := newInProcess().RoundTrip(req); err == nil {
			t.Fatal("a request to a host nobody serves succeeded")
		}
	})
}
