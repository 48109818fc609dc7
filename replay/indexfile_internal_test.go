package replay

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
)

// smallRec is a recording of two targets over three chunks of a: a's
// second series appears at scrape 70, b fails every 50th round.
func smallRec(t testing.TB) dump.Recording {
	path := filepath.Join(t.TempDir(), "r.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for n := 0; n < 150; n++ { // three chunks of target a
		at := t0.Add(time.Duration(n) * time.Second)
		body := fmt.Sprintf("# TYPE c counter\nc{k=\"x\"} %d\n", n)
		if n >= 70 {
			body += fmt.Sprintf("c{k=\"late\"} %d\n", n)
		}
		if err := w.Append("a", at, "text/plain", []byte(body)); err != nil {
			t.Fatal(err)
		}
		if n%50 == 7 {
			err = w.AppendError("b", at.Add(time.Millisecond), "refused")
		} else {
			err = w.Append("b", at.Add(time.Millisecond), "text/plain", []byte("# TYPE g gauge\ng 0.5\n"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return closeOpen(t, w, path)
}

func closeOpen(t testing.TB, w *dump.Writer, path string) dump.Recording {
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := dump.OpenRecording(path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec
}

func built(t testing.TB, rec dump.Recording, opts Options) *Player {
	p := New(rec, opts)
	if err := p.BuildIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p
}

// payloadOf is x encoded for rec: the payload ReadIndex checks.
func payloadOf(t testing.TB, x *index, rec dump.Recording) []byte {
	table, body, err := encodeIndex(x, rec)
	if err != nil {
		t.Fatal(err)
	}
	return append(table, body...)
}

// fileOf is a whole index file of payload for p under key.
func fileOf(p *Player, payload []byte, key [32]byte) []byte {
	var file bytes.Buffer
	if err := writeIndexFile(&file, payload, nil, p.indexKey(key)); err != nil {
		panic(err)
	}
	return file.Bytes()
}

// TestIndexFileChecksWhatItHolds: a file whose header, length and
// checksum are right but whose content does not fit the recording (made
// by something else, or by a bug) is refused before any seek reads it:
// each case breaks one thing a seek would read, and the error says what
// and at which byte of the file.
func TestIndexFileChecksWhatItHolds(t *testing.T) {
	rec := smallRec(t)
	good := built(t, rec, Options{})
	var key [32]byte
	good.index.mu.RLock()
	goodPayload := payloadOf(t, &good.index, rec)
	good.index.mu.RUnlock()
	target := func(x *index, name string) *tlog {
		if l := x.targets[name]; l != nil {
			return l
		}
		t.Fatalf("no target %s", name)
		return nil
	}
	for _, tc := range []struct {
		name string
		edit func(x *index)
		want string
	}{
		{"unchanged", func(*index) {}, ""},
		{"fewer entries", func(x *index) { x.done-- }, "entries, the recording has"},
		{"an entry of another target", func(x *index) { a := target(x, "a"); a.entries[1] = target(x, "b").entries[1] }, "not one of its entries"},
		{"an entry nobody has", func(x *index) { a := target(x, "a"); a.entries = a.entries[:len(a.entries)-1] }, "belongs to no target"},
		{"more scrapes than logged", func(x *index) { x.next[len(x.next)-1] = 1000 }, "holds 1000 scrapes"},
		{"fewer scrapes than the entry before", func(x *index) { x.next[len(x.next)-1] = 1 }, "holds 1 scrapes"},
		{"a column cut short", func(x *index) { c := &target(x, "a").chunks[0]; c.off[len(c.off)-1]-- }, "column"},
		{"unknown column flags", func(x *index) { target(x, "a").chunks[1].data[0] = 0x80 }, "unknown flags"},
		{"a series id out of range", func(x *index) { c := &target(x, "a").chunks[2]; c.ids[len(c.ids)-1] = 99 }, "series ids"},
		{"a live series without its column", func(x *index) {
			c := &target(x, "a").chunks[2]
			c.ids, c.off = c.ids[:1], c.off[:2]
		}, "has no column"},
		{"a series born after the end", func(x *index) { target(x, "a").series[0].born = 150 }, "lives from scrape 150"},
		{"a series dead before its birth", func(x *index) { s := &target(x, "a").series[1]; s.died = s.born }, "lives from"},
		{"an error past the end", func(x *index) { x.errs = map[int]error{1 << 20: errors.New("x")} }, "an error at entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A copy of the good index, read back, edited and written.
			q := New(rec, Options{})
			x, err := q.decodeIndex(append([]byte(nil), goodPayload...))
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(x)
			file := fileOf(q, payloadOf(t, x, rec), key)
			checkRefused(t, q, file, key, tc.want)
		})
	}
}

// checkRefused reads file into p and checks that it is loaded (want "")
// or refused with an *IndexFileError saying want at a byte inside the
// file, leaving p without an index.
func checkRefused(t *testing.T, p *Player, file []byte, key [32]byte, want string) {
	t.Helper()
	err := p.ReadIndex(bytes.NewReader(file), int64(len(file)), key)
	if want == "" {
		if err != nil {
			t.Fatalf("the unchanged file was refused: %v", err)
		}
		return
	}
	var refused *IndexFileError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one saying %q", err, want)
	}
	// A byte of the file, or of the payload the header says it holds.
	at, size := fmt.Sprintf("at byte %d: ", refused.Offset), int64(len(file))
	if refused.Payload {
		at, size = fmt.Sprintf("at byte %d of the decompressed index: ", refused.Offset), int64(binary.LittleEndian.Uint64(file[52:60]))
	}
	if refused.Offset > size || !strings.Contains(err.Error(), at) {
		t.Fatalf("error %v: offset %d, %d bytes", err, refused.Offset, size)
	}
	if p.index.started || p.index.done != 0 {
		t.Fatal("a refused file was installed")
	}
}

// TestIndexFileRefusesBytes: payloads damaged below the checksum (it is
// recomputed, as a hostile or buggy writer would) are refused with the
// byte where the damage shows, and never allocate for a count the file
// cannot hold.
func TestIndexFileRefusesBytes(t *testing.T) {
	rec := smallRec(t)
	good := built(t, rec, Options{})
	var key [32]byte
	good.index.mu.RLock()
	table, body, err := encodeIndex(&good.index, rec)
	good.index.mu.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	var u []byte
	uv := func(vs ...uint64) []byte {
		u = u[:0]
		for _, v := range vs {
			u = binaryAppendUvarint(u, v)
		}
		return append([]byte(nil), u...)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"empty", nil, "bad or cut varint"},
		{"a string table longer than the file", uv(1 << 40), "strings, more than"},
		{"strings longer than the file", uv(2, 1, 1<<40), "strings of"},
		{"targets the file cannot hold", cat(uv(0, uint64(rec.Len()), 1<<50)), "targets, more than"},
		{"no strings for the body", cat(uv(0), body), "string "},
		{"the body cut in half", cat(table, body[:len(body)/2]), ""},
		{"a byte after the index", cat(table, body, []byte{0}), "1 bytes after the index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = "at byte"
			}
			checkRefused(t, New(rec, Options{}), fileOf(good, tc.payload, key), key, want)
		})
	}
}

func binaryAppendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// writtenIndex is smallRec's player with its index built and written
// under the zero key.
func writtenIndex(t *testing.T) (dump.Recording, *Player, *bytes.Buffer) {
	rec := smallRec(t)
	p := built(t, rec, Options{})
	var file bytes.Buffer
	if err := p.WriteIndex(&file, [32]byte{}); err != nil {
		t.Fatal(err)
	}
	return rec, p, &file
}

// TestIndexFileBounds: a file larger than MaxIndexFile, or than the
// player's index memory accepts, is refused from its header, before its
// payload is read; WriteIndex does not write what a reader would refuse.
func TestIndexFileBounds(t *testing.T) {
	rec, p, file := writtenIndex(t)
	var key [32]byte
	huge := int64(MaxIndexFile) + 1
	hdr := append([]byte(nil), file.Bytes()[:indexHeaderLen]...)
	putLen(hdr, uint64(huge-indexHeaderLen))
	q := New(rec, Options{})
	err := q.ReadIndex(headerOnly(hdr), huge, key)
	var refused *IndexFileError
	if !errors.As(err, &refused) || refused.Offset != 40 || !strings.Contains(err.Error(), "MB of index, over") {
		t.Fatalf("a file of %d bytes: %v", huge, err)
	}
	// A budget of 1 KiB accepts 1.25 KiB: the payload is larger (the
	// file, compressed, need not be).
	small := New(rec, Options{IndexMemory: 1 << 10})
	if raw := binary.LittleEndian.Uint64(file.Bytes()[52:60]); raw <= 1<<10+1<<8 {
		t.Fatalf("the test's payload (%d bytes) is not over the small budget", raw)
	}
	checkRefused(t, small, file.Bytes(), key, "MB of index once decompressed, over")
	// The same index, its player's budget lowered after the build: the
	// file a reader with that budget refuses is not written.
	p.opts.IndexMemory = 1 << 10
	if err := p.WriteIndex(&bytes.Buffer{}, key); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("writing an index over what a reader accepts: %v", err)
	}
}

func putLen(hdr []byte, n uint64) {
	for k := 0; k < 8; k++ {
		hdr[40+k] = byte(n >> (8 * k))
	}
}

// TestIndexFileDecompressionBounded: the payload is decompressed only
// into what the header announces. A payload whose decompressed length
// the player would not accept is refused from the header; stored bytes
// that are not zstd, or that decompress to more or fewer bytes than
// announced, are refused at the payload's first byte, their checksum
// right (a hostile or buggy writer), and the decompression never makes
// more than the announced length or 1 MiB.
func TestIndexFileDecompressionBounded(t *testing.T) {
	rec, _, file := writtenIndex(t)
	var key [32]byte
	good := file.Bytes()
	raw := binary.LittleEndian.Uint64(good[52:60])
	if stored := len(good) - indexHeaderLen; uint64(stored) >= raw {
		t.Fatalf("stored %d bytes of a %d-byte payload: not compressed", stored, raw)
	}
	// Over what the player accepts once decompressed: from the header.
	hdr := append([]byte(nil), good[:indexHeaderLen]...)
	binary.LittleEndian.PutUint64(hdr[52:60], uint64(MaxIndexFile))
	err := New(rec, Options{}).ReadIndex(headerOnly(hdr), int64(len(good)), key)
	var refused *IndexFileError
	if !errors.As(err, &refused) || refused.Offset != 52 || !strings.Contains(err.Error(), "once decompressed, over") {
		t.Fatalf("a payload of 2 GiB: %v", err)
	}
	// The stored bytes replaced, their length and checksum made right.
	restored := func(lenRaw uint64, stored []byte) []byte {
		f := append(append([]byte(nil), good[:indexHeaderLen]...), stored...)
		binary.LittleEndian.PutUint64(f[40:48], uint64(len(stored)))
		binary.LittleEndian.PutUint32(f[48:52], crc32.Checksum(stored, castagnoli))
		binary.LittleEndian.PutUint64(f[52:60], lenRaw)
		return f
	}
	zeros := indexEncoder.EncodeAll(make([]byte, 64<<20), nil) // 64 MiB in a few KiB
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"not zstd", restored(raw, []byte("# TYPE x counter\nx 1\n")), "at byte 60: decompressing"},
		{"one byte short of the header's length", restored(raw+1, good[indexHeaderLen:]), "at byte 60: decompressing"},
		{"one byte over the header's length", restored(raw-1, good[indexHeaderLen:]), "at byte 60: decompressing"},
		{"a bomb: 64 MiB of zeros announced as the payload", restored(raw, zeros), "at byte 60: decompressing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			checkRefused(t, New(rec, Options{}), tc.file, key, tc.want)
			runtime.ReadMemStats(&after)
			// What the zeros would take decompressed, by a margin: the
			// limit (1 MiB here) is what is allowed.
			if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
				t.Errorf("refusing it allocated %d MiB", got>>20)
			}
		})
	}
}

// headerOnly is a file whose first bytes are hdr and whose other bytes
// must not be read.
type headerOnly []byte

func (h headerOnly) ReadAt(b []byte, off int64) (int, error) {
	if off != 0 || len(b) > len(h) {
		panic(fmt.Sprintf("read of %d bytes at %d past the header", len(b), off))
	}
	return copy(b, h), nil
}

// TestIndexFileRoundTrip: the index read back from its file is the
// index built, field by field (values bit for bit), on random
// recordings (series born, forgotten and back, NaN, fractions, large
// integers, failed scrapes, a body that does not parse, a small store
// that forgets) and on the real ones in whatif/testdata; and the file is
// no larger than what the index counts (IndexBytes), which the reader's
// bound on the budget relies on.
func TestIndexFileRoundTrip(t *testing.T) {
	type rc struct {
		name string
		rec  func(t *testing.T) dump.Recording
		opts Options
	}
	cases := []rc{{"small", func(t *testing.T) dump.Recording { return smallRec(t) }, Options{}}}
	for seed := uint64(1); seed <= 6; seed++ {
		cases = append(cases, rc{fmt.Sprintf("random %d", seed), func(t *testing.T) dump.Recording { return randomRec(t, seed) },
			Options{Store: model.StoreConfig{History: 40 + int(seed)*10, MaxSeriesPerTarget: 30}}})
	}
	for _, name := range []string{"baseline.rtd", "bounded.rtd"} {
		cases = append(cases, rc{name, func(t *testing.T) dump.Recording {
			rec, err := dump.OpenRecording(filepath.Join("..", "whatif", "testdata", name), dump.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rec.Close() })
			return rec
		}, Options{}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.rec(t)
			p := built(t, rec, tc.opts)
			var key [32]byte
			var file bytes.Buffer
			if err := p.WriteIndex(&file, key); err != nil {
				t.Fatal(err)
			}
			if int64(file.Len()-indexHeaderLen) > p.IndexBytes() {
				t.Errorf("the file holds %d bytes, the index counts %d", file.Len()-indexHeaderLen, p.IndexBytes())
			}
			q := New(rec, tc.opts)
			if err := q.ReadIndex(bytes.NewReader(file.Bytes()), int64(file.Len()), key); err != nil {
				t.Fatal(err)
			}
			sameIndex(t, &p.index, &q.index)
			if strings.HasPrefix(tc.name, "random") {
				// What the random recordings are for is there.
				capped, nanSeed := false, false
				for _, s := range p.index.status {
					capped = capped || s.SeriesCap != nil
				}
				for _, l := range p.index.targets {
					for _, s := range l.series {
						nanSeed = nanSeed || (s.seed != s.seed && s.born > 0)
					}
				}
				if len(p.index.errs) == 0 || !capped || !nanSeed {
					t.Fatalf("the random recording lacks a parse error (%d), a capped scrape (%v) or a NaN seed (%v)", len(p.index.errs), capped, nanSeed)
				}
			}
		})
	}
}

// randomRec records 3 targets over 200-400 rounds: series drawn from a
// pool of 60 appear and leave at random, values are counters, gauges
// with fractions, NaN or integers past 2^53; some scrapes fail, one
// body does not parse.
func randomRec(t testing.TB, seed uint64) dump.Recording {
	rng := rand.New(rand.NewPCG(seed, 99))
	path := filepath.Join(t.TempDir(), "random.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{KeyEvery: 8})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	rounds := 200 + rng.IntN(200)
	live := map[string]map[int]bool{}
	counters := map[string]float64{}
	for n := 0; n < rounds; n++ {
		for k, target := range []string{"a", "b", "c"} {
			at := t0.Add(time.Duration(n)*time.Second + time.Duration(k)*time.Millisecond)
			if live[target] == nil {
				live[target] = map[int]bool{}
			}
			for j := 0; j < 3; j++ {
				id := rng.IntN(60)
				live[target][id] = !live[target][id]
			}
			switch r := rng.IntN(40); {
			case r == 0:
				err = w.AppendError(target, at, fmt.Sprintf("refused %d", rng.IntN(3)))
			case n == rounds/2 && target == "b":
				err = w.Append(target, at, "text/plain", []byte("# TYPE x counter\nx{ 1\n"))
			default:
				var b strings.Builder
				b.WriteString("# TYPE c counter\n# TYPE g gauge\n")
				for id := 0; id < 60; id++ {
					if !live[target][id] {
						continue
					}
					key := fmt.Sprintf("%s/%d", target, id)
					if id%2 == 0 {
						counters[key] += float64(rng.IntN(1000))
						if rng.IntN(100) == 0 {
							counters[key] = 0 // a reset
						}
						fmt.Fprintf(&b, "c{id=\"%d\",t=\"%s\"} %g\n", id, strings.Repeat("v", id%7), counters[key])
						continue
					}
					var v float64
					switch rng.IntN(5) {
					case 0:
						v = math.NaN()
					case 1:
						v = rng.Float64() * 100
					case 2:
						v = float64(1<<60) + float64(rng.IntN(1000))*4096
					default:
						v = float64(rng.IntN(50) - 25)
					}
					fmt.Fprintf(&b, "g{id=\"%d\"} %g\n", id, v)
				}
				err = w.Append(target, at, "text/plain", []byte(b.String()))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return closeOpen(t, w, path)
}

// sameIndex compares two finished indexes: what a seek reads of them.
func sameIndex(t *testing.T, a, b *index) {
	t.Helper()
	if a.done != b.done || !reflect.DeepEqual(a.next, b.next) {
		t.Fatalf("entries %d/%d, next differ", a.done, b.done)
	}
	for i := range a.status {
		if !reflect.DeepEqual(a.status[i], b.status[i]) {
			t.Fatalf("entry %d: status %+v, read %+v", i, a.status[i], b.status[i])
		}
	}
	if len(a.errs) != len(b.errs) {
		t.Fatalf("%d errors, read %d", len(a.errs), len(b.errs))
	}
	for i, err := range a.errs {
		if b.errs[i] == nil || b.errs[i].Error() != err.Error() {
			t.Fatalf("entry %d: error %v, read %v", i, err, b.errs[i])
		}
	}
	if len(a.targets) != len(b.targets) {
		t.Fatalf("%d targets, read %d", len(a.targets), len(b.targets))
	}
	bits := math.Float64bits
	for name, la := range a.targets {
		lb := b.targets[name]
		if lb == nil {
			t.Fatalf("target %s not read", name)
		}
		if !reflect.DeepEqual(la.entries, lb.entries) || !reflect.DeepEqual(la.times, lb.times) || la.open.first != lb.open.first {
			t.Fatalf("target %s: entries, times or chunk count differ", name)
		}
		for k := range la.meta {
			ma, mb := la.meta[k], lb.meta[k]
			if bits(ma.start) != bits(mb.start) || ma.dropped != mb.dropped || ma.capped != mb.capped {
				t.Fatalf("target %s, scrape %d: %+v, read %+v", name, k, ma, mb)
			}
		}
		if len(la.series) != len(lb.series) {
			t.Fatalf("target %s: %d series, read %d", name, len(la.series), len(lb.series))
		}
		for k := range la.series {
			sa, sb := la.series[k], lb.series[k]
			if sa.key != sb.key || sa.name != sb.name || len(sa.labels) != len(sb.labels) || (len(sa.labels) > 0 && !reflect.DeepEqual(sa.labels, sb.labels)) ||
				sa.typ != sb.typ || bits(sa.extra) != bits(sb.extra) || sa.born != sb.born || sa.died != sb.died || bits(sa.seed) != bits(sb.seed) || sb.pos != -1 {
				t.Fatalf("target %s, series %d: %+v, read %+v", name, k, sa, sb)
			}
		}
		if len(la.chunks) != len(lb.chunks) {
			t.Fatalf("target %s: %d chunks, read %d", name, len(la.chunks), len(lb.chunks))
		}
		for c := range la.chunks {
			ca, cb := la.chunks[c], lb.chunks[c]
			if !reflect.DeepEqual(ca.ids, cb.ids) || !reflect.DeepEqual(ca.off, cb.off) || !bytes.Equal(ca.data, cb.data) {
				t.Fatalf("target %s, chunk %d differs", name, c)
			}
		}
	}
}

// FuzzReadIndex: any payload (its header and checksum made right, so
// the decoder sees it) is read or refused with an *IndexFileError,
// never a panic; one read is restored at a few playheads without one.
// The corpus: a good payload of the small recording (added here) and,
// in testdata/fuzz/FuzzReadIndex, hand-written payloads for it: empty,
// a string table alone, the right entry count (300) then 2^63 targets,
// and one target cut after its entries.
func FuzzReadIndex(f *testing.F) {
	rec := smallRec(f)
	good := built(f, rec, Options{})
	good.index.mu.RLock()
	f.Add(payloadOf(f, &good.index, rec))
	good.index.mu.RUnlock()
	var key [32]byte
	f.Fuzz(func(t *testing.T, payload []byte) {
		p := New(rec, Options{})
		file := fileOf(p, payload, key)
		err := p.ReadIndex(bytes.NewReader(file), int64(len(file)), key)
		if err != nil {
			var refused *IndexFileError
			if !errors.As(err, &refused) {
				t.Fatalf("not an IndexFileError: %v", err)
			}
			return
		}
		for _, end := range []int{1, rec.Len() / 2, rec.Len()} {
			if _, _, _, _, ok := p.index.restore(end, p.opts.Store, rec.Targets()); !ok {
				t.Fatalf("a file read does not restore entry %d", end)
			}
		}
	})
}

// TestIndexKeyOf: the key computed with its parts while the recording is
// hashed is IndexKey's, and it changes with the parts.
func TestIndexKeyOf(t *testing.T) {
	path := filepath.Join("..", "whatif", "testdata", "baseline.rtd")
	want, err := IndexKey(path, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	got, err := indexKeyOf(path, func() []string { return []string{"a", "b"} })
	if err != nil || got != want {
		t.Fatalf("indexKeyOf: %x, %v; IndexKey: %x", got, err, want)
	}
	if other, _ := indexKeyOf(path, func() []string { return []string{"ab"} }); other == want {
		t.Fatal("other parts, the same key")
	}
	if _, err := indexKeyOf(filepath.Join(t.TempDir(), "none"), func() []string { return nil }); err == nil {
		t.Fatal("no recording, no error")
	}
}

// TestIndexCacheLoadKeyLater: the load IndexWithCache does, the key
// computed while the file is read: a file made under another key is
// refused after its checksum, one made under this key is installed, a
// key that cannot be computed is the error.
func TestIndexCacheLoadKeyLater(t *testing.T) {
	rec := smallRec(t)
	c := IndexCache{Dir: t.TempDir()}
	key := [32]byte{1}
	if err := c.Save(built(t, rec, Options{}), "r.rtd", key); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		key  [32]byte
		kerr error
		ok   bool
		want string
	}{
		{"this key", key, nil, true, ""},
		{"another key", [32]byte{2}, nil, false, "at byte 8: made for another recording"},
		{"no key", key, errors.New("unreadable recording"), false, "unreadable recording"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(rec, Options{})
			ok, err := c.load(p, "r.rtd", func() ([32]byte, error) { return tc.key, tc.kerr }, nil)
			if ok != tc.ok || (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("loaded %v, %v; want %v, %q", ok, err, tc.ok, tc.want)
			}
			if done, _, _ := p.IndexProgress(); (done != 0) != tc.ok {
				t.Fatalf("%d entries indexed", done)
			}
		})
	}
}
