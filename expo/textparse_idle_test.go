package expo

import (
	"bytes"
	"fmt"
	"runtime/debug"
	"testing"
	"unsafe"

	"github.com/retrytop/retrytop/model"
)

// withMemoryLimit runs f with the process' memory limit set to limit.
func withMemoryLimit(limit int64, f func()) {
	prev := debug.SetMemoryLimit(limit)
	defer debug.SetMemoryLimit(prev)
	f()
}

// bigBody is a histogram of n series of 20 buckets: a parser that read it
// keeps about n*180 bytes of room (its samples).
func bigBody(n int) []byte {
	b := []byte("# TYPE h histogram\n")
	for i := range n {
		for _, le := range []string{"0.5", "1", "5", "10", "25", "50", "100", "250", "500", "1000",
			"2500", "5000", "10000", "30000", "60000", "300000", "600000", "1800000", "3600000", "+Inf"} {
			b = fmt.Appendf(b, "h_bucket{c=\"svc_%d\",le=\"%s\"} %d\n", i, le, i)
		}
		b = fmt.Appendf(b, "h_sum{c=\"svc_%d\"} 1\nh_count{c=\"svc_%d\"} %d\n", i, i, i)
	}
	return b
}

// TestIdleParsersWithinTheirShare: parsers that read large bodies at once
// are kept idle only within idleParserShare of the memory limit, except
// one, which is always kept; small ones fill the list up to
// maxIdleParsers.
func TestIdleParsersWithinTheirShare(t *testing.T) {
	idleParsersMu.Lock()
	saved := idleParsers
	idleParsers = nil
	idleParsersMu.Unlock()
	defer func() {
		idleParsersMu.Lock()
		idleParsers = saved
		idleParsersMu.Unlock()
	}()
	// Four parses at once of a 3,000-series histogram (about 540 KB of
	// room each: its samples; the buckets are the result's) under a
	// 24 MiB limit: a share of 384 KiB.
	withMemoryLimit(24<<20, func() {
		body := bigBody(3000)
		ps := make([]*textParser, 4)
		for i := range ps {
			ps[i] = getTextParser()
			for rest := body; len(rest) > 0; {
				k := 0
				for rest[k] != '\n' {
					k++
				}
				if !ps[i].line(rest[:k]) {
					t.Fatal("body not taken")
				}
				rest = rest[k+1:]
				ps[i].lineNo++
			}
			ps[i].families(nil)
		}
		for _, p := range ps {
			p.release()
		}
		idleParsersMu.Lock()
		n := len(idleParsers)
		idleParsersMu.Unlock()
		if share := idleParserBytes(); n != 1 || ps[0].idleBytes <= share {
			t.Errorf("%d large parsers idle, want 1 (share %d bytes, each keeps %d)", n, share, ps[0].idleBytes)
		}
		// Small parsers beside the large one fill the list: the largest
		// does not count against the share.
		ps2 := make([]*textParser, maxIdleParsers)
		ps2[0] = ps[0]
		for i := 1; i < len(ps2); i++ {
			ps2[i] = newTextParser()
		}
		idleParsersMu.Lock()
		idleParsers = nil
		idleParsersMu.Unlock()
		for _, p := range append(ps2, newTextParser()) {
			p.release()
		}
		idleParsersMu.Lock()
		n = len(idleParsers)
		idleParsersMu.Unlock()
		if n != maxIdleParsers {
			t.Errorf("%d parsers idle beside a large one, want %d", n, maxIdleParsers)
		}
	})
}

// TestInternTableBounded: a target of many distinct label values keeps
// the intern table within maxInternBytes counted with each entry's table
// bytes, and a table started over is a new map, not a cleared one.
func TestInternTableBounded(t *testing.T) {
	p := newTextParser()
	var buf []byte
	n := 2 * maxInternBytes / (internEntryBytes + 8)
	for i := range n {
		buf = fmt.Appendf(buf[:0], "v%07d", i)
		p.str(buf)
		if p.stringBytes > maxInternBytes {
			t.Fatalf("after %d strings, %d bytes counted, over %d", i+1, p.stringBytes, maxInternBytes)
		}
	}
	if len(p.strings) >= n/2+1 || len(p.strings) == 0 {
		t.Errorf("%d strings interned of %d, want the table started over", len(p.strings), n)
	}
	// The strings kept are still interned: the same string back.
	last := fmt.Appendf(nil, "v%07d", n-1)
	if a, b := p.str(last), p.str(last); a != string(last) || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Errorf("%q, %q: not the one interned string", a, b)
	}
}

// TestLineCacheBoundFollowsMemoryLimit: the line caches are bounded by
// lineCacheShare of the memory limit when that is below
// maxLineCacheBytes, and by maxLineCacheBytes otherwise.
func TestLineCacheBoundFollowsMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		limit, want int64
	}{
		{256 << 20, 32 << 20},
		{1 << 30, maxLineCacheBytes},
		{64 << 20, 8 << 20},
	} {
		withMemoryLimit(c.limit, func() {
			l := NewLineCaches(0)
			l.release(l.acquire(t.Name(), 0))
			if got := l.bound.Load(); got != c.want {
				t.Errorf("limit %d MiB: bound %d, want %d", c.limit>>20, got, c.want)
			}
		})
	}
	if got := NewLineCaches(5 << 20).bound.Load(); got != 5<<20 {
		t.Errorf("a given bound: %d, want %d", got, 5<<20)
	}
}

// readBody reads body's lines into p and returns the result, as parseFast
// does without a cache.
func readBody(t *testing.T, p *textParser, body []byte) []model.Family {
	t.Helper()
	for rest := body; len(rest) > 0; p.lineNo++ {
		k := bytes.IndexByte(rest, '\n')
		if !p.line(rest[:k]) {
			t.Fatalf("line %d not taken", p.lineNo+1)
		}
		rest = rest[k+1:]
	}
	return p.families(nil)
}

// TestBucketRoomBounded: a histogram of one wide series among many narrow
// ones asks for room about its own size at the next parse, not the wide
// series' room for every series, and its buckets are the result's: a
// later parse into the same parser leaves them as parsed.
func TestBucketRoomBounded(t *testing.T) {
	b := []byte("# TYPE h histogram\n")
	const wide, narrow = 5000, 2000
	for i := range wide {
		b = fmt.Appendf(b, "h_bucket{s=\"w\",le=\"%d\"} %d\n", i, i)
	}
	for i := range narrow {
		b = fmt.Appendf(b, "h_bucket{s=\"n%d\",le=\"1\"} 1\n", i)
	}
	p := newTextParser()
	first := readBody(t, p, b)
	p.release()
	idleParsersMu.Lock()
	for i, q := range idleParsers { // p back out of the idle list
		if q == p {
			idleParsers = append(idleParsers[:i], idleParsers[i+1:]...)
		}
	}
	idleParsersMu.Unlock()
	second := readBody(t, p, b)
	// The wide series' room (its own 5,000 and +Inf), then each narrow
	// series the room of the one before: 1,000 for the first, 2 for the
	// rest, with +Inf.
	if limit := 2 * (wide + 2*narrow + 2); p.bucketUsed > limit {
		t.Errorf("%d buckets of room for %d buckets, want at most %d", p.bucketUsed, wide+narrow, limit)
	}
	if d := exactDiff(first, second); d != "" {
		t.Errorf("the second parse of the same body differs: %s", d)
	}
	if got := first[0].Samples[0].Buckets[wide-1].Count; got != wide-1 {
		t.Errorf("the first result's bucket changed under the second parse: %v", got)
	}
	p.release()
}
