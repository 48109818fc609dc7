package analysis

import (
	"testing"
	"time"
)

// TestAutoBin: 10 s bins up to an hour, then the narrowest nice width
// that keeps the timeline within 360 bins. The spans start on an hour
// (every width divides it), so a span of n widths is n bins.
func TestAutoBin(t *testing.T) {
	const start = 1_741_057_200_000
	if start%3_600_000 != 0 {
		t.Fatal("start must be on an hour")
	}
	for _, c := range []struct {
		span time.Duration
		want time.Duration
	}{
		{0, 10 * time.Second},                          // nothing recorded
		{90 * time.Second, 10 * time.Second},           // 9 bins
		{time.Hour, 10 * time.Second},                  // 360 bins
		{time.Hour + 10*time.Second, 15 * time.Second}, // 361 of 10 s; 241 of 15 s (the last 10 s long)
		{100 * time.Minute, 20 * time.Second},          // 400 of 15 s, 300 of 20 s
		{3 * time.Hour, 30 * time.Second},              // 360 of 30 s
		{4 * time.Hour, time.Minute},                   // 480 of 30 s, 240 of 1 m
		{24 * time.Hour, 5 * time.Minute},              // 720 of 2 m, 288 of 5 m
		{400 * 24 * time.Hour, time.Hour},              // more than 360 of any: the widest
	} {
		if got := AutoBin(start, start+c.span.Milliseconds()); got != c.want {
			t.Errorf("span %v: bin %v, want %v", c.span, got, c.want)
		}
	}
}

// TestWholeHistoryBoundedInTime: a whole recording's store holds a batch
// of bins and three more, the batch being 30 bins of 10 s or narrower and
// at most 300 s of wider ones, so a wide bin does not widen the store's
// history in proportion (a scrape a second: the span's scrapes plus 4).
func TestWholeHistoryBoundedInTime(t *testing.T) {
	times := make([]int64, 4*3600)
	for i := range times {
		times[i] = int64(i) * 1000
	}
	for _, c := range []struct {
		bin  time.Duration
		want int
	}{
		{time.Second, 33 + 4},             // 30 bins + 3
		{10 * time.Second, 330 + 4},       // 30 bins + 3
		{20 * time.Second, (15+3)*20 + 4}, // 15 bins + 3
		{time.Minute, (5+3)*60 + 4},       // 5 bins + 3
		{5 * time.Minute, (1+3)*5*60 + 4}, // 1 bin + 3
	} {
		if got := WholeHistory([][]int64{times}, ReportOptions{Bin: c.bin, Window: time.Second}); got != c.want {
			t.Errorf("bin %v: history %d scrapes, want %d", c.bin, got, c.want)
		}
	}
}
