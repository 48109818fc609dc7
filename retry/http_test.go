package retry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 10, 27, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"120", 120 * time.Second, true},
		{" 3 ", 3 * time.Second, true},
		{"0", 0, true},
		{"Tue, 27 Oct 2026 12:00:30 GMT", 30 * time.Second, true}, // IMF-fixdate
		{"Tuesday, 27-Oct-26 12:01:00 GMT", time.Minute, true},    // RFC 850
		{"Tue Oct 27 12:00:05 2026", 5 * time.Second, true},       // asctime
		{"Tue, 27 Oct 2026 11:00:00 GMT", 0, true},                // past: no wait
		{"99999999999999999999", time.Duration(maxRetryAfterSeconds) * time.Second, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"12abc", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := ParseRetryAfter(tt.in, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// httpHarness is a harness whose policy leaves room for second-long waits.
func httpHarness(t *testing.T) *harness {
	return newHarness(t, func(c *Config) {
		c.Policy = Policy{
			MaxAttempts:       3,
			Deadline:          10 * time.Second,
			PerAttemptTimeout: 5 * time.Second,
			MinAttemptTime:    50 * ms,
			BackoffBase:       25 * ms,
			BackoffCap:        200 * ms,
		}
	})
}

// sequence answers with the given handlers in order, then repeats the last.
func sequence(hs ...http.HandlerFunc) (http.Handler, *atomic.Int64) {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		hs[min(i, len(hs)-1)](w, r)
	}), &n
}

func status(code int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, http.StatusText(code))
	}
}

func TestHTTPClientHonoursRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		code       int
		retryAfter func(now time.Time) string
		wantSleep  time.Duration
	}{
		{"503 delta-seconds", http.StatusServiceUnavailable, func(time.Time) string { return "1" }, time.Second},
		{"429 http-date", http.StatusTooManyRequests, func(now time.Time) string {
			return now.Add(3 * time.Second).UTC().Format(http.TimeFormat)
		}, 3 * time.Second},
		{"503 without header uses jitter", http.StatusServiceUnavailable, nil, 25 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := httpHarness(t)
			h.clock.now = h.clock.now.Truncate(time.Second) // HTTP-dates have whole seconds
			var hdr []string
			if tt.retryAfter != nil {
				hdr = []string{"Retry-After", tt.retryAfter(h.clock.Now())}
			}
			handler, served := sequence(status(tt.code, hdr...), status(http.StatusOK))
			srv := httptest.NewServer(handler)
			defer srv.Close()

			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			resp, err := NewHTTPClient(h.owner, nil).Do(context.Background(), Critical, req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(body) != "OK" {
				t.Errorf("response = %d %q, want 200 \"OK\"", resp.StatusCode, body)
			}
			if got := h.clock.Sleeps(); !slices.Equal(got, []time.Duration{tt.wantSleep}) {
				t.Errorf("slept %v, want [%v]", got, tt.wantSleep)
			}
			if served.Load() != 2 {
				t.Errorf("server saw %d requests, want 2", served.Load())
			}
			if h.attempts(t, "temporary_error") != 1 || h.attempts(t, "success") != 1 || h.counter(t, h.m.rescued, "quote") != 1 {
				t.Error("want one temporary_error attempt, one success attempt, one rescue")
			}
			if got := histCount(t, h.m.poolWait, "quote"); got != 2 {
				t.Errorf("retry_pool_wait_seconds count = %d, want 2 (one per attempt)", got)
			}
		})
	}
}

func TestHTTPClientStatusClassification(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		code       int
		wantErr    error // nil: the response is returned
		wantServed int64
	}{
		{"404 is an answer", http.MethodGet, http.StatusNotFound, nil, 1},
		{"500 is permanent", http.MethodGet, http.StatusInternalServerError, ErrPermanentError, 1},
		{"502 is permanent", http.MethodGet, http.StatusBadGateway, ErrPermanentError, 1},
		{"503 is retried to the last attempt", http.MethodGet, http.StatusServiceUnavailable, ErrProviderError, 3},
		{"429 is retried for PUT", http.MethodPut, http.StatusTooManyRequests, ErrProviderError, 3},
		{"429 is not retried for POST", http.MethodPost, http.StatusTooManyRequests, ErrNotRetryable, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := httpHarness(t)
			handler, served := sequence(status(tt.code))
			srv := httptest.NewServer(handler)
			defer srv.Close()
			req, _ := http.NewRequest(tt.method, srv.URL, strings.NewReader("{}"))
			resp, err := NewHTTPClient(h.owner, nil).Do(context.Background(), Critical, req)
			if served.Load() != tt.wantServed {
				t.Errorf("server saw %d requests, want %d", served.Load(), tt.wantServed)
			}
			if tt.wantErr == nil {
				if err != nil || resp.StatusCode != tt.code {
					t.Fatalf("got %v, %v; want the %d response", resp, err, tt.code)
				}
				return
			}
			var se *StatusError
			if !errors.Is(err, tt.wantErr) || !errors.As(err, &se) || se.StatusCode != tt.code {
				t.Fatalf("err = %v, want %v carrying StatusError %d", err, tt.wantErr, tt.code)
			}
		})
	}
}

func TestHTTPClientReplaysBodyOnRetry(t *testing.T) {
	h := httpHarness(t)
	var mu sync.Mutex
	var bodies []string
	record := func(next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			bodies = append(bodies, string(b))
			mu.Unlock()
			next(w, r)
		}
	}
	handler, _ := sequence(record(status(503)), record(status(200)))
	srv := httptest.NewServer(handler)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"postcode":"01001"}`))
	req.Header.Set("Idempotency-Key", "q-01001")
	if _, err := NewHTTPClient(h.owner, nil).Do(context.Background(), Critical, req); err != nil {
		t.Fatal(err)
	}
	if want := []string{`{"postcode":"01001"}`, `{"postcode":"01001"}`}; !slices.Equal(bodies, want) {
		t.Errorf("bodies = %q, want %q", bodies, want)
	}
}

func TestHTTPClientConnectionRefusedIsTemporary(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens now: every dial is refused
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
			h := httpHarness(t)
			req, _ := http.NewRequest(method, addr, nil)
			_, err := NewHTTPClient(h.owner, nil).Do(context.Background(), Critical, req)
			var rerr *Error
			if !errors.Is(err, ErrProviderError) || !errors.As(err, &rerr) || rerr.Attempts != 3 {
				t.Fatalf("err = %v, want ErrProviderError after 3 attempts", err)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("err = %v, want it to wrap ECONNREFUSED", err)
			}
		})
	}
}

// Whether a request is safe to repeat is httpSender's question; here only
// the error's class and whether the request may have reached the provider.
func TestClassifyTransportError(t *testing.T) {
	urlErr := func(err error) error { return &url.Error{Op: "Post", URL: "http://provider/", Err: err} }
	refused := urlErr(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	reset := urlErr(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET})
	timeout := urlErr(context.DeadlineExceeded)

	tests := []struct {
		name     string
		err      error
		want     Class
		wantSent bool
	}{
		{"timeout", timeout, Temporary, true},
		{"reset", reset, Temporary, true},
		{"refused was never sent", refused, Temporary, false},
		{"unexpected EOF", urlErr(io.ErrUnexpectedEOF), Temporary, true},
		{"unknown host", urlErr(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "provider", IsNotFound: true}}), Permanent, false},
		{"bad certificate", urlErr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), Permanent, false},
		{"bad URL", urlErr(errors.New("unsupported protocol scheme")), Permanent, true},
		{"caller cancelled", urlErr(context.Canceled), Permanent, true},
		{"h2 refused stream", urlErr(errors.New("http2: Transport: cannot retry err [stream error: stream ID 3; REFUSED_STREAM] after Request.Body was written; define Request.GetBody to avoid this error")), Temporary, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, sent := classifyTransportError(tt.err)
			if c := DefaultClassify(got); c != tt.want {
				t.Errorf("class = %v, want %v", c, tt.want)
			}
			if sent != tt.wantSent {
				t.Errorf("maybe sent = %v, want %v", sent, tt.wantSent)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("classified error does not wrap the original")
			}
		})
	}
}

// closeSecondRequest serves requests, but drops the connection without a
// response on the second request: what a provider's keep-alive timeout or
// crash looks like to a client reusing the connection.
func closeSecondRequest(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 2 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_ = conn.Close()
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	return srv, &n
}

func TestTransportDisablesHiddenRetries(t *testing.T) {
	tests := []struct {
		name        string
		rt          func() http.RoundTripper
		wantServed  int64
		wantErrOnce bool
	}{
		// Control: plain net/http re-sends the GET on a new connection.
		{"net/http transport retries silently", func() http.RoundTripper { return &http.Transport{} }, 3, false},
		{"retry.Transport sends once", func() http.RoundTripper { return &Transport{Base: &http.Transport{}} }, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, served := closeSecondRequest(t)
			defer srv.Close()
			client := &http.Client{Transport: tt.rt()}
			var errs int
			for range 2 {
				resp, err := client.Get(srv.URL)
				if err != nil {
					errs++
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			if served.Load() != tt.wantServed {
				t.Errorf("provider saw %d requests, want %d", served.Load(), tt.wantServed)
			}
			if (errs == 1) != tt.wantErrOnce {
				t.Errorf("client errors = %d", errs)
			}
		})
	}
}

func TestTransportKeepsTheWire(t *testing.T) {
	type seen struct {
		method, body  string
		contentLength int64
		te            []string
	}
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, string(b), r.ContentLength, r.TransferEncoding})
		mu.Unlock()
	}))
	defer srv.Close()
	client := &http.Client{Transport: &Transport{}}
	for _, req := range []*http.Request{
		must(http.NewRequest(http.MethodGet, srv.URL, nil)),
		must(http.NewRequest(http.MethodHead, srv.URL, nil)),
		must(http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("abc"))),
		must(http.NewRequest(http.MethodPut, srv.URL, strings.NewReader("abcd"))),
	} {
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	want := []seen{
		{"GET", "", 0, nil},
		{"HEAD", "", 0, nil},
		{"POST", "abc", 3, nil},
		{"PUT", "abcd", 4, nil},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d requests, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].method != want[i].method || got[i].body != want[i].body ||
			got[i].contentLength != want[i].contentLength || len(got[i].te) != 0 {
			t.Errorf("request %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestTransportOverHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Proto+" "+r.Method+" "+string(b))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	h := httpHarness(t)
	c := NewHTTPClient(h.owner, srv.Client().Transport)
	for _, tt := range []struct{ method, body, want string }{
		{http.MethodGet, "", "HTTP/2.0 GET "},
		{http.MethodPost, "abc", "HTTP/2.0 POST abc"},
	} {
		req := must(http.NewRequest(tt.method, srv.URL, strings.NewReader(tt.body)))
		if tt.body == "" {
			req = must(http.NewRequest(tt.method, srv.URL, nil))
		}
		resp, err := c.Do(context.Background(), Critical, req)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != tt.want {
			t.Errorf("got %q, want %q", b, tt.want)
		}
	}
	if got := histCount(t, h.m.poolWait, "quote"); got != 2 {
		t.Errorf("retry_pool_wait_seconds count = %d, want 2", got)
	}
}

func TestTransportDoesNotModifyTheRequest(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	get := must(http.NewRequest(http.MethodGet, srv.URL, nil))
	put := must(http.NewRequest(http.MethodPut, srv.URL, strings.NewReader("x")))
	putBody := put.Body
	for _, req := range []*http.Request{get, put} {
		resp, err := (&Transport{}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if get.Body != nil {
		t.Errorf("GET Body = %v, want nil as given", get.Body)
	}
	if put.Body != putBody || put.GetBody == nil {
		t.Errorf("PUT Body or GetBody replaced on the caller's request")
	}
}

func TestObservePoolWaitOutsideAttemptIsNoop(t *testing.T) {
	ObservePoolWait(context.Background(), time.Second) // must not panic
	h := newHarness(t, nil)
	_ = h.owner.Do(context.Background(), Critical, func(ctx context.Context) error {
		ObservePoolWait(ctx, 3*ms)
		return nil
	})
	if got := histCount(t, h.m.poolWait, "quote"); got != 1 {
		t.Errorf("retry_pool_wait_seconds count = %d, want 1", got)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
