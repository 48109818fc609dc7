package analysis

import (
	"encoding/json"
	"io"

	"github.com/retrytop/retrytop/model"
)

// WriteJSON writes the report as analyze's JSON: the bytes of a
// json.Encoder with two-space indentation and model.EscapeHiddenJSON over
// the whole (what ui.WriteReportWidth writes for "json"), but one field and
// one dependency at a time, so that a long recording's timeline (hundreds
// of MB of JSON) is never held whole (issue 19).
// TestAnalyzeWholeSameAsSequential in cmd/retrytop compares the bytes.
func (r *Report) WriteJSON(w io.Writer) error {
	ew := &escapeWriter{w: w}
	ew.put([]byte("{\n"))
	fields := []struct {
		name string
		v    any
	}{
		{"window_seconds", r.WindowSeconds}, {"start_unix", r.StartUnix}, {"end_unix", r.EndUnix},
		{"bin_seconds", r.BinSeconds}, {"targets", r.Targets}, {"dependencies", nil},
		{"chains", r.Chains}, {"links", r.Links}, {"services", r.Services}, {"findings", r.Findings},
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
	for i := range deps {
		ew.put([]byte("    "))
		ew.value(&deps[i], "    ") // a pointer: addressable, as an element of the encoded slice is
		if i < len(deps)-1 {
			ew.put([]byte(",\n"))
		} else {
			ew.put([]byte("\n"))
		}
	}
	ew.put([]byte("  ]"))
}

// escapeWriter writes JSON fragments through model.EscapeHiddenJSON; each
// fragment is whole runes, so escaping them one by one equals escaping all.
type escapeWriter struct {
	w   io.Writer
	err error
}

func (ew *escapeWriter) put(b []byte) {
	if ew.err == nil {
		_, ew.err = ew.w.Write(model.EscapeHiddenJSON(b))
	}
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
