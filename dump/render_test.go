package dump

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestRenderFromMatchesRender: rendering a delta from its base's body
// (only the changed numbers) gives the bytes and slot offsets of
// rendering it whole, over a generated Envoy target's scrapes whose
// counters grow by Poisson counts (most numbers change, some not, some
// change their length) and bodies whose numbers change spelling.
func TestRenderFromMatchesRender(t *testing.T) {
	g := newGenTarget(3, 300)
	bodies := [][]byte{}
	for range 40 {
		bodies = append(bodies, g.body())
		g.step()
	}
	// Shapes and lengths that change: 9 -> 10, 1.5 -> 2 -> 1e+06 -> -0.001.
	for _, v := range []string{"9", "10", "1.5", "2", "1e+06", "-0.001", "-0.001", "123456789012345678"} {
		bodies = append(bodies, []byte("a_total{x=\"\\u0000\x01\"} "+v+"\nb 7 1700000000000\n# c\x00 1\n"))
	}
	var base, cur tokens
	base.wide, cur.wide = true, true
	var prev []byte
	var poffs []int32
	for i, body := range bodies {
		tokenize(body, &cur)
		want, woffs, err := cur.renderOffs(nil, nil, len(body))
		if err != nil || !bytes.Equal(want, body) {
			t.Fatalf("body %d: renderOffs %v, equal %v", i, err, bytes.Equal(want, body))
		}
		if i > 0 && bytes.Equal(cur.structure, base.structure) {
			got, goffs, err := renderFrom(nil, nil, prev, poffs, &base, &cur, len(body))
			if err != nil || !bytes.Equal(got, body) || !equalInt32(goffs, woffs) {
				t.Fatalf("body %d: renderFrom gave %q (%v), offsets %v; want %q, %v", i, got, err, goffs, body, woffs)
			}
			// A body longer than the frame declares is refused.
			if _, _, err := renderFrom(nil, nil, prev, poffs, &base, &cur, len(body)-1); err == nil {
				t.Fatalf("body %d: renderFrom past the declared length gave no error", i)
			}
		}
		prev, poffs = want, woffs
		base, cur = cur, base
		cur.structure, cur.nums = nil, nil // no sharing with base in this test
	}
}

func equalInt32(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBodiesAreFresh: every body Frame returns is the body written and
// stays so, whatever is read after it (the reader renders the next frame
// of a target from its own copy of the last): the same frame twice, seeks
// backwards, frames out of order.
func TestBodiesAreFresh(t *testing.T) {
	full, recs := buildDump(t, WriterOptions{KeyEvery: 6}, []string{"app", "db"}, 40)
	r := openBytes(t, full)
	rng := rand.New(rand.NewPCG(5, 6))
	type held struct {
		body []byte
		i    int
	}
	var kept []held
	read := func(i int) {
		f, err := r.Frame(i)
		if err != nil || !sameFrame(f, recs[i]) {
			t.Fatalf("frame %d: %v, same %v", i, err, sameFrame(f, recs[i]))
		}
		if f.Err == "" {
			kept = append(kept, held{f.Body, i})
		}
	}
	for i := 0; i < r.Len(); i++ {
		read(i)
		if rng.IntN(4) == 0 {
			read(i) // again
		}
	}
	for range 60 {
		read(rng.IntN(r.Len()))
	}
	for _, h := range kept {
		if !bytes.Equal(h.body, recs[h.i].body) {
			t.Fatalf("the body of frame %d was written after it was returned", h.i)
		}
	}
}
