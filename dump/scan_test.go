package dump

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestIndexMark holds the eight-bytes-at-a-time scanner to the byte loop:
// marks at every position, next to bytes that borrow (0x02, 0x80, 0xff).
func TestIndexMark(t *testing.T) {
	ref := func(s []byte) int { return bytes.IndexAny(s, "\x00\x01") }
	rng := rand.New(rand.NewPCG(7, 9))
	alphabet := []byte{0x00, 0x01, 0x02, 0x03, 0x7f, 0x80, 0x81, 0xfe, 0xff, 'a', '\n', ' '}
	for n := 0; n < 40; n++ {
		for trial := 0; trial < 200; trial++ {
			s := make([]byte, n)
			for i := range s {
				if rng.IntN(6) == 0 {
					s[i] = alphabet[rng.IntN(len(alphabet))]
				} else {
					s[i] = 'a' + byte(rng.IntN(26))
				}
			}
			if got, want := indexMark(s), ref(s); got != want {
				t.Fatalf("indexMark(%q) = %d, want %d", s, got, want)
			}
		}
	}
	for pos := 0; pos < 24; pos++ {
		for _, m := range []byte{slotMark, escMark} {
			s := bytes.Repeat([]byte{0x02}, 24)
			s[pos] = m
			if got := indexMark(s); got != pos {
				t.Errorf("mark %d at %d: got %d", m, pos, got)
			}
		}
	}
}

// BenchmarkRender renders a tokenized 2,016-series body: the inner loop
// of every decoded frame.
func BenchmarkRender(b *testing.B) {
	body := newGenTarget(1, 2000).body()
	var tk tokens
	tokenize(body, &tk)
	dst := make([]byte, 0, len(body))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = tk.render(dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
	if !bytes.Equal(dst, body) {
		b.Fatal("render differs from the body")
	}
}

// seriesEndBytewise is seriesEnd as it was before its stop tables: the
// reference TestSeriesEnd holds them to.
func seriesEndBytewise(line []byte) int {
	if len(line) == 0 || line[0] == '#' || line[0] == ' ' || line[0] == '\t' {
		return 0
	}
	i := 0
	for i < len(line) && line[i] != '{' && line[i] != ' ' && line[i] != '\t' {
		if line[i] == '"' {
			return 0
		}
		i++
	}
	if i < len(line) && line[i] == '{' {
		inQuote := false
		for i++; i < len(line); i++ {
			c := line[i]
			switch {
			case inQuote && c == '\\':
				i++
			case c == '"':
				inQuote = !inQuote
			case !inQuote && c == '}':
				return i + 1
			}
		}
		return 0
	}
	return i
}

func TestSeriesEnd(t *testing.T) {
	fixed := []string{
		`a 1`, `a{b="c"} 1`, `a{b="}"} 1`, `a{b="\"}"} 1`, `a{b="\\"} 1`, `a{b="x\`, `a{b="x\"`,
		`a{b="c"`, `a"b" 1`, `{"a"} 1`, `# a`, ` a 1`, `a`, `a{}`, `a{b="c",d="e\n"} 1 2`, `a{b="\`,
	}
	for _, l := range fixed {
		if got, want := seriesEnd([]byte(l)), seriesEndBytewise([]byte(l)); got != want {
			t.Errorf("seriesEnd(%q) = %d, want %d", l, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte(`ab{}"\ ,=	#1`)
	for trial := 0; trial < 20000; trial++ {
		l := make([]byte, rng.IntN(16))
		for i := range l {
			l[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if got, want := seriesEnd(l), seriesEndBytewise(l); got != want {
			t.Fatalf("seriesEnd(%q) = %d, want %d", l, got, want)
		}
	}
}
