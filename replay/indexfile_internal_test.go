package replay

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/collect/dump"
)

// TestIndexFileChecksWhatItHolds: a file whose header, length and
// checksum are right but whose content does not fit the recording (made
// by something else, or by a bug) is refused before any seek reads it:
// each case breaks one thing a seek would read, and says which.
func TestIndexFileChecksWhatItHolds(t *testing.T) {
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
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := dump.OpenRecording(path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	built := New(rec, Options{})
	if err := built.BuildIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	var good bytes.Buffer
	built.index.mu.RLock()
	f, err := built.fileIndex()
	if err == nil {
		err = gob.NewEncoder(&good).Encode(f)
	}
	built.index.mu.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	var key [32]byte
	target := func(f *fileIndex, name string) *fileTarget {
		for k := range f.Targets {
			if f.Targets[k].Name == name {
				return &f.Targets[k]
			}
		}
		t.Fatalf("no target %s", name)
		return nil
	}
	for _, tc := range []struct {
		name string
		edit func(f *fileIndex)
		want string
	}{
		{"unchanged", func(*fileIndex) {}, ""},
		{"fewer entries", func(f *fileIndex) { f.Entries--; f.Next = f.Next[1:]; f.Status = f.Status[1:] }, "entries, the recording has"},
		{"an entry of another target", func(f *fileIndex) { a := target(f, "a"); a.Entries[1] = target(f, "b").Entries[1] }, "not one of its entries"},
		{"an entry nobody has", func(f *fileIndex) { a := target(f, "a"); a.Entries = a.Entries[:len(a.Entries)-1] }, "belongs to no target"},
		{"more scrapes than logged", func(f *fileIndex) { f.Next[len(f.Next)-1] = 1000 }, "holds 1000 scrapes"},
		{"a chunk missing", func(f *fileIndex) { a := target(f, "a"); a.Chunks = a.Chunks[:2] }, "2 chunks for 150 scrapes"},
		{"an offset past the data", func(f *fileIndex) { c := &target(f, "a").Chunks[0]; c.Off[len(c.Off)-1]++ }, "offsets"},
		{"a column cut short", func(f *fileIndex) {
			c := &target(f, "a").Chunks[0]
			c.Data = c.Data[:len(c.Data)-1]
			c.Off[len(c.Off)-1]--
		}, "column"},
		{"unknown column flags", func(f *fileIndex) { target(f, "a").Chunks[1].Data[0] = 0x80 }, "unknown flags"},
		{"a series id out of range", func(f *fileIndex) { c := &target(f, "a").Chunks[2]; c.IDs[len(c.IDs)-1] = 99 }, "series ids"},
		{"a live series without its column", func(f *fileIndex) {
			c := &target(f, "a").Chunks[2]
			c.IDs, c.Off, c.Data = c.IDs[:1], c.Off[:2], c.Data[:c.Off[1]]
		}, "has no column"},
		{"a series born after the end", func(f *fileIndex) { target(f, "a").Series[0].Born = 150 }, "lives from scrape 150"},
		{"a series dead before its birth", func(f *fileIndex) { s := &target(f, "a").Series[1]; s.Died = s.Born }, "lives from"},
		{"another target's status", func(f *fileIndex) { f.Status[0].S.Name = "b" }, "the status of"},
		{"a success that was not one", func(f *fileIndex) { f.Status[0].LastSuccess = -1 }, "last success"},
		{"an error past the end", func(f *fileIndex) { f.Errs[1<<20] = "x" }, "an error at entry"},
		{"the same target twice", func(f *fileIndex) { f.Targets = append(f.Targets, f.Targets[0]) }, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f fileIndex
			if err := gob.NewDecoder(bytes.NewReader(good.Bytes())).Decode(&f); err != nil {
				t.Fatal(err)
			}
			tc.edit(&f)
			p := New(rec, Options{})
			var file bytes.Buffer
			if err := writeIndexFile(&file, &f, p.indexKey(key)); err != nil {
				t.Fatal(err)
			}
			err := p.ReadIndex(bytes.NewReader(file.Bytes()), int64(file.Len()), key)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("the unchanged file was refused: %v", err)
				}
				return
			}
			var refused *IndexFileError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if p.index.started || p.index.done != 0 {
				t.Fatal("a refused file was installed")
			}
		})
	}
}
