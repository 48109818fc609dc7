package whatif

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestJSONEscapesHiddenCharacters: a recording's name
// with a C1 CSI, a right-to-left override and a zero-width space reaches
// whatif's JSON as \u escapes, never raw, and reads back unchanged.
func TestJSONEscapesHiddenCharacters(t *testing.T) {
	name := "inc\u009b2J\u202eden\u200bt.rtd"
	var out bytes.Buffer
	if err := Write(&out, Report{File: name}, "json"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []rune{0x9b, 0x202e, 0x200b} {
		if strings.ContainsRune(out.String(), r) {
			t.Errorf("raw U+%04X in the JSON: %q", r, out.String())
		}
	}
	for _, esc := range []string{`\u009b`, `\u202e`, `\u200b`} {
		if !strings.Contains(out.String(), esc) {
			t.Errorf("no %s in the JSON: %s", esc, out.String())
		}
	}
	var back Report
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back.File != name {
		t.Errorf("read back %q (%v), want %q", back.File, err, name)
	}
}
