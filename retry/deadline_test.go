package retry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestEncodeTimeout(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{250 * time.Millisecond, "250m"},
		{1500 * time.Microsecond, "1m"}, // rounded down, never up
		{999 * time.Microsecond, "999u"},
		{500 * time.Nanosecond, "500n"},
		{0, "0m"},
		{-time.Second, "0m"},
		{99_999_999 * time.Millisecond, "99999999m"},
		{100_000_000 * time.Millisecond, "100000S"},
		{maxDuration, "2562047H"},
	}
	for _, tt := range tests {
		if got := EncodeTimeout(tt.d); got != tt.want {
			t.Errorf("EncodeTimeout(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestParseTimeout(t *testing.T) {
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"250m", 250 * time.Millisecond, true},
		{"3S", 3 * time.Second, true},
		{"2M", 2 * time.Minute, true},
		{"1H", time.Hour, true},
		{"100u", 100 * time.Microsecond, true},
		{"5n", 5, true},
		{"0m", 0, true},
		{"99999999H", maxDuration, true}, // saturates instead of overflowing
		{"", 0, false},
		{"m", 0, false},
		{"250", 0, false},
		{"25x", 0, false},
		{"-1m", 0, false},
		{"1.5S", 0, false},
		{"123456789m", 0, false}, // 9 digits
	}
	for _, tt := range tests {
		got, ok := ParseTimeout(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseTimeout(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
	// Encoding then parsing never gives the next hop more time.
	for _, d := range []time.Duration{1, 999, 1234567, 250 * time.Millisecond, 3*time.Hour + 1, maxDuration} {
		got, ok := ParseTimeout(EncodeTimeout(d))
		if !ok || got > d || (d >= time.Millisecond && d < 27*time.Hour && d-got >= time.Millisecond) {
			t.Errorf("ParseTimeout(EncodeTimeout(%v)) = %v, %v", d, got, ok)
		}
	}
}

func TestDeadlineHandler(t *testing.T) {
	tests := []struct {
		name    string
		header  string // "" sends none
		max     time.Duration
		def     time.Duration
		want    time.Duration // 0: no deadline
		wantLbl string
	}{
		{"propagated", "250m", 0, 0, 250 * time.Millisecond, "propagated"},
		{"capped at the trust boundary", "30S", 2 * time.Second, 0, 2 * time.Second, "propagated"},
		{"under the cap", "1S", 2 * time.Second, 0, time.Second, "propagated"},
		{"missing", "", 2 * time.Second, 0, 0, "missing"},
		{"missing with a default", "", 0, 500 * time.Millisecond, 500 * time.Millisecond, "missing"},
		{"invalid", "soon", 0, 0, 0, "invalid"},
		{"invalid with a default", "1.5S", 0, time.Second, time.Second, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			sm := NewServerMetrics(reg)
			var got time.Time
			var has bool
			h := &DeadlineHandler{Max: tt.max, Default: tt.def, Metrics: sm,
				Next: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got, has = r.Context().Deadline() })}
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.header != "" {
				req.Header.Set(HeaderTimeout, tt.header)
			}
			before := time.Now()
			h.ServeHTTP(httptest.NewRecorder(), req)
			after := time.Now()
			switch {
			case tt.want == 0 && has:
				t.Errorf("deadline %v, want none", got)
			case tt.want > 0 && (!has || got.Sub(before) < tt.want || got.Sub(after) > tt.want):
				t.Errorf("deadline in %v (has %v), want %v", got.Sub(before), has, tt.want)
			}
			for _, lbl := range deadlineStateNames {
				want := 0.0
				if lbl == tt.wantLbl {
					want = 1
				}
				if v := testutil.ToFloat64(sm.requests[slices.Index(deadlineStateNames[:], lbl)]); v != want {
					t.Errorf("retry_server_requests_total{deadline=%q} = %v, want %v", lbl, v, want)
				}
			}
		})
	}
}

// The remaining time of each attempt, on the Owner's clock, reaches the
// server; a retry sends what is left.
func TestDeadlinePropagation(t *testing.T) {
	tests := []struct {
		name      string
		opts      []HTTPOption
		wantSent  []string
		wantLabel string
	}{
		{"with WithDeadlinePropagation", []HTTPOption{WithDeadlinePropagation()}, []string{"2000m", "1975m"}, "propagated"},
		{"without", nil, []string{"", ""}, "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := httpHarness(t)
			var mu sync.Mutex
			var sent []string
			var deadlines []bool
			sm := NewServerMetrics(nil)
			handler, _ := sequence(status(503), status(200))
			srv := httptest.NewServer(&DeadlineHandler{Metrics: sm, Next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, has := r.Context().Deadline()
				mu.Lock()
				sent = append(sent, r.Header.Get(HeaderTimeout))
				deadlines = append(deadlines, has)
				mu.Unlock()
				handler.ServeHTTP(w, r)
			})})
			defer srv.Close()
			ctx := withFakeDeadline(context.Background(), h.clock.Now().Add(2*time.Second))
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			if _, err := NewHTTPClient(h.owner, nil, tt.opts...).Do(ctx, Critical, req); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sent, tt.wantSent) {
				t.Errorf("%s sent %q, want %q", HeaderTimeout, sent, tt.wantSent)
			}
			if want := tt.wantLabel == "propagated"; !slices.Equal(deadlines, []bool{want, want}) {
				t.Errorf("server contexts had deadlines %v, want %v", deadlines, want)
			}
			if got := testutil.ToFloat64(sm.requests[slices.Index(deadlineStateNames[:], tt.wantLabel)]); got != 2 {
				t.Errorf("retry_server_requests_total{deadline=%q} = %v, want 2", tt.wantLabel, got)
			}
			if req.Header.Get(HeaderTimeout) != "" {
				t.Error("the caller's request was modified")
			}
		})
	}
}

func TestServerMetricsMatchTheContract(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewServerMetrics(reg)
	const want = `
# HELP retry_server_requests_total Requests served, by whether the caller propagated its deadline (propagated, missing, invalid).
# TYPE retry_server_requests_total counter
retry_server_requests_total{deadline="invalid"} 0
retry_server_requests_total{deadline="missing"} 0
retry_server_requests_total{deadline="propagated"} 0
# HELP retry_server_shed_total Requests refused by local load shedding before any work, answered 503 or 429 with Retry-After.
# TYPE retry_server_shed_total counter
retry_server_shed_total{priority="critical"} 0
retry_server_shed_total{priority="sheddable"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
