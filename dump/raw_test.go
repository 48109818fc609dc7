package dump

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRawBytesPerSample re-encodes the bodies of a raw capture
// (RETRYTOP_DEMO_RAW of TestDemoBytesPerSample or
// TestDemoVirtualBytesPerSample: "target ns length\n" then the body) with
// this writer and reports bytes per sample as those tests do, and where
// the bytes go (frame headers, payloads, index). It runs only when asked:
// the capture is a 10-minute recording of the demo, about 44 MB.
//
//	RETRYTOP_DEMO_RAW_IN=/tmp/demo.raw go test ./dump -run RawBytesPerSample -v
func TestRawBytesPerSample(t *testing.T) {
	in := os.Getenv("RETRYTOP_DEMO_RAW_IN")
	if in == "" {
		t.Skip("set RETRYTOP_DEMO_RAW_IN to a raw capture of the demo to re-encode it")
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := filepath.Join(t.TempDir(), "raw.rtd")
	if keep := os.Getenv("RETRYTOP_DEMO_RAW_KEEP"); keep != "" {
		path = keep // to compare two writers' files byte for byte
	}
	w, err := Create(path, true, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReaderSize(f, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			break
		}
		if err != nil {
			t.Fatalf("%s: record %d: %v", in, n, err)
		}
		fs := strings.Fields(line)
		if len(fs) != 3 {
			t.Fatalf("%s: record %d: header %q is not \"target ns length\"", in, n, line)
		}
		ns, err1 := strconv.ParseInt(fs[1], 10, 64)
		l, err2 := strconv.Atoi(fs[2])
		if err1 != nil || err2 != nil || l < 0 || l > MaxBodySize {
			t.Fatalf("%s: record %d: bad header %q", in, n, line)
		}
		body := make([]byte, l)
		if _, err := io.ReadFull(br, body); err != nil {
			t.Fatalf("%s: record %d: body: %v", in, n, err)
		}
		if err := w.Append(fs[0], time.Unix(0, ns), "text/plain; version=0.0.4; charset=utf-8", body); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var frames, keys, headers, keyPay, deltaPay, frameBytes int64
	for i := range r.entries {
		e := &r.entries[i]
		frames++
		frameBytes += int64(e.info.Size)
		headers += int64(e.info.Size) - int64(e.payLen)
		if e.info.Key {
			keys++
			keyPay += int64(e.payLen)
		} else {
			deltaPay += int64(e.payLen)
		}
	}
	r.Close()
	index := r.Size() - headerSize - frameBytes
	per := func(n int64) float64 { return float64(n) / float64(frames) }
	t.Logf("per frame: %.1f bytes: headers %.1f, delta payloads %.1f, key payloads %.1f, index %.1f (%d frames, %d key frames)",
		per(r.Size()), per(headers), per(deltaPay), per(keyPay), per(index), frames, keys)
	measure(t, path)
}
