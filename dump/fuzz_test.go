package dump

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// Seed corpora live in testdata/fuzz/<Target>/ (go test's format) and
// testdata/import/; RETRYTOP_WRITE_SEEDS=1 go test -run WriteFuzzSeeds
// regenerates the dump seeds.

func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("RETRYTOP_WRITE_SEEDS") != "1" {
		t.Skip("set RETRYTOP_WRITE_SEEDS=1 to rewrite testdata/fuzz seeds")
	}
	b, _ := buildDump(t, WriterOptions{KeyEvery: 2}, []string{"a", "b"}, 4)
	torn := b[:len(b)-7]
	flipped := bytes.Clone(b)
	flipped[len(b)/2] ^= 0xff
	for name, data := range map[string][]byte{"dump": b, "torn": torn, "flipped": flipped} {
		writeSeed(t, "FuzzReader", name, data)
	}
	for target, file := range map[string]string{
		"FuzzImportOpenMetrics": "metrics.om", "FuzzImportPromJSON": "query_range.json",
		"FuzzImportVMJSON": "export.jsonl", "FuzzImportConcat": "snapshots.prom",
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "import", file))
		if err != nil {
			t.Fatal(err)
		}
		writeSeed(t, target, "sample", data)
	}
}

func writeSeed(t *testing.T, target, name string, data []byte) {
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzReader: any bytes either fail Open with an error or give an index
// whose every frame decodes or fails with an error; never a panic.
func FuzzReader(f *testing.F) {
	b, _ := buildDump(f, WriterOptions{KeyEvery: 3}, []string{"a", "b"}, 3)
	f.Add(b)
	f.Add(b[:len(b)/2])
	// Every format version's fixture (version_test.go), whole and torn.
	for v := 1; v <= Version; v++ {
		fx, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("v%d.rtd", v)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(fx)
		f.Add(fx[:len(fx)*2/3])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		readAll(t, data)
		// Again with every checksum made right, so that damaged frame
		// contents reach the decoder.
		readAll(t, fixChecksums(bytes.Clone(data)))
	})
}

// fixChecksums rewrites the checksum of every frame found by its sync
// marker and length.
func fixChecksums(b []byte) []byte {
	for i := headerSize; i+frameHeaderSize <= len(b); i++ {
		if !bytes.Equal(b[i:i+4], syncMark[:]) {
			continue
		}
		n := int(binary.LittleEndian.Uint32(b[i+4:]))
		if n < 0 || i+frameHeaderSize+n > len(b) {
			continue
		}
		binary.LittleEndian.PutUint32(b[i+8:], crc32.Checksum(b[i+frameHeaderSize:i+frameHeaderSize+n], castagnoli))
		i += frameHeaderSize + n - 1
	}
	return b
}

func readAll(t *testing.T, data []byte) {
	{
		r, err := NewReader(bytes.NewReader(data), int64(len(data)), "fuzz")
		if err != nil {
			return
		}
		defer r.Close()
		for _, p := range r.Problems() {
			_ = p.Error()
		}
		for i := 0; i < r.Len(); i++ {
			fr, err := r.Frame(i)
			if err == nil && fr.Err == "" && len(fr.Body) != r.Info(i).BodyLen {
				t.Fatalf("frame %d: %d bytes, index says %d", i, len(fr.Body), r.Info(i).BodyLen)
			}
		}
		for i := r.Len() - 1; i >= 0; i-- {
			_, _ = r.Frame(i)
		}
		if r.Len() > 0 {
			r.Search(r.Info(r.Len() / 2).Time)
		}
	}
}

// FuzzCodec: the body transform is lossless, alone and as a delta.
func FuzzCodec(f *testing.F) {
	f.Add([]byte("x{a=\"1\"} 1.5e+06 1700000000000\ny 12.0\n"), []byte("x{a=\"1\"} 1.25e+06\n"))
	f.Add([]byte("# HELP x y\nx 007\nx -0\n"), []byte(""))
	f.Add([]byte("a\x00b 1\n"), []byte("a\x01b 2\n"))
	f.Add([]byte("x{a=\"1\"} 2\nx_total 3 17\ny{b=\"\\\"\"} 1\n"), []byte("x{a=\"1\"} 1\nx_totalz 3\ny{b=\"\\\"\"}1\n"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var ta, tb tokens
		tokenize(a, &ta)
		got, err := ta.render(nil)
		if err != nil || !bytes.Equal(got, a) {
			t.Fatalf("render(tokenize(%q)) = %q, %v", a, got, err)
		}
		tokenize(b, &tb)
		for _, v := range []uint16{2, 3, Version} {
			// Version 3 reads numbers wide (parseNumW), as its writer
			// and reader do.
			ta, tb := tokens{wide: v >= 3}, tokens{wide: v >= 3}
			tokenize(a, &ta)
			tokenize(b, &tb)
			if got, err := ta.render(nil); err != nil || !bytes.Equal(got, a) {
				t.Fatalf("version %d: render(tokenize(%q)) = %q, %v", v, a, got, err)
			}
			var out tokens
			d := encodeDelta(nil, &ta, &tb, v)
			if err := decodeDelta(d, &tb, &out, v); err != nil {
				t.Fatalf("version %d: decode: %v", v, err)
			}
			if got, err := out.render(nil); err != nil || !bytes.Equal(got, a) {
				t.Fatalf("version %d: delta of %q on %q gave %q, %v", v, a, b, got, err)
			}
			// A second delta on top: the growths, kinds and predictor
			// costs the encoder and the decoder keep must agree.
			tb2, out2 := tokens{wide: v >= 3}, tokens{}
			tokenize(b, &tb2)
			d2 := encodeDelta(nil, &tb2, &ta, v)
			if err := decodeDelta(d2, &out, &out2, v); err != nil {
				t.Fatalf("version %d: second decode: %v", v, err)
			}
			if got, err := out2.render(nil); err != nil || !bytes.Equal(got, b) {
				t.Fatalf("version %d: delta of %q on %q on %q gave %q, %v", v, b, a, b, got, err)
			}
			if !sameState(&out2, &tb2) {
				t.Fatalf("version %d: the decoder's state of %q on %q on %q differs from the encoder's", v, b, a, b)
			}
		}
		// The writer's tokenization of b after a is tokenize's.
		var reused tokens
		same := tokenizeReuse(b, &reused, &ta, a)
		if !sameTokens(&reused, &tb) {
			t.Fatalf("tokenizeReuse(%q after %q) differs from tokenize", b, a)
		}
		if same && !bytes.Equal(reused.structure, ta.structure) {
			t.Fatalf("tokenizeReuse(%q after %q) says the structure stayed", b, a)
		}
		// The same body again, after a delta gave its slots a state: the
		// writer's encodeSame is encodeDelta of the body on itself.
		ta.wide, tb.wide = true, true
		tokenize(a, &ta)
		tokenize(b, &tb)
		encodeDelta(nil, &tb, &ta, Version)
		ref := cloneTokens(&tb)
		want := encodeDelta(nil, &ref, &tb, Version)
		if got := encodeSame(nil, &tb); !bytes.Equal(got, want) || !sameState(&tb, &ref) {
			t.Fatalf("encodeSame of %q after %q differs from encodeDelta", b, a)
		}
	})
}

// sameTokens compares structure, numbers (growths aside) and rows.
func sameTokens(a, b *tokens) bool {
	if !bytes.Equal(a.structure, b.structure) || len(a.nums) != len(b.nums) || len(a.rows) != len(b.rows) {
		return false
	}
	for i := range a.nums {
		if !a.nums[i].sameValue(b.nums[i]) {
			return false
		}
	}
	for i := range a.rows {
		if a.rows[i] != b.rows[i] {
			return false
		}
	}
	return true
}

// sameState: the encoder's and the decoder's tokens agree in everything
// the next delta reads: values, shapes, growths, kinds and costs.
func sameState(a, b *tokens) bool {
	if len(a.nums) != len(b.nums) {
		return false
	}
	for i := range a.nums {
		if a.nums[i] != b.nums[i] {
			return false
		}
	}
	return true
}

// FuzzDecodeDelta: arbitrary delta bytes over a base never panic.
func FuzzDecodeDelta(f *testing.F) {
	var ta, tb tokens
	tokenize([]byte("x 1\ny 2.5 3\n"), &ta)
	tokenize([]byte("x 2\ny 2.75 4\nz 1\n"), &tb)
	f.Add(encodeDelta(nil, &ta, &tb, 2), []byte("x 2\ny 2.75 4\nz 1\n"))
	f.Add(encodeDelta(nil, &ta, &tb, Version), []byte("x 2\ny 2.75 4\nz 1\n"))
	f.Fuzz(func(t *testing.T, delta, base []byte) {
		for _, v := range []uint16{2, 3, Version} {
			var tb, out tokens
			tokenize(base, &tb)
			if decodeDelta(delta, &tb, &out, v) == nil {
				_, _ = out.render(nil)
			}
		}
	})
}

func fuzzImport(f *testing.F, format string, seeds ...string) {
	for _, s := range seeds {
		if b, err := os.ReadFile(filepath.Join("testdata", "import", s)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = DetectFormat(data)
		snaps, err := ImportBytes(data, "fuzz", format, ImportOptions{})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if !sort.SliceIsSorted(snaps, func(i, j int) bool { return snaps[i].Time.Before(snaps[j].Time) }) {
			t.Fatal("snapshots out of time order")
		}
	})
}

func FuzzImportOpenMetrics(f *testing.F) { fuzzImport(f, FormatOpenMetrics, "metrics.om") }
func FuzzImportPromJSON(f *testing.F)    { fuzzImport(f, FormatPromJSON, "query_range.json") }
func FuzzImportVMJSON(f *testing.F)      { fuzzImport(f, FormatVMJSON, "export.jsonl") }
func FuzzImportConcat(f *testing.F)      { fuzzImport(f, FormatConcat, "snapshots.prom") }

// TestTokenizeReuse: the writer's tokenization, which takes unchanged
// lines' structure from the previous body, equals tokenize on generated
// Envoy bodies scrape after scrape, with a series appearing, one going
// and a label value changing in the middle (lines shift: nothing reused
// wrongly after them).
func TestTokenizeReuse(t *testing.T) {
	g := newGenTarget(7, 300)
	var prev, cur, want tokens
	var prevBody []byte
	reused := 0
	for i := range 40 {
		body := g.body()
		switch i % 10 {
		case 3:
			body = append([]byte("new_series{x=\"1\"} 5\n"), body...)
		case 6:
			body = bytes.Replace(body, []byte("svc_1\""), []byte("svc_1b\""), 1)
		}
		same := tokenizeReuse(body, &cur, &prev, prevBody)
		tokenize(body, &want)
		if !sameTokens(&cur, &want) {
			t.Fatalf("scrape %d: tokenizeReuse differs from tokenize", i)
		}
		if same != (i%10 != 3 && i%10 != 4 && i%10 != 6 && i%10 != 7 && i > 0) {
			// The structure changes at 3 and 6 and back at 4 and 7.
			t.Fatalf("scrape %d: tokenizeReuse says the structure stayed: %v", i, same)
		}
		if got, err := cur.render(nil); err != nil || !bytes.Equal(got, body) {
			t.Fatalf("scrape %d: render: %v", i, err)
		}
		for k, r := range cur.rows {
			if r.series > 0 && k < len(prev.rows) && prev.rows[k].series == r.series {
				reused++
			}
		}
		prev, cur = cur, prev
		prevBody = append(prevBody[:0], body...)
		g.step()
	}
	if reused == 0 {
		t.Fatal("no line could have been reused: the test would not see reuse going wrong")
	}
}
