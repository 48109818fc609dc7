package retry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestRoundTripperRunsEachRequestAsOneOperation(t *testing.T) {
	tests := []struct {
		name       string
		handlers   []http.HandlerFunc
		wantStatus int   // 0: want an error
		wantErr    error // with wantStatus 0
		wantServed int64
		wantResult Result
	}{
		{"503 then 200 is retried", []http.HandlerFunc{status(503), status(200)}, 200, nil, 2, ResultSuccess},
		{"404 is an answer", []http.HandlerFunc{status(404)}, 404, nil, 1, ResultSuccess},
		{"503 to the last attempt is an error, not a response", []http.HandlerFunc{status(503)}, 0, ErrProviderError, 3, ResultProviderError},
		{"500 is permanent", []http.HandlerFunc{status(500)}, 0, ErrPermanentError, 1, ResultPermanentError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := httpHarness(t)
			handler, served := sequence(tt.handlers...)
			srv := httptest.NewServer(handler)
			defer srv.Close()
			client := &http.Client{Transport: NewRoundTripper(h.owner, nil)}
			req, _ := http.NewRequestWithContext(WithPriority(context.Background(), Critical), http.MethodGet, srv.URL, nil)
			resp, err := client.Do(req)
			if served.Load() != tt.wantServed {
				t.Errorf("server saw %d requests, want %d", served.Load(), tt.wantServed)
			}
			if got := h.result(t, Critical, tt.wantResult); got != 1 {
				t.Errorf("retry_results_total{critical,%s} = %v, want 1", tt.wantResult, got)
			}
			if tt.wantStatus == 0 {
				var oe *Error
				if !errors.Is(err, tt.wantErr) || !errors.As(err, &oe) || oe.Attempts != int(tt.wantServed) {
					t.Fatalf("err = %v, want %v after %d attempts", err, tt.wantErr, tt.wantServed)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || string(body) != http.StatusText(tt.wantStatus) {
				t.Errorf("response = %d %q, want %d", resp.StatusCode, body, tt.wantStatus)
			}
			if resp.Request != req {
				t.Error("resp.Request is not the caller's request")
			}
		})
	}
}

func TestRoundTripperPriorityFromContext(t *testing.T) {
	tests := []struct {
		name       string
		ctx        func(context.Context) context.Context
		wantStatus int // 0: capacity rejected
	}{
		{"no priority is sheddable and shed", func(c context.Context) context.Context { return c }, 0},
		{"sheddable is shed", func(c context.Context) context.Context { return WithPriority(c, Sheddable) }, 0},
		{"critical takes the reserved slot", func(c context.Context) context.Context { return WithPriority(c, Critical) }, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := NewLimiter(2, 1)
			if !lim.TryAcquire(Sheddable) { // the one sheddable slot is busy
				t.Fatal("setup: no slot")
			}
			h := newHarness(t, func(c *Config) { c.Limiter = lim })
			handler, served := sequence(status(200))
			srv := httptest.NewServer(handler)
			defer srv.Close()
			closed := &closeRecorder{Reader: strings.NewReader("x")}
			req, _ := http.NewRequestWithContext(tt.ctx(context.Background()), http.MethodPut, srv.URL, closed)
			resp, err := (&http.Client{Transport: NewRoundTripper(h.owner, nil)}).Do(req)
			if tt.wantStatus == 0 {
				if !errors.Is(err, ErrCapacityRejected) || served.Load() != 0 {
					t.Fatalf("err = %v, served %d; want capacity rejected, nothing sent", err, served.Load())
				}
				if closed.n.Load() == 0 {
					t.Error("request body not closed when no attempt was made")
				}
				return
			}
			if err != nil || resp.StatusCode != tt.wantStatus {
				t.Fatalf("got %v, %v; want %d", resp, err, tt.wantStatus)
			}
		})
	}
}

type closeRecorder struct {
	io.Reader
	n atomic.Int32
}

func (c *closeRecorder) Close() error { c.n.Add(1); return nil }

func TestPriorityFromDefaultsToSheddable(t *testing.T) {
	tests := []struct {
		ctx  context.Context
		want Priority
	}{
		{context.Background(), Sheddable},
		{WithPriority(context.Background(), Critical), Critical},
		{WithPriority(WithPriority(context.Background(), Critical), Sheddable), Sheddable},
	}
	for i, tt := range tests {
		if got := PriorityFrom(tt.ctx); got != tt.want {
			t.Errorf("%d: PriorityFrom = %v, want %v", i, got, tt.want)
		}
	}
}

func TestBodySizeLimit(t *testing.T) {
	body := func(s string, chunked bool) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if chunked {
				w.(http.Flusher).Flush() // no Content-Length
			}
			_, _ = io.WriteString(w, s)
		}
	}
	tests := []struct {
		name    string
		limit   int64
		handler http.HandlerFunc
		wantErr bool
		wantLen int
	}{
		{"at the limit", 5, body("12345", false), false, 5},
		{"over the limit, Content-Length", 5, body("123456", false), true, 0},
		{"over the limit, chunked", 5, body("123456", true), true, 0},
		{"at the limit, chunked", 5, body("12345", true), false, 5},
		{"default limit", 0, body(strings.Repeat("x", 1<<16), false), false, 1 << 16},
	}
	clients := map[string]func(o *Owner, limit int64, req *http.Request) (*http.Response, error){
		"HTTPClient": func(o *Owner, limit int64, req *http.Request) (*http.Response, error) {
			return NewHTTPClient(o, nil, WithMaxBodyBytes(limit)).Do(context.Background(), Critical, req)
		},
		"RoundTripper": func(o *Owner, limit int64, req *http.Request) (*http.Response, error) {
			return (&http.Client{Transport: NewRoundTripper(o, nil, WithMaxBodyBytes(limit))}).Do(req)
		},
	}
	for cname, do := range clients {
		for _, tt := range tests {
			t.Run(cname+"/"+tt.name, func(t *testing.T) {
				h := httpHarness(t)
				handler, served := sequence(tt.handler)
				srv := httptest.NewServer(handler)
				defer srv.Close()
				req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
				resp, err := do(h.owner, tt.limit, req)
				if !tt.wantErr {
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(resp.Body)
					if len(b) != tt.wantLen {
						t.Errorf("body has %d bytes, want %d", len(b), tt.wantLen)
					}
					return
				}
				if !errors.Is(err, ErrBodyTooLarge) || !errors.Is(err, ErrPermanentError) {
					t.Fatalf("err = %v, want ErrBodyTooLarge as a permanent error", err)
				}
				if served.Load() != 1 || h.attempts(t, "permanent_error") != 1 {
					t.Errorf("served %d, permanent_error attempts %v; want 1, 1 (never retried)", served.Load(), h.attempts(t, "permanent_error"))
				}
			})
		}
	}
}
