package replay

import (
	"runtime"
	"strings"
	"testing"
)

// TestIndexLogBoundInTotal: a target's log claims labels and series whose
// counts each fit in the bytes left but not together (both lie in the
// same bytes). Refused before either is allocated, so that a hostile file
// allocates at most 16 times its size in total, not per count (a section
// of 2.2 MB allocated 52 MB when each count was checked alone).
func TestIndexLogBoundInTotal(t *testing.T) {
	const left = 220_000 // the section's bytes after its counts
	p := New(smallRec(t), Options{})
	for _, tc := range []struct {
		name           string
		labels, series uint64
		want           string
	}{
		// Refused later, at the first series' key: the file has no string table.
		{"both fit together", 10, 10, "string "},
		{"labels alone fill the bytes", left / 2, 0, "labels unused"},
		{"one series fits beside them", (left - 22) / 2, 1, "string "},
		{"labels and series in the same bytes", left / 2, left / 22, "labels and"},
		{"one series more than fits beside them", (left - 22) / 2, 2, "labels and"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b []byte
			for _, v := range []uint64{0, 0, tc.labels, tc.series} { // no entries, no scrapes
				b = binaryAppendUvarint(b, v)
			}
			b = append(b, make([]byte, left)...)
			d := &decoder{b: b}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, _, err := p.decodeLog(d, "app", 1, make([]int32, 1))
			runtime.ReadMemStats(&after)
			if err == nil {
				err = d.err
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("labels %d, series %d in %d bytes: %v, want an error with %q", tc.labels, tc.series, left, err, tc.want)
			}
			if tc.want == "labels and" {
				// Bound: nothing of the counts' size is allocated, only
				// the error (the labels alone would be 16x the section).
				if got := after.TotalAlloc - before.TotalAlloc; got > left/100 {
					t.Errorf("allocated %d bytes for a %d-byte section", got, left)
				}
			}
		})
	}
}
