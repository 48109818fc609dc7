package retry

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestLimiterReservesSlotsForCritical(t *testing.T) {
	tests := []struct {
		name              string
		limit, reserved   int
		acquire           []Priority
		want              []bool
		wantInUseAtTheEnd int
	}{
		{
			name: "sheddable stops at limit minus reserve", limit: 4, reserved: 1,
			acquire: []Priority{Sheddable, Sheddable, Sheddable, Sheddable, Critical, Critical},
			want:    []bool{true, true, true, false, true, false},
			// 3 sheddable + 1 critical.
			wantInUseAtTheEnd: 4,
		},
		{
			name: "critical may take every slot", limit: 2, reserved: 1,
			acquire:           []Priority{Critical, Critical, Sheddable},
			want:              []bool{true, true, false},
			wantInUseAtTheEnd: 2,
		},
		{
			name: "no reserve", limit: 2, reserved: 0,
			acquire:           []Priority{Sheddable, Sheddable, Critical},
			want:              []bool{true, true, false},
			wantInUseAtTheEnd: 2,
		},
		{
			name: "unknown priority is sheddable", limit: 2, reserved: 1,
			acquire:           []Priority{Priority(9), Priority(9)},
			want:              []bool{true, false},
			wantInUseAtTheEnd: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLimiter(tt.limit, tt.reserved)
			for i, p := range tt.acquire {
				if got := l.TryAcquire(p); got != tt.want[i] {
					t.Errorf("TryAcquire #%d (%v) = %v, want %v", i+1, p, got, tt.want[i])
				}
			}
			if l.InUse() != tt.wantInUseAtTheEnd {
				t.Errorf("InUse = %d, want %d", l.InUse(), tt.wantInUseAtTheEnd)
			}
		})
	}
}

func TestLimiterNeverAdmitsMoreThanLimit(t *testing.T) {
	const limit = 5
	l := NewLimiter(limit, 2)
	var inside, peak atomic.Int64
	var wg sync.WaitGroup
	for g := range 32 {
		p := Priority(g % 2)
		wg.Go(func() {
			for range 2000 {
				if !l.TryAcquire(p) {
					continue
				}
				n := inside.Add(1)
				for {
					old := peak.Load()
					if n <= old || peak.CompareAndSwap(old, n) {
						break
					}
				}
				inside.Add(-1)
				l.Release()
			}
		})
	}
	wg.Wait()
	if peak.Load() > limit {
		t.Fatalf("peak concurrency %d > limit %d", peak.Load(), limit)
	}
	if l.InUse() != 0 {
		t.Fatalf("InUse = %d after all releases", l.InUse())
	}
}

func TestLimiterMisuse(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	mustPanic("Release without acquire", func() { NewLimiter(1, 0).Release() })
	mustPanic("zero limit", func() { NewLimiter(0, 0) })
	mustPanic("reserve equal to limit", func() { NewLimiter(2, 2) })
	mustPanic("negative reserve", func() { NewLimiter(2, -1) })
}
