package dump

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rec is one recorded scrape of the tests.
type rec struct {
	target, ct string
	at         time.Time
	body       []byte
	err        string
}

// smallBody is a tiny exposition that changes with i like counters do.
func smallBody(target string, i int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# HELP retry_attempts_total Attempts.\n# TYPE retry_attempts_total counter\n")
	for _, o := range []string{"success", "timeout"} {
		fmt.Fprintf(&b, "retry_attempts_total{dependency=\"db\",outcome=%q,target=%q} %d\n", o, target, 1000+i*7+len(o))
	}
	fmt.Fprintf(&b, "retry_active_calls{dependency=\"db\"} %s\n", ff(float64(i%5)*0.25))
	if i%7 == 3 {
		fmt.Fprintf(&b, "new_series_%d 1.5e+06\n", i) // the structure changes now and then
	}
	fmt.Fprintf(&b, "process_cpu_seconds_total %s\n", ff(12.5+float64(i)*0.01))
	return []byte(b.String())
}

// writeDump writes n rounds of scrapes of targets and returns them in
// write order.
func writeDump(t testing.TB, w *Writer, targets []string, n int) []rec {
	t.Helper()
	start := time.Unix(1741057965, 123456789)
	var out []rec
	for i := 0; i < n; i++ {
		for k, tg := range targets {
			r := rec{target: tg, ct: "text/plain; version=0.0.4; charset=utf-8", at: start.Add(time.Duration(i)*time.Second + time.Duration(k)*time.Millisecond)}
			if i%11 == 5 && k == 0 {
				r.err = "GET http://x/metrics: connection refused"
				if err := w.AppendError(r.target, r.at, r.err); err != nil {
					t.Fatal(err)
				}
			} else {
				r.body = smallBody(tg, i)
				if err := w.Append(r.target, r.at, r.ct, r.body); err != nil {
					t.Fatal(err)
				}
			}
			out = append(out, r)
		}
	}
	return out
}

func buildDump(t testing.TB, opts WriterOptions, targets []string, n int) ([]byte, []rec) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	recs := writeDump(t, w, targets, n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), recs
}

func openBytes(t testing.TB, b []byte) *Reader {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b), int64(len(b)), "test.rtd")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sameFrame(f Frame, r rec) bool {
	return f.Target == r.target && f.Time.Equal(r.at) && f.Time.UnixNano() == r.at.UnixNano() &&
		bytes.Equal(f.Body, r.body) && f.Err == r.err && (r.err != "" || f.ContentType == r.ct)
}

func TestRoundTripByteForByte(t *testing.T) {
	for _, ke := range []int{1, 4, DefaultKeyEvery} {
		t.Run(fmt.Sprintf("keyEvery=%d", ke), func(t *testing.T) {
			b, recs := buildDump(t, WriterOptions{KeyEvery: ke}, []string{"app", "client", "provider"}, 40)
			r := openBytes(t, b)
			if p := r.Problems(); len(p) != 0 {
				t.Fatalf("problems in an intact dump: %v", p)
			}
			if r.Len() != len(recs) {
				t.Fatalf("%d frames, want %d", r.Len(), len(recs))
			}
			// Forward, backward and random order all give the same frames.
			for _, order := range [][]int{seq(len(recs)), rev(len(recs)), shuffled(len(recs))} {
				for _, i := range order {
					f, err := r.Frame(i)
					if err != nil {
						t.Fatal(err)
					}
					if !sameFrame(f, recs[i]) {
						t.Fatalf("frame %d: got %s %v %q, want %s %v %q", i, f.Target, f.Time, f.Body, recs[i].target, recs[i].at, recs[i].body)
					}
				}
			}
			if got := r.Targets(); strings.Join(got, ",") != "app,client,provider" {
				t.Errorf("targets %v", got)
			}
			if i := r.Search(recs[30].at); i != 30 {
				t.Errorf("Search = %d, want 30", i)
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func rev(n int) []int {
	out := seq(n)
	for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func shuffled(n int) []int {
	out := seq(n)
	for i := range out {
		j := (i*7919 + 13) % n
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func TestCreateRefusesToOverwrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.rtd")
	w, err := Create(path, false, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := Create(path, false, WriterOptions{}); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second Create: %v, want ErrExist", err)
	}
	if w, err := Create(path, true, WriterOptions{}); err != nil {
		t.Fatal(err)
	} else {
		w.Close()
	}
}

func TestNotADump(t *testing.T) {
	for _, in := range []string{"", "RTOP", "# HELP x y\nx 1\n", "RTOPDUMP\x02\x00\x00\x00\x00\x00\x00\x00"} {
		_, err := NewReader(strings.NewReader(in), int64(len(in)), "x")
		if err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	// A newer version says so.
	h := appendFileHeader(nil)
	h[8] = 9
	copy(h[12:], appendFileHeader(nil)[12:]) // wrong crc first
	if _, err := NewReader(bytes.NewReader(h), int64(len(h)), "x"); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("bad header crc: %v", err)
	}
}

// frameSpans returns each frame's [start, end) in file order.
func frameSpans(r *Reader) [][2]int64 {
	var out [][2]int64
	for _, e := range r.entries {
		out = append(out, [2]int64{e.info.Offset, e.info.Offset + int64(e.info.Size)})
	}
	return out
}

// TestTruncatedEverywhere cuts a dump at every offset: every frame that
// lies wholly before the cut is returned intact, a cut inside a frame is
// reported as a torn tail naming its offset, and nothing panics.
func TestTruncatedEverywhere(t *testing.T) {
	full, recs := buildDump(t, WriterOptions{KeyEvery: 5}, []string{"app", "client"}, 12)
	spans := frameSpans(openBytes(t, full))
	for cut := headerSize; cut <= len(full); cut++ {
		r, err := NewReader(bytes.NewReader(full[:cut]), int64(cut), "cut.rtd")
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		whole := 0
		for _, s := range spans {
			if s[1] <= int64(cut) {
				whole++
			}
		}
		if r.Len() != whole {
			t.Fatalf("cut %d: %d frames, want %d", cut, r.Len(), whole)
		}
		for i := 0; i < r.Len(); i++ {
			f, err := r.Frame(i)
			if err != nil || !sameFrame(f, recs[i]) {
				t.Fatalf("cut %d: frame %d: %v", cut, i, err)
			}
		}
		probs := r.Problems()
		atBoundary := cut == len(full) || (whole > 0 && spans[whole-1][1] == int64(cut)) || cut == headerSize
		if atBoundary != (len(probs) == 0) {
			t.Fatalf("cut %d: problems %v", cut, probs)
		}
		if !atBoundary {
			p := probs[0].(*Problem)
			start := int64(headerSize)
			if whole > 0 {
				start = spans[whole-1][1]
			}
			if !p.Torn || p.Offset != start || !strings.Contains(p.Error(), fmt.Sprintf("offset %d", start)) || !strings.Contains(p.Error(), "torn tail") {
				t.Fatalf("cut %d: problem %v, want a torn tail at %d", cut, p, start)
			}
		}
	}
}

// TestDamagedMiddle flips bytes inside each frame in turn: the damaged
// frame is skipped with a problem naming its offset, the reader resyncs on
// the next frame, and every frame that does not depend on the damaged one
// comes back intact.
func TestDamagedMiddle(t *testing.T) {
	// Without index frames: a damaged index makes the reader scan, and
	// TestDamagedIndexedFrame covers a damaged frame an index lists.
	full, recs := buildDump(t, WriterOptions{KeyEvery: 4, IndexEvery: -1}, []string{"app", "client", "db"}, 10)
	intact := openBytes(t, full)
	spans := frameSpans(intact)
	// The chain of each frame: the file indexes it depends on.
	deps := make([][]int32, len(intact.entries))
	for i := range intact.entries {
		for j := intact.entries[i].base; j >= 0; j = intact.entries[j].base {
			deps[i] = append(deps[i], j)
		}
	}
	for k, s := range spans {
		for _, pos := range []int64{s[0], s[0] + 5, s[0] + 9, s[0] + 13, (s[0] + s[1]) / 2, s[1] - 1} {
			bad := bytes.Clone(full)
			bad[pos] ^= 0x5a
			r, err := NewReader(bytes.NewReader(bad), int64(len(bad)), "bad.rtd")
			if err != nil {
				t.Fatalf("frame %d byte %d: %v", k, pos, err)
			}
			lost := map[int]bool{k: true}
			for i := range deps {
				for _, d := range deps[i] {
					if int(d) == k {
						lost[i] = true
					}
				}
			}
			var got []int
			for i := 0; i < r.Len(); i++ {
				f, err := r.Frame(i)
				if err != nil {
					t.Fatalf("frame %d byte %d: reading %d: %v", k, pos, i, err)
				}
				// Find the original by offset.
				off := r.Info(i).Offset
				orig := -1
				for j, sp := range spans {
					if sp[0] == off {
						orig = j
					}
				}
				if orig < 0 || !sameFrame(f, recs[orig]) {
					t.Fatalf("frame %d byte %d: frame at %d differs", k, pos, off)
				}
				got = append(got, orig)
			}
			if len(got) != len(spans)-len(lost) {
				t.Fatalf("frame %d byte %d: %d frames back, want %d (lost %v)", k, pos, len(got), len(spans)-len(lost), lost)
			}
			probs := r.Problems()
			if len(probs) == 0 || probs[0].(*Problem).Offset != s[0] || !strings.Contains(probs[0].Error(), fmt.Sprintf("offset %d", s[0])) {
				t.Fatalf("frame %d byte %d: problems %v, want one at offset %d", k, pos, probs, s[0])
			}
		}
	}
}

// TestGarbageBetweenFrames: junk (even with a sync marker in it) between
// frames is skipped and reported.
func TestGarbageBetweenFrames(t *testing.T) {
	full, recs := buildDump(t, WriterOptions{}, []string{"app"}, 6)
	spans := frameSpans(openBytes(t, full))
	junk := append([]byte("junk"), syncMark[:]...)
	junk = append(junk, 0xff, 0xff, 0, 0, 1, 2, 3, 4)
	var b []byte
	b = append(b, full[:spans[3][0]]...)
	b = append(b, junk...)
	b = append(b, full[spans[3][0]:]...)
	r := openBytes(t, b)
	if r.Len() != len(recs) {
		t.Fatalf("%d frames, want %d", r.Len(), len(recs))
	}
	for i := 0; i < r.Len(); i++ {
		if f, err := r.Frame(i); err != nil || !sameFrame(f, recs[i]) {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	if p := r.Problems(); len(p) != 1 || p[0].(*Problem).Offset != spans[3][0] || p[0].(*Problem).Len != int64(len(junk)) {
		t.Fatalf("problems %v", p)
	}
}

// failingWriter fails after limit bytes, writing part of the frame.
type failingWriter struct {
	buf   bytes.Buffer
	limit int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	room := f.limit - f.buf.Len()
	if room >= len(p) {
		return f.buf.Write(p)
	}
	if room > 0 {
		f.buf.Write(p[:room])
	}
	return max(room, 0), errors.New("no space left on device")
}

func TestWriteErrorReportedAtOnce(t *testing.T) {
	fw := &failingWriter{limit: 1 << 30}
	w, err := NewWriter(fw, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append("app", time.Unix(1, 0), "text/plain", smallBody("app", 0)); err != nil {
		t.Fatal(err)
	}
	fw.limit = fw.buf.Len() + 10
	err = w.Append("app", time.Unix(2, 0), "text/plain", smallBody("app", 1))
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("Append on a full disk: %v", err)
	}
	if st := w.Stats(); st.Errors != 1 || st.Targets[0].Errors != 1 || !strings.Contains(st.Targets[0].LastError, "no space") {
		t.Fatalf("stats %+v", st)
	}
}

func TestWriteErrorOnFileTruncatesTheTornFrame(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.rtd")
	w, err := Create(path, false, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := w.Append("app", time.Unix(int64(i), 0), "text/plain", smallBody("app", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Swap the writer for one that fails half way, over the same file.
	good := w.off
	w.w = &halfWriter{f: w.f}
	if err := w.Append("app", time.Unix(9, 0), "text/plain", smallBody("app", 9)); err == nil {
		t.Fatal("no error")
	}
	w.w = w.f
	if err := w.Append("app", time.Unix(10, 0), "text/plain", smallBody("app", 10)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(r.Problems()) != 0 || r.Len() != 4 || r.Info(3).Offset != good {
		t.Fatalf("after a failed write: %d frames, problems %v", r.Len(), r.Problems())
	}
	f, err := r.Frame(3)
	if err != nil || !bytes.Equal(f.Body, smallBody("app", 10)) {
		t.Fatalf("frame after the failure: %v", err)
	}
}

type halfWriter struct{ f *os.File }

func (h *halfWriter) Write(p []byte) (int, error) {
	n, _ := h.f.Write(p[:len(p)/2])
	return n, errors.New("I/O error")
}

func TestCodecRoundTrip(t *testing.T) {
	bodies := [][]byte{
		nil, []byte("\n"), []byte("x 1"), []byte("x 1\n"), []byte("x{a=\"}\"} 1.5e+06 1700000000000\n"),
		[]byte("x 007\nx -0\nx 1e6\nx 1E+06\nx +Inf\nx NaN\nx 0.000\nx 12.0\n"),
		[]byte("bin\x00ary\x01\x01 1\n\x00 2\n"), []byte("{\"utf8.name\",a=\"b\"} 3\n"),
		[]byte("x 123456789012345678901234567890\n"), []byte("x   1   2   3\n"), []byte("x\t1\n"),
		[]byte("x 1 # {trace_id=\"a b\"} 1 2\n"), []byte("x 1.7976931348623157e+308\n"),
	}
	for _, b := range bodies {
		var tk tokens
		tokenize(b, &tk)
		got, err := tk.render(nil)
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%q: rendered %q, %v", b, got, err)
		}
		for _, base := range bodies {
			for _, v := range []uint16{2, Version} {
				var bt, out tokens
				tokenize(base, &bt)
				d := encodeDelta(nil, &tk, &bt, v)
				if err := decodeDelta(d, &bt, &out, v); err != nil {
					t.Fatalf("version %d: %q on %q: %v", v, b, base, err)
				}
				got, err := out.render(nil)
				if err != nil || !bytes.Equal(got, b) {
					t.Errorf("version %d: %q on %q: %q, %v", v, b, base, got, err)
				}
			}
		}
	}
}

// TestKeyFrameBySize: a delta that would save little is written as a key
// frame (here: a scrape with much new, incompressible text), and the
// frames after it still decode: growing counters go on across it.
func TestKeyFrameBySize(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var bodies [][]byte
	for i := 0; i < 12; i++ {
		var b strings.Builder
		for k := 0; k < 50; k++ {
			fmt.Fprintf(&b, "c_%d_total %d\n", k, 1000+i*(k+3)+i*i)
		}
		if i >= 5 {
			for k := 0; k < 40; k++ {
				fmt.Fprintf(&b, "info{id=\"%016x%016x\"} 1\n", rng.Uint64(), rng.Uint64())
			}
		}
		bodies = append(bodies, []byte(b.String()))
		if err := w.Append("t", time.Unix(int64(i), 0), "text/plain", bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	if st := w.Stats(); st.Targets[0].KeyFrames < 2 {
		t.Fatalf("%d key frames, want one when the random text appears", st.Targets[0].KeyFrames)
	}
	r := openBytes(t, buf.Bytes())
	for i := 0; i < r.Len(); i++ {
		f, err := r.Frame(i)
		if err != nil || !bytes.Equal(f.Body, bodies[i]) {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
}
