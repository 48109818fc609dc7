package analysis

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"

	"github.com/retrytop/retrytop/internal/safetext"
)

// WriteJSON writes the report as analyze's JSON: the bytes of a
// json.Encoder with two-space indentation and safetext.JSON over the
// whole, but one field and one dependency at a time, so that a long
// recording's timeline (hundreds of MB of JSON) is never held whole.
// TestAnalyzeWholeSameAsSequential in package analyze compares the bytes.
func (r *Report) WriteJSON(w io.Writer) error {
	ew := &escapeWriter{w: w}
	ew.put([]byte("{\n"))
	fields := []struct {
		name string
		v    any
	}{
		{"window_seconds", r.WindowSeconds}, {"start_unix", r.StartUnix}, {"end_unix", r.EndUnix},
		{"bin_seconds", r.BinSeconds}, {"span", r.Span}, {"targets", r.Targets}, {"dependencies", nil},
		{"chains", r.Chains}, {"links", r.Links}, {"services", r.Services}, {"service_peaks", r.ServicePeaks}, {"findings", r.Findings},
		{"detection", r.Detection},
	}
	for i, f := range fields {
		ew.put([]byte("  " + quote(f.name) + ": "))
		if f.name == "dependencies" {
			ew.dependencies(r.Dependencies)
		} else {
			ew.value(f.v, "  ")
		}
		if i < len(fields)-1 {
			ew.put([]byte(",\n"))
		} else {
			ew.put([]byte("\n"))
		}
	}
	ew.put([]byte("}\n"))
	return ew.err
}

// dependencies writes the rows as the encoder lays out an array at depth 1.
func (ew *escapeWriter) dependencies(deps []DependencyReport) {
	switch {
	case deps == nil:
		ew.put([]byte("null"))
		return
	case len(deps) == 0:
		ew.put([]byte("[]"))
		return
	}
	ew.put([]byte("[\n"))
	// A batch of rows is encoded on up to GOMAXPROCS goroutines, then
	// written in order: encoding is most of writing a long recording's
	// JSON, and the report before it is done.
	const batch = 16
	bufs := make([][]byte, batch)
	errs := make([]error, batch)
	for lo := 0; lo < len(deps) && ew.err == nil; lo += batch {
		hi := min(lo+batch, len(deps))
		parallelFor(hi-lo, 1, func() func(i int) {
			return func(i int) { bufs[i], errs[i] = dependencyJSON(bufs[i][:0], &deps[lo+i]) }
		})
		for i := lo; i < hi; i++ {
			if errs[i-lo] != nil && ew.err == nil {
				ew.err = errs[i-lo]
			}
			ew.put([]byte("    "))
			ew.put(bufs[i-lo])
			if i < len(deps)-1 {
				ew.put([]byte(",\n"))
			} else {
				ew.put([]byte("\n"))
			}
		}
	}
	ew.put([]byte("  ]"))
}

// timelineKey is how the indented encoder writes an empty timeline at a
// row's depth: the one line of a row's JSON at that indentation with that
// key (nested objects are indented further, and a quote inside a string
// is escaped).
const timelineKey = "\n      \"timeline\": []"

// dependencyJSON appends one row at depth 1 as json.MarshalIndent(d,
// "    ", "  ") writes it, with its timeline's bins written by
// appendBinJSON where it can (the same bytes; most of a long recording's
// JSON).
//
// A row whose timeline is held compactly (DependencyReport.TimelineBins)
// is written as if Timeline held its bins, each made as it is written.
func dependencyJSON(buf []byte, d *DependencyReport) ([]byte, error) {
	n := len(d.Timeline)
	compact := n == 0 && d.bins != nil
	if compact {
		n = d.bins.Len()
	}
	if n == 0 {
		b, err := json.MarshalIndent(d, "    ", "  ") // a pointer: addressable, as an element of the encoded slice is
		return append(buf, b...), err
	}
	rest := *d
	rest.Timeline = []BinReport{}
	b, err := json.MarshalIndent(&rest, "    ", "  ")
	if err != nil {
		return buf, err
	}
	at := bytes.Index(b, []byte(timelineKey))
	if at < 0 {
		full := *d
		full.Timeline = d.TimelineBins()
		b, err := json.MarshalIndent(&full, "    ", "  ")
		return append(buf, b...), err
	}
	open := at + len(timelineKey) - 1 // at the ']'
	buf = append(buf, b[:open]...)
	const binPrefix = "        "
	var made BinReport
	for j := range n {
		if j > 0 {
			buf = append(buf, ',')
		}
		buf = jsonIndent(buf, "    ", 2)
		bin := &made
		if compact {
			made = binReport(d.bins.AtNoHist(j))
		} else {
			bin = &d.Timeline[j]
		}
		var ok bool
		if buf, ok = appendBinJSON(buf, bin, binPrefix); !ok {
			bb, err := json.MarshalIndent(bin, binPrefix, "  ")
			if err != nil {
				return buf, err
			}
			buf = append(buf, bb...)
		}
	}
	buf = jsonIndent(buf, "    ", 1)
	return append(buf, b[open:]...), nil
}

// escapeWriter writes JSON fragments through safetext.JSON; each
// fragment is whole runes, so escaping them one by one equals escaping all.
type escapeWriter struct {
	w   io.Writer
	err error
}

func (ew *escapeWriter) put(b []byte) {
	if ew.err != nil {
		return
	}
	if !asciiOnly(b) { // every character safetext.JSON escapes is beyond ASCII
		b = safetext.JSON(b)
	}
	_, ew.err = ew.w.Write(b)
}

// asciiOnly is whether b holds no byte beyond ASCII, eight at a time.
func asciiOnly(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// value writes v indented as at the depth whose lines start with prefix:
// json.MarshalIndent applies the same rule (json.Indent) as the encoder.
func (ew *escapeWriter) value(v any, prefix string) {
	if ew.err != nil {
		return
	}
	b, err := json.MarshalIndent(v, prefix, "  ")
	if err != nil {
		ew.err = err
		return
	}
	ew.put(b)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
