package scrape

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// TestMemoryBudgetShedsTheLargest: a reservation that does not fit sheds
// the largest other scrape (its context cancelled with a *ShedError) and
// waits for it to end: its bytes stay counted until it releases them. A
// reservation fails when the one asking is itself the largest.
func TestMemoryBudgetShedsTheLargest(t *testing.T) {
	const mib = 1 << 20
	b := NewMemoryBudget(10 * mib)
	start := func(name string) (*Hold, context.Context) {
		ctx, cancel := context.WithCancelCause(context.Background())
		return b.Start(ctx, name, cancel), ctx
	}
	big, bigCtx := start("big")
	small, smallCtx := start("small")
	steps := []struct {
		who      *Hold
		grow     int64
		wantErr  string // "" ok, "budget", "shed"
		wantUsed int64
	}{
		{big, 6 * mib, "", 6 * mib},
		{small, 1 * mib, "", 7 * mib},
		// 12 MiB would not fit, and big (6) is not larger than small
		// would be (1+5): small is the largest asking, it fails.
		{small, 5 * mib, "budget", 7 * mib},
		{small, 3 * mib, "", 10 * mib},
	}
	for i, s := range steps {
		err := s.who.Grow(s.grow)
		var be *BudgetError
		switch {
		case s.wantErr == "" && err != nil,
			s.wantErr == "budget" && !errors.As(err, &be):
			t.Fatalf("step %d: %v, want %s", i, err, s.wantErr)
		}
		if got := b.InUse(); got != s.wantUsed {
			t.Fatalf("step %d: %d bytes in use, want %d", i, got, s.wantUsed)
		}
	}
	// A third scrape needs 1 MiB: big (6) is the largest other, shed; the
	// third waits until big has ended, its 6 MiB counted until then.
	third, _ := start("third")
	granted := make(chan error, 1)
	go func() { granted <- third.Grow(mib) }()
	<-bigCtx.Done()
	var shed *ShedError
	if !errors.As(context.Cause(bigCtx), &shed) || shed.Target != "big" || shed.Size != 6*mib || smallCtx.Err() != nil {
		t.Fatalf("big's cause %v, small's %v", context.Cause(bigCtx), smallCtx.Err())
	}
	// big has not released: nothing can have been granted yet.
	select {
	case err := <-granted:
		t.Fatalf("granted (%v) while the shed scrape still holds its memory", err)
	default:
	}
	if got := b.InUse(); got != 10*mib {
		t.Errorf("in use %d while big is shed but running, want %d", got, 10*mib)
	}
	// The shed scrape can no longer grow; then it ends.
	if err := big.Grow(1); !errors.As(err, &shed) {
		t.Errorf("grow after shed: %v", err)
	}
	big.Release()
	if err := <-granted; err != nil {
		t.Fatal(err)
	}
	if got := b.InUse(); got != 5*mib || b.Shed() != 1 || b.Peak() != 10*mib {
		t.Errorf("in use %d, shed %d, peak %d", got, b.Shed(), b.Peak())
	}
	// Releases are idempotent.
	big.Release()
	small.Release()
	third.Release()
	third.Release()
	if got := b.InUse(); got != 0 {
		t.Errorf("%d bytes in use after every release", got)
	}
	if want := "shed: it held the most memory (6 MiB) when the scrapes' memory budget (10 MiB, --memory-limit) ran out"; shed.Error() != want {
		t.Errorf("message %q", shed.Error())
	}
}

// TestMemoryBudgetWaitEndsWithItsScrape: a scrape waiting for a shed one
// to end gives up when its own context ends (its timeout), with a
// WaitError wrapping that context's cause, and reserves nothing.
func TestMemoryBudgetWaitEndsWithItsScrape(t *testing.T) {
	const mib = 1 << 20
	b := NewMemoryBudget(4 * mib)
	bigCtx, bigCancel := context.WithCancelCause(context.Background())
	big := b.Start(bigCtx, "big", bigCancel)
	if err := big.Grow(3 * mib); err != nil {
		t.Fatal(err)
	}
	askCtx, askCancel := context.WithCancelCause(context.Background())
	ask := b.Start(askCtx, "ask", askCancel)
	granted := make(chan error, 1)
	go func() { granted <- ask.Grow(2 * mib) }()
	<-bigCtx.Done() // big is shed; it never ends here
	timeout := errors.New("timed out")
	askCancel(timeout)
	err := <-granted
	var wait *WaitError
	if !errors.As(err, &wait) || !errors.Is(err, timeout) || wait.Limit != 4*mib {
		t.Errorf("grow ended with %v, want a WaitError of the 4 MiB budget wrapping its context's cause", err)
	}
	ask.Release()
	if got := b.InUse(); got != 3*mib {
		t.Errorf("in use %d, want big's 3 MiB until it ends", got)
	}
	big.Release()
	if got := b.InUse(); got != 0 {
		t.Errorf("in use %d after every release", got)
	}
}

// TestMemoryBudgetChecksTheLiveHeap: with CheckHeap, a reservation of
// 1 MiB or more that the live heap leaves no room for under the process'
// limit is refused after one collection, though the budget has room; a
// smaller one never is; one the collection makes room for is granted.
func TestMemoryBudgetChecksTheLiveHeap(t *testing.T) {
	const mib = 1 << 20
	b := NewMemoryBudget(64 * mib)
	b.CheckHeap(100 * mib)
	heap, collections := int64(90*mib), 0
	b.live = func() int64 { return heap }
	b.collect = func() { collections++ }
	ctx, cancel := context.WithCancelCause(context.Background())
	h := b.Start(ctx, "big", cancel)
	err := h.Grow(20 * mib)
	var be *BudgetError
	if !errors.As(err, &be) || collections != 1 || b.InUse() != 0 || b.Refused() != 1 {
		t.Fatalf("grow of 20 MiB beside a 90 MiB heap: %v (collections %d, in use %d)", err, collections, b.InUse())
	}
	if want := "needs 20 MiB, more than the live heap (90 MiB) leaves under the process' memory limit of 100 MiB (--memory-limit)"; err.Error() != want {
		t.Errorf("message %q\nwant %q", err.Error(), want)
	}
	if err := h.Grow(mib - 1); err != nil || collections != 1 {
		t.Errorf("a step under 1 MiB: %v (collections %d)", err, collections)
	}
	b.collect = func() { collections++; heap = 50 * mib }
	if err := h.Grow(20 * mib); err != nil || collections != 2 {
		t.Errorf("after a collection found 50 MiB live: %v (collections %d)", err, collections)
	}
	h.Release()
}

// TestMemoryBudgetTryGrowNeverCollects: TryGrow declines a reservation
// the live heap leaves no room for without running a collection; Grow
// then runs the one.
func TestMemoryBudgetTryGrowNeverCollects(t *testing.T) {
	const mib = 1 << 20
	b := NewMemoryBudget(64 * mib)
	b.CheckHeap(100 * mib)
	collections := 0
	b.live = func() int64 { return 90 * mib }
	b.collect = func() { collections++ }
	ctx, cancel := context.WithCancelCause(context.Background())
	h := b.Start(ctx, "t", cancel)
	if h.TryGrow(20*mib) || collections != 0 || b.InUse() != 0 {
		t.Errorf("TryGrow beside a full heap: collections %d, in use %d", collections, b.InUse())
	}
	if err := h.Grow(20 * mib); err == nil || collections != 1 {
		t.Errorf("Grow: %v, collections %d", err, collections)
	}
	h.Release()
}

// TestBodyGrowthReservesTheCopy: a body of unknown length grows its
// buffer by doubling, and while the old buffer is copied into the new one
// both are live: a 3 MiB body's last step, from 2 to 4 MiB, holds 6 MiB,
// then 4.
func TestBodyGrowthReservesTheCopy(t *testing.T) {
	const mib = 1 << 20
	b := NewMemoryBudget(64 * mib)
	ctx, cancel := context.WithCancelCause(context.Background())
	h := b.Start(ctx, "t", cancel)
	resp := &http.Response{ContentLength: -1, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(make([]byte, 3*mib)))}
	var sb scrapeBuf
	body, err := sb.readBody(resp, 32*mib, h)
	if err != nil || len(body) != 3*mib {
		t.Fatalf("read %d bytes: %v", len(body), err)
	}
	if b.Peak() != 6*mib || b.InUse() != 4*mib {
		t.Errorf("peak %d, in use %d; want 6 MiB while copying, then the 4 MiB buffer", b.Peak(), b.InUse())
	}
	h.Release()
}

// TestScrapeTimedOutWaitingForMemorySaysSo: a scrape whose timeout
// strikes while it waits for a shed scrape to give its memory back says
// it waited for memory, not only that it timed out: the same words as
// a slow target would mislead whoever reads the status.
func TestScrapeTimedOutWaitingForMemorySaysSo(t *testing.T) {
	const mib = 1 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "retry_originals_total 1\n")
	}))
	defer srv.Close()
	b := NewMemoryBudget(mib)
	bigCtx, bigCancel := context.WithCancelCause(context.Background())
	big := b.Start(bigCtx, "big", bigCancel)
	if err := big.Grow(mib); err != nil {
		t.Fatal(err)
	}
	defer big.Release() // shed by the scrape below, and never ending before it
	store := model.NewStore(model.StoreConfig{History: 4})
	sc := NewScraper([]Target{{Name: "t", URL: srv.URL, Interval: time.Second, Timeout: 50 * time.Millisecond}}, store, Options{Memory: b})
	st := sc.ScrapeOnce(context.Background())
	want := "GET " + srv.URL + ": timed out after 50ms waiting for memory: the scrapes' memory budget (1 MiB, --memory-limit) was in use"
	if st[0].LastError != want || st[0].Up {
		t.Errorf("status: up %v, error %q\nwant %q", st[0].Up, st[0].LastError, want)
	}
	if b.Shed() != 1 || bigCtx.Err() == nil {
		t.Errorf("shed %d, big's context %v: the scrape should have shed big and waited for it", b.Shed(), bigCtx.Err())
	}
}
