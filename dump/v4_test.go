package dump

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWriterWritesVersionFixture: the writer writes testdata/v<Version>.rtd
// byte for byte from fixtureScrapes (KeyEvery 8), so that a change to the
// format is a decision (a new version, or the fixture rewritten with
// RETRYTOP_WRITE_VERSION_FIXTURES=1 before the format is released), not
// an accident; TestOlderVersionsRead reads it back.
func TestWriterWritesVersionFixture(t *testing.T) {
	name := fmt.Sprintf("v%d.rtd", Version)
	want, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if got := writeFixture(t, WriterOptions{KeyEvery: 8}); !bytes.Equal(got, want) {
		t.Fatalf("the writer wrote %d bytes, testdata/%s has %d: the version %d format changed", len(got), name, len(want), Version)
	}
}

// TestVersion4DeltaHeader: a delta frame (version 4 and later) names its
// target by number and stores its step and body length against its
// base's: its header is kind, link, number, two residuals and the
// checksum, and the target's name is in its key frame only.
func TestVersion4DeltaHeader(t *testing.T) {
	const target = "a-target-with-a-long-name.example:9102"
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterOptions{IndexEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1741057965, 0)
	// Steps of 1 s plus a jitter below 1 ms, so the step residuals
	// (against 1 s, the base's step rounded to stepQuantum) fit three
	// varint bytes (|r| < 2^20); the first delta's, after the key frame,
	// is the whole step (five bytes).
	steps := []time.Duration{0, time.Second + 734567*time.Nanosecond, time.Second - 765432*time.Nanosecond, time.Second + 999999*time.Nanosecond}
	// Bodies of many equal lines, so that every frame after the first is
	// a delta (a key frame follows a delta larger than half the last key
	// frame), one value one digit longer each time.
	var fixed strings.Builder
	for k := range 200 {
		fixed.WriteString("y_total{instance=\"i" + strings.Repeat("x", k%7) + "\",k=\"" + string(rune('a'+k%26)) + "\"} 12345\n")
	}
	bodyOf := func(i int) []byte {
		return []byte(fixed.String() + "x_total{a=\"1\"} " + strings.Repeat("1", i+1) + "\n")
	}
	for i, s := range steps {
		at = at.Add(s)
		body := bodyOf(i)
		if err := w.Append(target, at, "text/plain", body); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	r := openBytes(t, b)
	if r.Len() != len(steps) {
		t.Fatalf("%d frames, want %d", r.Len(), len(steps))
	}
	for i := 0; i < r.Len(); i++ {
		e := &r.entries[r.order[i]]
		frame := b[e.info.Offset : e.info.Offset+int64(e.info.Size)]
		header := e.info.Size - frameHeaderSize - int(e.payLen)
		if i == 0 {
			if !e.info.Key || !bytes.Contains(frame, []byte(target)) {
				t.Fatalf("frame 0: key %v, holds the name %v; want a key frame naming its target", e.info.Key, bytes.Contains(frame, []byte(target)))
			}
			continue
		}
		// kind 1, link 2, number 1, step residual, length residual 1 (the
		// body grew by one byte), body checksum 4.
		stepRes := 3
		if i == 1 {
			stepRes = 5
		}
		if want := 1 + 2 + 1 + stepRes + 1 + 4; e.info.Key || header != want || bytes.Contains(frame, []byte(target)) {
			t.Fatalf("frame %d: key %v, header of %d bytes (want %d), holds the name %v", i, e.info.Key, header, want, bytes.Contains(frame, []byte(target)))
		}
		f, err := r.Frame(i)
		if err != nil || f.Target != target || !f.Time.Equal(r.Info(0).Time.Add(sum(steps[1:i+1]))) || !bytes.Equal(f.Body, bodyOf(i)) {
			t.Fatalf("frame %d: %v %v %d bytes, %v", i, f.Target, f.Time, len(f.Body), err)
		}
	}
	if v := binary.LittleEndian.Uint16(b[8:10]); v != Version {
		t.Fatalf("version %d, want %d", v, Version)
	}
}

func sum(d []time.Duration) time.Duration {
	var s time.Duration
	for _, x := range d {
		s += x
	}
	return s
}
