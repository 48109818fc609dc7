package dialect_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitHTTP polls url until it answers 200 or the deadline passes.
func waitHTTP(t *testing.T, url string, deadline time.Duration, alive func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		last = err
		if alive != nil {
			if err := alive(); err != nil {
				t.Fatalf("%s: peer exited: %v", url, err)
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s not ready after %s: %v", url, deadline, last)
		case <-tick.C:
		}
	}
}

// within checks got against want with a relative tolerance (an exact 0
// when want is 0).
func within(t *testing.T, what string, got model.Value, want, tol float64) {
	t.Helper()
	if !got.OK() {
		t.Errorf("%s: absent, want %.1f", what, want)
		return
	}
	if want == 0 {
		if got.V() != 0 {
			t.Errorf("%s = %.2f, want 0", what, got.V())
		}
		return
	}
	if d := math.Abs(got.V()-want) / want; d > tol {
		t.Errorf("%s = %.2f, want %.0f (off by %.1f%%, tolerance %.0f%%)", what, got.V(), want, 100*d, 100*tol)
	} else {
		t.Logf("%s = %.2f, ground truth %.0f (off by %.2f%%)", what, got.V(), want, 100*d)
	}
}

// fakeClock returns the times it is set to, so that a window's rate times
// its length is exactly the counters' increase.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }
