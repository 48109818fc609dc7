package dump

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// cloneTokens copies t deeply enough for encodeDelta to write into.
func cloneTokens(t *tokens) tokens {
	return tokens{structure: slices.Clone(t.structure), nums: slices.Clone(t.nums), rows: slices.Clone(t.rows), wide: t.wide}
}

// TestEncodeSame: for a body equal to the last, encodeSame writes the
// bytes encodeDelta writes and leaves the slots in the state encodeDelta
// gives the current tokens, from every state a run of changing bodies
// leaves (growths, kinds and costs of all three predictors, counter
// resets, shape changes). The run repeats each body one to three times, so
// the states after one and two equal frames are covered too.
func TestEncodeSame(t *testing.T) {
	body := func(i int) []byte {
		var b strings.Builder
		fmt.Fprintf(&b, "steady_total %d\n", 1000+(i%13)*17) // resets at 13
		total := 500 + i*i*3
		for k := 1; k <= 8; k++ {
			fmt.Fprintf(&b, "h_bucket{le=\"%d\"} %d\n", k, total*k/8)
		}
		fmt.Fprintf(&b, "h_sum %d.%03d\nbig %d\n", total*7, i*37%1000, int64(1)<<62-int64(i)<<58)
		fmt.Fprintf(&b, "shape %s\nflappy %d\n", []string{"1.5", "2", "1e+06", "0.001", "2"}[i%5], (i/3)%2)
		return []byte(b.String())
	}
	var base, cur tokens
	base.wide, cur.wide = true, true
	tokenize(body(0), &base)
	checked := 0
	for i := 1; i < 60; i++ {
		b := body(i)
		for rep := 0; rep <= i%3; rep++ {
			tokenize(b, &cur)
			if rep > 0 {
				// cur equals base: the writer's case.
				ref := cloneTokens(&cur)
				want := encodeDelta(nil, &ref, &base, Version)
				same := cloneTokens(&base)
				got := encodeSame(nil, &same)
				if !bytes.Equal(got, want) {
					t.Fatalf("body %d, repeat %d: encodeSame wrote %x, encodeDelta %x", i, rep, got, want)
				}
				if !sameState(&same, &ref) {
					t.Fatalf("body %d, repeat %d: encodeSame's slot state differs from encodeDelta's", i, rep)
				}
				checked++
			}
			encodeDelta(nil, &cur, &base, Version)
			base, cur = cur, base
		}
	}
	if checked < 40 {
		t.Fatalf("only %d equal frames checked", checked)
	}
}

// TestWriterRepeatedBodies: a target that serves the same body several
// times in a row (Append's comparison with the previous body, its cached
// compression), with other targets and failed scrapes between, with key
// frames in the run, reads back byte for byte and frame for frame.
func TestWriterRepeatedBodies(t *testing.T) {
	for _, ke := range []int{1, 3, DefaultKeyEvery} {
		t.Run(fmt.Sprintf("keyEvery=%d", ke), func(t *testing.T) {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, WriterOptions{KeyEvery: ke, IndexEvery: 7})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Unix(1741057965, 0)
			var recs []rec
			for i := range 60 {
				for k, tg := range []string{"app", "db"} {
					r := rec{target: tg, ct: "text/plain; version=0.0.4", at: start.Add(time.Duration(i)*time.Second + time.Duration(k)*time.Millisecond)}
					switch {
					case tg == "db" && i%9 == 4:
						r.err = "connection refused"
						if err := w.AppendError(tg, r.at, r.err); err != nil {
							t.Fatal(err)
						}
					default:
						// app changes every fourth scrape, db every
						// seventh; app's structure changes at 20 and 40.
						step := i / 4
						if tg == "db" {
							step = i / 7
						}
						r.body = smallBody(tg, step)
						if tg == "app" && i >= 20 && i < 40 {
							r.body = append(r.body, "extra_series 1\n"...)
						}
						if i == 50 && tg == "app" {
							r.ct = "text/plain; version=1.0.0" // a new type on the same bytes: a key frame
						}
						if err := w.Append(tg, r.at, r.ct, r.body); err != nil {
							t.Fatal(err)
						}
					}
					recs = append(recs, r)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r := openBytes(t, buf.Bytes())
			if p := r.Problems(); len(p) != 0 {
				t.Fatalf("problems: %v", p)
			}
			if r.Len() != len(recs) {
				t.Fatalf("%d frames, want %d", r.Len(), len(recs))
			}
			for _, order := range [][]int{seq(len(recs)), rev(len(recs))} {
				for _, i := range order {
					f, err := r.Frame(i)
					if err != nil {
						t.Fatalf("frame %d: %v", i, err)
					}
					if !sameFrame(f, recs[i]) {
						t.Fatalf("frame %d: got %s %v %q, want %s %v %q", i, f.Target, f.Time, f.Body, recs[i].target, recs[i].at, recs[i].body)
					}
				}
			}
		})
	}
}

// TestDecayCosts: a steady target's slots after encodeSame once and
// decayCosts(k-1) are in the state k encodeSame passes leave, for every k
// up to past the point where the costs stop decaying; and the steady
// delta is encodeSame's bytes once every slot was unchanged.
func TestDecayCosts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var base tokens
	for range 200 {
		n := num{m: rng.Int64N(1000), d: rng.Int64N(7) - 3, k: uint8(rng.IntN(4))}
		for k := range n.cost {
			n.cost[k] = uint16(rng.IntN(1 << 16))
		}
		base.nums = append(base.nums, n)
	}
	base.nums[0].cost = [numPredictors]uint16{65535, 8, 7}
	eager := cloneTokens(&base)
	encodeSame(nil, &eager)
	for k := 2; k < 120; k++ {
		got := encodeSame(nil, &eager)
		if want := appendSteadyDelta(nil, len(base.nums)); !bytes.Equal(got, want) {
			t.Fatalf("frame %d: encodeSame wrote %x, the steady delta is %x", k, got, want)
		}
		lazy := cloneTokens(&base)
		encodeSame(nil, &lazy)
		lazy.decayCosts(k - 1)
		if !sameState(&lazy, &eager) {
			t.Fatalf("after %d equal frames: decayCosts' state differs from encodeSame's", k)
		}
	}
	for _, n := range eager.nums {
		for _, c := range n.cost {
			if c >= 8 {
				t.Fatalf("a cost of %d after 120 decays: the test did not reach the floor", c)
			}
		}
	}
}

// repeatScrapes: two targets that serve each body for a run of scrapes
// (1 to 100, past where the predictor costs stop decaying, and past a key
// frame), the values in between moving like counters, a histogram, a sum
// and a reset, so that which predictor a slot uses depends on its costs.
func repeatScrapes() []fixtureScrape {
	body := func(tg string, i int) []byte {
		var b strings.Builder
		fmt.Fprintf(&b, "# TYPE steady_total counter\nsteady_total{t=%q} %d\n", tg, 1000+(i%13)*17)
		total := 500 + i*i*3
		for k := 1; k <= 8; k++ {
			fmt.Fprintf(&b, "h_bucket{le=\"%d\"} %d\n", k, total*k/8+(i*k*7919)%5)
		}
		fmt.Fprintf(&b, "h_sum %d.%03d\nh_count %d\n", total*7, i*37%1000, total)
		fmt.Fprintf(&b, "shape %s\n", []string{"1.5", "2", "1e+06", "0.001", "2"}[i%5])
		return []byte(b.String())
	}
	runs := []int{1, 2, 3, 1, 5, 8, 1, 13, 40, 1, 100, 2, 1, 70, 3}
	var out []fixtureScrape
	at := time.Unix(1741057965, 0)
	for ti, tg := range []string{"a", "b"} {
		i := 0
		for r, n := range runs[ti:] {
			for range n {
				out = append(out, fixtureScrape{target: tg, at: at.Add(time.Duration(i)*time.Second + time.Duration(ti)*time.Millisecond), ct: "text/plain; version=0.0.4", body: body(tg, r)})
				i++
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// TestWriterRepeatsFixture: the writer writes testdata/v<Version>-repeats.rtd
// byte for byte from repeatScrapes. v4-repeats.rtd was written by the
// version 4 writer before it learnt to skip repeated bodies (commit
// dcc180e, with RETRYTOP_WRITE_REPEATS_FIXTURE=1), v5-repeats.rtd by the
// version 5 writer with that skip turned off (a body equal to the last
// tokenized and coded as any other), so the shortcuts for a body equal to
// the last (encodeSame, the cached compression, the owed cost decay, the
// numbers' checksum taken from the last frame) are held to write what the
// full path wrote. Both files read back to the scrapes.
func TestWriterRepeatsFixture(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range repeatScrapes() {
		if err := w.Append(s.target, s.at, s.ct, s.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", fmt.Sprintf("v%d-repeats.rtd", Version))
	if os.Getenv("RETRYTOP_WRITE_REPEATS_FIXTURE") == "1" {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("the writer wrote %d bytes, %s has %d", buf.Len(), path, len(want))
	}
	old, err := os.ReadFile(filepath.Join("testdata", "v4-repeats.rtd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{want, old} {
		r := openBytes(t, b)
		scrapes := repeatScrapes()
		if r.Len() != len(scrapes) {
			t.Fatalf("%d frames, want %d", r.Len(), len(scrapes))
		}
		for i, s := range scrapes {
			f, err := r.Frame(i)
			if err != nil || !bytes.Equal(f.Body, s.body) || f.Target != s.target {
				t.Fatalf("version %d, frame %d: %v", binary.LittleEndian.Uint16(b[8:10]), i, err)
			}
		}
	}
}
