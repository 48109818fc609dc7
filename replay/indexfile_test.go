package replay_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/replay"
)

// savedIndex builds the index of the recording at path, saves it in a
// fresh cache under key and returns the cache.
func savedIndex(t *testing.T, rec interface{ Len() int }, p *replay.Player, path string, key [32]byte) replay.IndexCache {
	t.Helper()
	c := replay.IndexCache{Dir: filepath.Join(t.TempDir(), "cache")}
	if err := c.Save(p, path, key); err != nil {
		t.Fatal(err)
	}
	return c
}

func mustKey(t *testing.T, path string, parts ...string) [32]byte {
	t.Helper()
	k, err := replay.IndexKey(path, parts...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestIndexCacheReopen: open, build, save; a second player on the same
// recording loads the file instead of building (BuildIndex is refused:
// the index is there), and every seek restores what playing from the
// start builds, as TestSeekMatchesScratch checks for a built index.
func TestIndexCacheReopen(t *testing.T) {
	rec, path := indexRecAt(t, filepath.Join(t.TempDir(), "index.rtd"), 0)
	for _, tc := range []struct {
		name string
		tf   func() replay.Transform
	}{{"no transform", nil}, {"transform with memory", countingTransform}} {
		t.Run(tc.name, func(t *testing.T) {
			key := mustKey(t, path, tc.name)
			c := savedIndex(t, rec, indexed(t, rec, tc.tf, 0), path, key)
			p := replay.New(rec, replay.Options{Store: indexStore, NewTransform: tc.tf})
			if ok, err := c.Load(p, path, key); !ok || err != nil {
				t.Fatalf("the saved index was not loaded: %v", err)
			}
			if done, total, stopped := p.IndexProgress(); done != total || stopped {
				t.Fatalf("loaded index reaches %d of %d entries (stopped %v)", done, total, stopped)
			}
			if err := p.BuildIndex(context.Background()); err == nil {
				t.Fatal("BuildIndex ran on a player whose index was loaded")
			}
			heads := seekHeads(rec)
			for k := len(heads) - 1; k >= 0; k-- {
				heads = append(heads, heads[k])
			}
			want := map[time.Time]string{}
			for _, head := range heads {
				p.Seek(head)
				if p.Tick() == time.Nanosecond {
					t.Fatalf("seek to %v: not restored at once", head)
				}
				if _, ok := want[head]; !ok {
					want[head] = playerText(scratch(rec, head, tc.tf))
				}
				if got, want := playerText(p), want[head]; got != want {
					t.Fatalf("seek to %v after reopening differs from playing there\n--- seek\n%s\n--- scratch\n%s", head, got, want)
				}
			}
		})
	}
}

// TestIndexCacheRefuses: a file that is truncated, corrupt, of another
// format version, made under another key (other dialects, another store
// configuration) or not an index at all is refused with the reason, and
// the player builds its index as without a cache.
func TestIndexCacheRefuses(t *testing.T) {
	rec, path := indexRecAt(t, filepath.Join(t.TempDir(), "index.rtd"), 0)
	key := mustKey(t, path, "dialects")
	c := savedIndex(t, rec, indexed(t, rec, nil, 0), path, key)
	good, err := os.ReadFile(c.File(path))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(at int) func([]byte) []byte {
		return func(b []byte) []byte { b[at] ^= 0x40; return b }
	}
	for _, tc := range []struct {
		name  string
		edit  func([]byte) []byte
		key   [32]byte
		store int
		want  string
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-100] }, key, 0, "truncated"},
		{"cut in the header", func(b []byte) []byte { return b[:30] }, key, 0, "truncated"},
		{"a byte flipped in the payload", flip(len(good) / 2), key, 0, "checksum"},
		{"the last byte flipped", flip(len(good) - 1), key, 0, "checksum"},
		{"a byte flipped in the length", flip(44), key, 0, "truncated or extended"},
		{"garbage appended", func(b []byte) []byte { return append(b, "more"...) }, key, 0, "truncated or extended"},
		{"another version", func(b []byte) []byte { b[7]++; return b }, key, 0, "version"},
		{"not an index", func([]byte) []byte { return []byte(strings.Repeat("# TYPE x counter\nx 1\n", 10)) }, key, 0, "not a retrytop seek index"},
		{"other dialects", nil, mustKey(t, path, "other dialects"), 0, "another recording"},
		{"another store configuration", nil, key, 50, "another recording"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte(nil), good...)
			if tc.edit != nil {
				b = tc.edit(b)
			}
			if err := os.WriteFile(c.File(path), b, 0o600); err != nil {
				t.Fatal(err)
			}
			st := indexStore
			if tc.store != 0 {
				st.History = tc.store
			}
			p := replay.New(rec, replay.Options{Store: st})
			ok, err := c.Load(p, path, tc.key)
			var refused *replay.IndexFileError
			if ok || !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("loaded %v, error %v; want refused: %q", ok, err, tc.want)
			}
			if at := fmt.Sprintf("%s: at byte %d: ", c.File(path), refused.Offset); !strings.HasPrefix(err.Error(), at) || refused.Offset < 0 || refused.Offset > int64(len(b)) {
				t.Fatalf("error %v does not begin %q (a byte of the %d-byte file)", err, at, len(b))
			}
			if done, _, _ := p.IndexProgress(); done != 0 {
				t.Fatalf("a refused file left %d entries indexed", done)
			}
			if err := p.BuildIndex(context.Background()); err != nil {
				t.Fatalf("building after a refused file: %v", err)
			}
		})
	}
	// No file: nothing loaded, nothing to say.
	if ok, err := (replay.IndexCache{Dir: t.TempDir()}).Load(replay.New(rec, replay.Options{Store: indexStore}), path, key); ok || err != nil {
		t.Errorf("an empty cache: loaded %v, %v", ok, err)
	}
}

// TestIndexCacheChangedRecording: the recording rewritten with other
// values (same targets, times and length) has another key, so its old
// file is refused; built again and saved, it is the one loaded.
func TestIndexCacheChangedRecording(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "index.rtd")
	rec, _ := indexRecAt(t, path, 0)
	key := mustKey(t, path)
	c := savedIndex(t, rec, indexed(t, rec, nil, 0), path, key)
	rec.Close()
	if err := os.Remove(path); err != nil { // dump.Create makes a new file only
		t.Fatal(err)
	}
	rec2, _ := indexRecAt(t, path, 7)
	key2 := mustKey(t, path)
	if key2 == key {
		t.Fatal("the changed recording has the same key")
	}
	p := replay.New(rec2, replay.Options{Store: indexStore})
	if ok, err := c.Load(p, path, key2); ok || err == nil || !strings.Contains(err.Error(), "another recording") {
		t.Fatalf("the old file for a changed recording: loaded %v, %v", ok, err)
	}
	if err := p.BuildIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(p, path, key2); err != nil {
		t.Fatal(err)
	}
	q := replay.New(rec2, replay.Options{Store: indexStore})
	if ok, err := c.Load(q, path, key2); !ok || err != nil {
		t.Fatalf("the new file: loaded %v, %v", ok, err)
	}
	head := rec2.Time(0).Add(150 * time.Second)
	q.Seek(head)
	q.Tick()
	if got, want := playerText(q), playerText(scratch(rec2, head, nil)); got != want {
		t.Fatalf("after the rebuild:\n--- seek\n%s\n--- scratch\n%s", got, want)
	}
}

// TestIndexCacheBounds: after a write at most MaxFiles files stay, the
// least recently used (written or loaded) go first, the one just
// written always stays, and a writer's temporary file left over an hour
// ago is removed; an index over MaxBytes is not written.
func TestIndexCacheBounds(t *testing.T) {
	rec, path := indexRecAt(t, filepath.Join(t.TempDir(), "index.rtd"), 0)
	key := mustKey(t, path)
	p := indexed(t, rec, nil, 0)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := replay.IndexCache{Dir: t.TempDir(), MaxFiles: 2, Now: func() time.Time { return now }}
	stale := filepath.Join(c.Dir, "x"+".rtidx.123.tmp")
	if err := os.WriteFile(stale, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := now.Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	// A file of the first format (a gob, named without a version), used
	// just now: never read, removed.
	v1 := filepath.Join(c.Dir, "0123456789abcdef01234567.rtidx")
	if err := os.WriteFile(v1, []byte("RTIDX\x00\x00\x01"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Three recordings by path (the same bytes), saved a minute apart;
	// the first is loaded again before the third is saved.
	names := []string{"a.rtd", "b.rtd", "c.rtd"}
	for k, n := range names {
		if k == 2 {
			if ok, err := c.Load(replay.New(rec, replay.Options{Store: indexStore}), names[0], key); !ok || err != nil {
				t.Fatalf("load a: %v %v", ok, err)
			}
		}
		if err := c.Save(p, n, key); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
	}
	for _, tc := range []struct {
		name string
		kept bool
	}{{"a.rtd", true}, {"b.rtd", false}, {"c.rtd", true}} {
		if _, err := os.Stat(c.File(tc.name)); (err == nil) != tc.kept {
			t.Errorf("%s: kept %v, want %v", tc.name, err == nil, tc.kept)
		}
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("a temporary file two hours old was kept")
	}
	if _, err := os.Stat(v1); err == nil {
		t.Error("a file of the first format was kept")
	}
	if !strings.HasSuffix(c.File("a.rtd"), fmt.Sprintf("-v%d.rtidx", replay.IndexFileVersion)) {
		t.Errorf("the cache file %s is not named after the format's version", c.File("a.rtd"))
	}
	small := replay.IndexCache{Dir: t.TempDir(), MaxBytes: 1 << 10}
	if err := small.Save(p, path, key); err == nil {
		t.Error("an index over MaxBytes was written")
	}
	// An unfinished index is not written.
	q := indexed(t, rec, nil, 64<<10)
	if err := c.Save(q, "d.rtd", key); !errors.Is(err, replay.ErrIndexNotDone) {
		t.Errorf("saving a stopped index: %v", err)
	}
}
