package expo

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/retrytop/retrytop/internal/expotest"
)

// counting wraps filter, counting its calls.
func counting(filter func(string) bool, calls *atomic.Int64) func(string) bool {
	return func(n string) bool {
		calls.Add(1)
		return filter(n)
	}
}

// TestSelDecisionsKeptAcrossParses: a target's line cache keeps
// fastTextSelect's decisions on names while the filter is the same func
// value, so a steady target's next parse asks the filter nothing, and
// drops them when another filter comes, even one of the same code with
// other captured values; every parse equals the parse without a cache.
func TestSelDecisionsKeptAcrossParses(t *testing.T) {
	envoy, _ := expotest.GenEnvoy(50, false)
	bodies := []string{lineCacheSteps[0].body, lineCacheSteps[1].body, string(envoy)}
	var calls atomic.Int64
	retry := counting(selectFilters["retry"], &calls)
	for _, body := range bodies {
		c := &lineCache{}
		calls.Store(0)
		checkCached(t, "first", c, []byte(body), retry, true)
		if calls.Load() == 0 {
			t.Fatal("the first parse asked the filter nothing")
		}
		n := calls.Load()
		checkCached(t, "again", c, []byte(body), retry, true)
		// checkCached's own parse without a cache asks as many as the first.
		if again := calls.Load() - n; again != n/2 {
			t.Errorf("the second parse through the cache asked the filter %d times, want none (%d without the cache)", again-n/2, n/2)
		}
		// Another closure of only's code: its own decisions.
		for _, f := range []func(string) bool{only("h", "c_total"), only("s", "g"), selectFilters["odd"], selectFilters["none"], retry} {
			checkCached(t, "another filter", c, []byte(body), f, true)
		}
	}
}

// TestSelDecisionsGroupConflict: decisions kept from a parse in which a
// group was wanted from its first line do not hide the conflict of a
// later body whose skipped lines come before a wanted name of the group
// (foo's quantile line, then foo_count): that parse still gives up.
func TestSelDecisionsGroupConflict(t *testing.T) {
	filter := only("foo_count", "bar")
	c := &lineCache{}
	first := "foo_count 3\nfoo_sum 1\nbar 1\n"
	if _, ok := parseCached(c, []byte(first), filter, true); !ok {
		t.Fatal("the first body was not taken")
	}
	conflict := "# TYPE foo summary\nfoo{quantile=\"0.5\"} 1\nfoo_count 3\nbar 2\n"
	if _, ok := parseCached(c, []byte(conflict), filter, true); ok {
		t.Error("a group wanted after its lines were skipped was taken with kept decisions")
	}
	if _, ok := fastTextSelect([]byte(conflict), filter); ok {
		t.Error("without a cache: taken")
	}
	checkCached(t, "first again", c, []byte(first), filter, true)
}

// TestSelDecisionsTooManyNames: a target with more names than a line
// cache keeps decisions for parses with decisions of its own, and its
// steady parses add nothing to what the line caches count (they were
// counted anew every parse, so that every target's cache started over
// every few parses), each parse still equal to the parse without a cache.
func TestSelDecisionsTooManyNames(t *testing.T) {
	var b strings.Builder
	for k := range maxSelNames + 4000 {
		fmt.Fprintf(&b, "m%d_total %d\n", k, k)
	}
	body := []byte(b.String())
	var calls atomic.Int64
	filter := counting(func(n string) bool { return strings.HasSuffix(n, "7_total") }, &calls)
	owner := NewLineCaches(0)
	c := &lineCache{owner: owner}
	var counted []int64
	for parse := range 4 {
		checkCached(t, fmt.Sprintf("parse %d", parse), c, body, filter, true)
		counted = append(counted, owner.Bytes())
	}
	if !c.sel.tooMany || len(c.sel.names) != 0 {
		t.Errorf("the cache keeps %d decisions (tooMany %v) for %d names", len(c.sel.names), c.sel.tooMany, maxSelNames+4000)
	}
	// Parses 3 and 4 are steady: the line entries are the same ones.
	if counted[3] != counted[2] {
		t.Errorf("the line caches counted %d bytes more on a steady parse", counted[3]-counted[2])
	}
}
