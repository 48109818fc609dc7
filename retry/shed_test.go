package retry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestShedHandler(t *testing.T) {
	tests := []struct {
		name        string
		held        []Priority // slots taken before the request
		header      string
		h           ShedHandler
		wantCode    int
		wantAfter   string
		wantShedPri Priority
	}{
		{"free slot", nil, "", ShedHandler{}, 200, "", 0},
		{"unmarked is sheddable and shed", []Priority{Sheddable}, "", ShedHandler{}, 503, "1", Sheddable},
		{"sheddable is shed", []Priority{Sheddable}, "sheddable", ShedHandler{}, 503, "1", Sheddable},
		{"critical takes the reserve", []Priority{Sheddable}, "critical", ShedHandler{}, 200, "", 0},
		{"header value is case-insensitive", []Priority{Sheddable}, "Critical", ShedHandler{}, 200, "", 0},
		{"unknown value takes the default", []Priority{Sheddable}, "urgent", ShedHandler{DefaultPriority: Critical}, 200, "", 0},
		{"critical shed when all is taken", []Priority{Sheddable, Critical}, "critical", ShedHandler{}, 503, "1", Critical},
		{"429 with Retry-After rounded up", []Priority{Sheddable}, "", ShedHandler{StatusCode: 429, RetryAfter: 1500 * time.Millisecond}, 429, "2", Sheddable},
		{"own header name", []Priority{Sheddable}, "critical", ShedHandler{PriorityHeader: "X-Class"}, 200, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := NewLimiter(2, 1)
			for _, p := range tt.held {
				if !lim.TryAcquire(p) {
					t.Fatal("setup: no slot")
				}
			}
			sm := NewServerMetrics(nil)
			var inNext int
			h := tt.h
			h.Limiter, h.Metrics = lim, sm
			h.Next = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				inNext = lim.InUse()
				_, _ = w.Write([]byte("ok"))
			})
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			name := h.PriorityHeader
			if name == "" {
				name = HeaderPriority
			}
			if tt.header != "" {
				req.Header.Set(name, tt.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantCode || rec.Header().Get("Retry-After") != tt.wantAfter {
				t.Errorf("answer %d Retry-After %q, want %d %q", rec.Code, rec.Header().Get("Retry-After"), tt.wantCode, tt.wantAfter)
			}
			if lim.InUse() != len(tt.held) {
				t.Errorf("%d slots in use after the request, want %d (its own released)", lim.InUse(), len(tt.held))
			}
			for _, p := range []Priority{Sheddable, Critical} {
				want := 0.0
				if tt.wantCode != 200 && p == tt.wantShedPri {
					want = 1
				}
				if got := testutil.ToFloat64(sm.shed[p.index()]); got != want {
					t.Errorf("retry_server_shed_total{priority=%q} = %v, want %v", p, got, want)
				}
			}
			if tt.wantCode == 200 && inNext != len(tt.held)+1 {
				t.Errorf("Next ran with %d slots in use, want %d (its own held)", inNext, len(tt.held)+1)
			}
		})
	}
}

// The two halves together: a caller's owner sends its priority, the
// provider sheds with Retry-After, the owner waits at least that long and
// retries.
func TestShedHandlerAndOwner(t *testing.T) {
	tests := []struct {
		pri        Priority
		wantSleeps []time.Duration
		wantSent   []string
	}{
		{Sheddable, []time.Duration{time.Second}, []string{"sheddable", "sheddable"}},
		{Critical, nil, []string{"critical"}},
	}
	for _, tt := range tests {
		t.Run(tt.pri.String(), func(t *testing.T) {
			h := httpHarness(t)
			lim := NewLimiter(2, 1)
			lim.TryAcquire(Sheddable) // the provider is busy for sheddable work
			h.clock.onSleep = func(time.Duration) { lim.Release() }
			rec := &headerRecorder{name: HeaderPriority}
			rec.next = &ShedHandler{Limiter: lim, Next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte("ok"))
			})}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			resp, err := NewHTTPClient(h.owner, nil, WithPriorityHeader()).Do(context.Background(), tt.pri, req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("got %v, %v; want 200", resp, err)
			}
			if got := h.clock.Sleeps(); !slices.Equal(got, tt.wantSleeps) {
				t.Errorf("slept %v, want %v (Retry-After is the floor)", got, tt.wantSleeps)
			}
			if sent := rec.values(); !slices.Equal(sent, tt.wantSent) {
				t.Errorf("%s sent %q, want %q", HeaderPriority, sent, tt.wantSent)
			}
			if req.Header.Get(HeaderPriority) != "" {
				t.Error("the caller's request was modified")
			}
		})
	}
}

// headerRecorder records one header of every request it passes on.
type headerRecorder struct {
	name string
	next http.Handler
	mu   sync.Mutex
	got  []string
}

func (h *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.got = append(h.got, r.Header.Get(h.name))
	h.mu.Unlock()
	h.next.ServeHTTP(w, r)
}

func (h *headerRecorder) values() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}
