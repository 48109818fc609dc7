package analysis

import (
	"errors"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// TestWholeBuilderBinBudget: a whole recording's report whose reduced
// series and bins would take more than MaxBinBytes (at
// WholeBytesPerSeriesBin each) fails with a *BinBudgetError naming them,
// from the batch that crossed it on (Err, so the load can stop), and
// builds as before at the budget exactly. wholeSvc's target has two
// reduced series (a counter and a gauge toward db).
func TestWholeBuilderBinBudget(t *testing.T) {
	const n, series = 100, 2
	times := every(1000, 1000, n)
	bins := len(newReportGrid(1000, times[0]).edges(times[n-1]))
	exact := int64(series * bins * WholeBytesPerSeriesBin)
	targets := []model.TargetStatus{{Name: "svc", Up: true}}
	for _, c := range []struct {
		limit int64
		fails bool
	}{{0, false}, {exact, false}, {exact - 1, true}} {
		opts := ReportOptions{Bin: time.Second, Window: 5 * time.Second, MaxBinBytes: c.limit}
		failedAt := -1
		_, wb, _ := wholeSvc(t, n, &opts, func(i int, wb *WholeBuilder) {
			if failedAt < 0 && wb.Err() != nil {
				failedAt = i
			}
		})
		_, err := wb.Report(targets)
		var be *BinBudgetError
		if !c.fails {
			if err != nil || failedAt >= 0 {
				t.Errorf("limit %d (%d series x %d bins fit): %v, Err at scrape %d", c.limit, series, bins, err, failedAt)
			}
			continue
		}
		if !errors.As(err, &be) || *be != (BinBudgetError{Series: series, Bins: bins, Bin: time.Second, Limit: c.limit}) {
			t.Fatalf("limit %d: %v, want %d series x %d bins of 1s over it", c.limit, err, series, bins)
		}
		// The first batch of bins is reduced once a scrape later than its
		// last bin's end plus half a bin is stored: bin 29 ends at scrape
		// 30, so at scrape 31.
		if failedAt != wholeBatch+1 {
			t.Errorf("Err set at scrape %d, want %d (the first batch)", failedAt, wholeBatch+1)
		}
		// One bin fewer fits: 2 s bins halve them.
		if got := be.WiderBin(); got != 2*time.Second {
			t.Errorf("WiderBin %v, want 2s", got)
		}
	}
}

// TestBinBudgetWiderBin: the narrowest of the usual widths whose bins fit,
// and none when even an hour's bins do not.
func TestBinBudgetWiderBin(t *testing.T) {
	for _, c := range []struct {
		e    BinBudgetError
		want time.Duration
	}{
		// The 1-hour dump under --memory-limit 128MiB: 67,108,864 /
		// (15,120 x 24) = 184 bins fit; 15 s makes 240, 20 s 180.
		{BinBudgetError{Series: 15120, Bins: 360, Bin: 10 * time.Second, Limit: 64 << 20}, 20 * time.Second},
		// A day at 10 s, 8,640 bins, where 1,000 fit: 2 min makes 720.
		{BinBudgetError{Series: 1, Bins: 8640, Bin: 10 * time.Second, Limit: 1000 * WholeBytesPerSeriesBin}, 2 * time.Minute},
		// Not even one bin fits.
		{BinBudgetError{Series: 100, Bins: 360, Bin: 10 * time.Second, Limit: 10}, 0},
	} {
		if got := c.e.WiderBin(); got != c.want {
			t.Errorf("%+v: %v, want %v", c.e, got, c.want)
		}
	}
}

// TestBinBudgetAutoBin: the width without a bin asked for is named when
// it fits the budget (at least WiderBin), else 0.
func TestBinBudgetAutoBin(t *testing.T) {
	for _, c := range []struct {
		e    BinBudgetError
		want time.Duration
	}{
		// The hour: 10 s without a bin asked for, but 20 s is the narrowest that fits.
		{BinBudgetError{Series: 15120, Bins: 360, Bin: 10 * time.Second, Limit: 64 << 20}, 0},
		// Two hours at 5 s under 256 MiB: 739 bins fit, so 10 s (720)
		// does, and 20 s (360) without a bin asked for.
		{BinBudgetError{Series: 15120, Bins: 1440, Bin: 5 * time.Second, Limit: 256 << 20}, 20 * time.Second},
		// A day at 10 s where 1,000 bins fit: 2 min (720) does, and
		// 5 min (288) without a bin asked for.
		{BinBudgetError{Series: 1, Bins: 8640, Bin: 10 * time.Second, Limit: 1000 * WholeBytesPerSeriesBin}, 5 * time.Minute},
		// Not even one bin fits.
		{BinBudgetError{Series: 100, Bins: 360, Bin: 10 * time.Second, Limit: 10}, 0},
	} {
		if got := c.e.AutoBin(); got != c.want {
			t.Errorf("%+v: %v, want %v", c.e, got, c.want)
		}
	}
}
