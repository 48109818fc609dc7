package main

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/scrape"
)

// defaultMemoryLimit is --memory-limit's default: a laptop's fair share.
const defaultMemoryLimit = 512 << 20

// memoryLimit is --memory-limit: the process' soft memory limit (Go's
// GOMEMLIMIT: the collector works harder near it), half of which bounds
// the scrapes in flight (scrape.MemoryBudget) and five eighths the
// store's series (model.DefaultMaxBytes reads the limit it sets).
// docs/limits.md.
type memoryLimit int64

func (m *memoryLimit) String() string { return formatFlagSize(int64(*m)) }
func (m *memoryLimit) Type() string   { return "size" }
func (m *memoryLimit) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	if n < 64<<20 {
		return fmt.Errorf("%s is below the 64MiB retrytop needs", s)
	}
	*m = memoryLimit(n)
	return nil
}

// registerMemoryLimit adds --memory-limit to root, for every verb, and
// applies it before any runs: the flag if given, else GOMEMLIMIT if set,
// else defaultMemoryLimit.
func registerMemoryLimit(root *cobra.Command) {
	limit := memoryLimit(defaultMemoryLimit)
	root.PersistentFlags().Var(&limit, "memory-limit", "soft memory limit of the process (sets Go's GOMEMLIMIT); half of it bounds the scrapes in flight, the largest shed first, five eighths the series the store holds across targets (at what they are measured to cost), an eighth what --otlp holds and half the bins of analyze FILE's report (docs/limits.md)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Changed("memory-limit") || os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(int64(limit))
		}
		return nil
	}
}

// scrapeMemory is the scrapes' share of the command's --memory-limit; a
// large reservation must also fit under the whole limit beside the live
// heap (scrape.MemoryBudget.CheckHeap).
func scrapeMemory(cmd *cobra.Command) *scrape.MemoryBudget {
	limit := commandMemoryLimit(cmd)
	b := scrape.NewMemoryBudget(limit / 2)
	b.CheckHeap(limit)
	return b
}

// commandMemoryLimit is the command's --memory-limit in bytes.
func commandMemoryLimit(cmd *cobra.Command) int64 {
	if cmd != nil {
		if f := cmd.Flag("memory-limit"); f != nil {
			if m, ok := f.Value.(*memoryLimit); ok {
				return int64(*m)
			}
		}
	}
	return defaultMemoryLimit
}

// parseSize reads 512MiB, 1GiB, 300MB, 64K or a number of bytes.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(u.suffix)) && len(t) > len(u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional unit (512MiB, 1GiB, 300MB)", s)
	}
	return int64(v * mult), nil
}

func formatFlagSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return strconv.FormatInt(n, 10)
}
