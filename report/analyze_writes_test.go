package report

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// countingWriter counts the writes it is given and the bytes of each.
type countingWriter struct {
	bytes.Buffer
	sizes []int
	fail  error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.fail != nil {
		return 0, c.fail
	}
	c.sizes = append(c.sizes, len(p))
	return c.Buffer.Write(p)
}

// A report is written in writes of the buffer's size (the last one
// shorter), not a cell or a line at a time: a terminal or a pipe pays a
// system call a write.
func TestWriteAnalysisBuffered(t *testing.T) {
	rep := reportFixture()
	row := rep.Dependencies[0]
	for i := range 2000 { // well past one buffer in every format
		row.Dependency = fmt.Sprintf("dependency-%04d", i)
		rep.Dependencies = append(rep.Dependencies, row)
	}
	for _, format := range AnalysisFormats {
		var w countingWriter
		if err := WriteAnalysis(&w, rep, format, 0); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		n := w.Len()
		if n <= writeBuffer {
			t.Fatalf("%s: %d bytes, want more than one buffer (%d) for the test to mean anything", format, n, writeBuffer)
		}
		if want := (n + writeBuffer - 1) / writeBuffer; len(w.sizes) != want {
			t.Errorf("%s: %d bytes in %d writes, want %d", format, n, len(w.sizes), want)
		}
		for i, s := range w.sizes[:len(w.sizes)-1] {
			if s != writeBuffer {
				t.Errorf("%s: write %d of %d bytes, want %d", format, i, s, writeBuffer)
			}
		}
		// The same bytes as written straight through.
		var direct bytes.Buffer
		if err := writeAnalysis(&direct, rep, format, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(direct.Bytes(), w.Bytes()) {
			t.Errorf("%s: buffered output differs from the direct one", format)
		}
	}
}

// A failing output is reported, also when only the final flush meets it.
func TestWriteAnalysisFlushError(t *testing.T) {
	full := errors.New("no space left on device")
	w := &countingWriter{fail: full}
	if err := WriteAnalysis(w, reportFixture(), "text", 0); !errors.Is(err, full) {
		t.Errorf("error = %v, want %v", err, full)
	}
}
