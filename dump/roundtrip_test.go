package dump

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// TestWriterRoundTripRandom holds the writer's whole path to the reader:
// Writer.Append (the one pass of fused.go for a body that kept its
// structure, encodeDeltaSame for one that did not, encodeSame and the
// owed cost decay for a repeated body, key frames every keyEvery) with
// failed scrapes between, read back by Reader.Frame in order and then
// backwards (each delta chain from its key frame). FuzzCodec and
// FuzzTokenizeEncode hold the pieces; this holds them put together
// (review of round 6). 200 seeded runs of 80 steps: each step's body is
// the previous with its counters grown (some, all or none), a repeat, a
// line added or taken away, a number's shape changed, or a failed scrape.
func TestWriterRoundTripRandom(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 19))
		keyEvery := 1 + rng.IntN(40)
		var buf bytes.Buffer
		w, err := NewWriter(&buf, WriterOptions{KeyEvery: keyEvery})
		if err != nil {
			t.Fatal(err)
		}
		lines := 5 + rng.IntN(60)
		vals := make([]int64, lines)
		frac := make([]bool, lines)
		for i := range vals {
			vals[i] = rng.Int64N(1 << uint(1+rng.IntN(60)))
		}
		render := func() []byte {
			var b bytes.Buffer
			b.WriteString("# TYPE envoy_cluster_upstream_rq_total counter\n")
			for i, v := range vals {
				fmt.Fprintf(&b, "envoy_cluster_upstream_rq_total{envoy_cluster_name=\"c%d\"} ", i)
				if frac[i] {
					b.WriteString(strconv.FormatFloat(float64(v)/1000, 'f', -1, 64))
				} else {
					b.WriteString(strconv.FormatInt(v, 10))
				}
				b.WriteByte('\n')
			}
			return b.Bytes()
		}
		type want struct {
			body   []byte
			failed bool
		}
		var wants []want
		at := time.Unix(1741057965, 0)
		body := render()
		for step := 0; step < 80; step++ {
			at = at.Add(time.Second)
			switch r := rng.IntN(20); {
			case r < 2:
				if err := w.AppendError("t", at, "connection refused"); err != nil {
					t.Fatal(err)
				}
				wants = append(wants, want{failed: true})
				continue
			case r < 5: // the same body again
			case r < 6 && len(vals) > 1: // a line taken away
				k := rng.IntN(len(vals))
				vals, frac = append(vals[:k], vals[k+1:]...), append(frac[:k], frac[k+1:]...)
			case r < 7: // a line added
				vals, frac = append(vals, rng.Int64N(1000)), append(frac, false)
			case r < 8: // a number's shape changed
				k := rng.IntN(len(vals))
				frac[k] = !frac[k]
			default: // counters grow: all, some or none
				all := rng.IntN(3)
				for i := range vals {
					if all == 0 || all == 1 && rng.IntN(2) == 0 {
						vals[i] += rng.Int64N(1 + int64(rng.IntN(5000)))
					}
				}
			}
			body = render()
			if err := w.Append("t", at, "text/plain; version=0.0.4", body); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			wants = append(wants, want{body: body})
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r := openBytes(t, buf.Bytes())
		if r.Len() != len(wants) {
			t.Fatalf("seed %d: %d frames read, %d written", seed, r.Len(), len(wants))
		}
		check := func(order string, i int) {
			fr, err := r.Frame(i)
			if err != nil {
				t.Fatalf("seed %d (key every %d): %s frame %d: %v", seed, keyEvery, order, i, err)
			}
			if wants[i].failed {
				if fr.Err == "" {
					t.Fatalf("seed %d: %s frame %d: a body, want the failed scrape", seed, order, i)
				}
				return
			}
			if fr.Err != "" || !bytes.Equal(fr.Body, wants[i].body) {
				t.Fatalf("seed %d (key every %d): %s frame %d:\n%q (err %q)\nwant\n%q", seed, keyEvery, order, i, fr.Body, fr.Err, wants[i].body)
			}
		}
		for i := range wants {
			check("in order", i)
		}
		for i := len(wants) - 1; i >= 0; i-- {
			check("backwards", i)
		}
		r.Close()
	}
}
