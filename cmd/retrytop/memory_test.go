package main

import (
	"runtime/debug"
	"testing"

	"github.com/retrytop/retrytop/model"
)

// --memory-limit sizes the process (GOMEMLIMIT), the scrapes' budget (half
// of it) and the store's budget (five eighths of it), whose total series
// cap starts at the budget over an incompressible series' cost.
func TestMemoryLimitSizesTheStoreTotalSeriesCap(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	t.Setenv("GOMEMLIMIT", "")
	for _, c := range []struct {
		args      []string
		limit     int64
		maxSeries int // at the default history of 900 scrapes
	}{
		{[]string{"version"}, 512 << 20, 73046},
		{[]string{"version", "--memory-limit", "2GiB"}, 2 << 30, 292187},
		{[]string{"version", "--memory-limit", "64MiB"}, 64 << 20, 20000}, // never below one target's cap
	} {
		if _, stderr, err := execute(t, c.args...); err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, stderr)
		}
		if got := debug.SetMemoryLimit(-1); got != c.limit {
			t.Errorf("%v: GOMEMLIMIT = %d, want %d", c.args, got, c.limit)
		}
		if got := model.NewStore(model.StoreConfig{}).Totals().MaxSeries; got != c.maxSeries {
			t.Errorf("%v: store total cap = %d, want %d", c.args, got, c.maxSeries)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"512MiB", 512 << 20, false}, {"1GiB", 1 << 30, false}, {"300MB", 300e6, false},
		{"64K", 64 << 10, false}, {"1000", 1000, false}, {"1.5GiB", 3 << 29, false},
		{"", 0, true}, {"-1MiB", 0, true}, {"lots", 0, true}, {"NaNMiB", 0, true}, {"1e30TB", 0, true},
	} {
		got, err := parseSize(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.bad)
		}
	}
}
