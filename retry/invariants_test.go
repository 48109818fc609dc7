package retry_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/retrytop/retrytop/retry"
)

// frozenClock is the package's fake clock, never advanced: backoff sleeps
// return at once and are tallied, hedge timers (hedgeAfter) fire at once,
// and a backoff of an operation whose ctx carries a cancelInBackoff func
// is cancelled before any of it is slept.
type frozenClock struct {
	*retry.FakeClock
	mu    sync.Mutex
	slept time.Duration // backoff actually slept
}

type cancelInBackoff struct{}

func (c *frozenClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d == hedgeAfter {
		return nil
	}
	if cancel, ok := ctx.Value(cancelInBackoff{}).(context.CancelFunc); ok {
		cancel()
		return ctx.Err()
	}
	c.mu.Lock()
	c.slept += d
	c.mu.Unlock()
	return nil
}

// The metric contract's identities hold under load: 100 goroutines mixing
// successes, failures, caller cancels (during an attempt and during a
// backoff), caller deadlines, capacity rejections, hedges and panics
// (awaited, and in hedge losers nobody awaits).
func TestMetricInvariantsUnderLoad(t *testing.T) {
	const (
		goroutines = 100
		perG       = 8
		kinds      = 8
	)
	reg := prometheus.NewRegistry()
	clock := &frozenClock{FakeClock: retry.NewFakeClock()}
	lim := retry.NewLimiter(60, 0)
	var onAttempt, onRetry, onPanic, calls atomic.Int64
	// Two owners on one registry, limiter and set of hooks: one hedges,
	// one does not (its attempts run one at a time, awaited by Do).
	owners := make([]*retry.Owner, 2)
	for i, dep := range []string{"catalog", "quote"} {
		owners[i] = newOwner(t, dep, reg, clock, func(c *retry.Config) {
			if dep == "catalog" {
				c.Policy.HedgeDelay = hedgeAfter
			}
			c.Limiter = lim
			c.Budget = filled(2000)
			c.Rand = func(n int64) int64 { return n - 1 } // backoffs of 25 and 50 ms, never hedgeAfter
			c.OnAttempt = func(retry.AttemptInfo) { onAttempt.Add(1) }
			c.OnRetry = func(retry.RetryInfo) { onRetry.Add(1) }
			c.OnPanic = func(*retry.PanicError) { onPanic.Add(1) }
		})
	}
	errTemp := retry.MarkTemporary(errors.New("503"), 0)
	run := func(o *retry.Owner, kind int) {
		defer func() { _ = recover() }() // the awaited panics
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		switch kind {
		case 3:
			ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
		case 4:
			ctx = context.WithValue(ctx, cancelInBackoff{}, cancel)
		}
		var n atomic.Int32
		_ = o.Do(ctx, retry.Priority(kind%2), func(actx context.Context) error {
			calls.Add(1)
			i := n.Add(1)
			switch kind {
			case 0: // success
				return nil
			case 1, 4: // failure; 4 is cancelled in its backoff
				return errTemp
			case 2: // the caller cancels during the attempt
				cancel()
				<-actx.Done()
				return actx.Err()
			case 3: // the caller's deadline passes during the attempt
				<-actx.Done()
				return actx.Err()
			case 5: // slow: hedged, the first to answer wins
				select {
				case <-actx.Done():
					return actx.Err()
				case <-time.After(2 * time.Millisecond):
					return nil
				}
			case 6: // panics while Do waits
				panic("boom")
			default: // hedged: the first attempt loses to the hedge and panics after
				if i == 1 && o.Policy().HedgeDelay > 0 {
					<-actx.Done()
					panic("loser boom")
				}
				return nil
			}
		})
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				run(owners[g%2], (g+i)%kinds)
			}
		}()
	}
	wg.Wait()
	waitFor(t, func() bool { return lim.InUse() == 0 }) // every attempt has returned

	attempts := metric(t, reg, "retry_attempts_total")
	originals := metric(t, reg, "retry_originals_total")
	results := metric(t, reg, "retry_results_total")
	retries := metric(t, reg, "retry_retries_total")
	backoff := metric(t, reg, "retry_backoff_seconds")
	clock.mu.Lock()
	slept := clock.slept.Seconds()
	clock.mu.Unlock()
	t.Logf("originals %v, attempts %v, retries %v, hedges %v, rejected %v, panics %v (%d handed to OnPanic), backoff %.3fs of %.3fs slept",
		originals, attempts, retries, metric(t, reg, "retry_hedges_total"),
		metric(t, reg, "retry_results_total", "result", "capacity_rejected"),
		metric(t, reg, "retry_attempt_panics_total"), onPanic.Load(), backoff, slept)
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"originals", originals, goroutines * perG},
		{"attempts vs attempt function calls", attempts, float64(calls.Load())},
		{"attempts vs OnAttempt calls", attempts, float64(onAttempt.Load())},
		{"retries vs OnRetry calls", retries, float64(onRetry.Load())},
		{"results vs originals", results, originals},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	if backoff > slept+1e-9 {
		t.Errorf("retry_backoff_seconds sum %.3f s > %.3f s slept", backoff, slept)
	}
	if metric(t, reg, "retry_attempt_panics_total") == 0 {
		t.Error("no panic counted: the mix lost its panics")
	}
	// A hedge wins, is abandoned, or ends without deciding: never two.
	hedges := metric(t, reg, "retry_hedges_total")
	if won, lost := metric(t, reg, "retry_hedges_won_total"), metric(t, reg, "retry_hedges_abandoned_total"); won+lost > hedges {
		t.Errorf("hedges won %v + abandoned %v > sent %v", won, lost, hedges)
	}
}
