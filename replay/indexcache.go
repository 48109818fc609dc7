package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// IndexCache keeps finished seek indexes on disk so that the next open of
// a recording restores its seeks at once instead of indexing it again
// (docs/cli.md, replay). One file per recording path, named after a hash
// of the path: a recording changed since (or opened with other dialects)
// finds its file stale, rebuilds, and replaces it. The directory is
// bounded: after each write the least recently used files go until at
// most MaxFiles remain holding at most MaxBytes.
type IndexCache struct {
	Dir string
	// MaxBytes bounds the files' total size (default 2 GiB); an index
	// larger than it is not written.
	MaxBytes int64
	// MaxFiles bounds their number (default 16).
	MaxFiles int
	// Now is the clock of the files' use times (default time.Now).
	Now func() time.Time
}

const indexExt = ".rtidx"

// indexSuffix ends the names of this format's files: a file of another
// version (IndexFileVersion) is never opened, and trim removes it.
var indexSuffix = "-v" + strconv.Itoa(IndexFileVersion) + indexExt

func (c IndexCache) withDefaults() IndexCache {
	if c.MaxBytes <= 0 {
		c.MaxBytes = 2 << 30
	}
	if c.MaxFiles <= 0 {
		c.MaxFiles = 16
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// File is where the index of the recording at recPath is kept.
func (c IndexCache) File(recPath string) string {
	abs, err := filepath.Abs(recPath)
	if err != nil {
		abs = recPath
	}
	h := sha256.Sum256([]byte(abs))
	return filepath.Join(c.Dir, hex.EncodeToString(h[:12])+indexSuffix)
}

// IndexKey is a recording's identity for its index: the whole file's
// SHA-256 and size, and parts, which the caller adds for whatever else
// decides what the index holds (the dialects in use, the program's
// build). Reading the file costs a pass over it (a 1-hour, 60 MB dump:
// some tens of milliseconds).
func IndexKey(recPath string, parts ...string) ([32]byte, error) {
	return indexKeyOf(recPath, func() []string { return parts })
}

// indexKeyOf is IndexKey with the parts computed (BuildDigest hashes the
// executable) while the recording is hashed.
func indexKeyOf(recPath string, parts func() []string) ([32]byte, error) {
	pc := make(chan []string, 1)
	go func() { pc <- parts() }()
	f, err := os.Open(recPath)
	if err != nil {
		<-pc
		return [32]byte{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	ps := <-pc
	if err != nil {
		return [32]byte{}, err
	}
	fmt.Fprintf(h, "\nsize %d\n", n)
	for _, p := range ps {
		fmt.Fprintf(h, "%d:%s\n", len(p), p)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out, nil
}

// Load makes the cached index of recPath p's seek index when there is one
// made under key that passes every check. It returns false and no error
// when there is no file, and false and the reason when there is one that
// was refused (stale, corrupt, truncated, foreign) or could not be read.
func (c IndexCache) Load(p *Player, recPath string, key [32]byte) (bool, error) {
	return c.load(p, recPath, func() ([32]byte, error) { return key, nil }, &key)
}

// load is Load with the key computed by key while the file is read, its
// checksum verified and its content decoded (known, when given, refuses
// a stale file before its payload is read).
func (c IndexCache) load(p *Player, recPath string, key func() ([32]byte, error), known *[32]byte) (bool, error) {
	c = c.withDefaults()
	name := c.File(recPath)
	type keyed struct {
		key [32]byte
		err error
	}
	kc := make(chan keyed, 1)
	go func() { k, err := key(); kc <- keyed{k, err} }()
	// Decoded (its checksum verified) before the key is known: a file
	// for another recording is decoded in vain once, before the rebuild
	// replaces it.
	file, err := readCacheFile(p, name, known)
	var x *index
	if err == nil {
		x, err = p.decodeIndex(file.payload)
	}
	k := <-kc
	if k.err != nil {
		return false, k.err
	}
	if file != nil {
		if kerr := p.checkKey(file, k.key); kerr != nil {
			err = kerr // the key says why first: a stale file may not fit the recording
		}
	}
	if err == nil {
		err = p.install(x)
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	now := c.Now()
	_ = os.Chtimes(name, now, now) // its use, for the eviction order
	return true, nil
}

// readCacheFile reads and checks the file name (its header, and its
// checksum), not yet its content.
func readCacheFile(p *Player, name string, known *[32]byte) (*indexFile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return p.readIndexFile(f, fi.Size(), known)
}

// Save writes p's finished index for recPath (a temporary file renamed
// over the old one, so a reader sees the old file or the new one whole)
// and then trims the directory to its bounds.
func (c IndexCache) Save(p *Player, recPath string, key [32]byte) error {
	c = c.withDefaults()
	if b := p.IndexBytes(); b > c.MaxBytes {
		return fmt.Errorf("the index (%d MB) is over the cache's bound of %d MB", b>>20, c.MaxBytes>>20)
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	name := c.File(recPath)
	tmp, err := os.CreateTemp(c.Dir, filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	err = p.WriteIndex(tmp, key)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return err
	}
	now := c.Now()
	_ = os.Chtimes(name, now, now)
	return c.trim(name)
}

// trim removes the least recently used index files beyond the bounds
// (never keep, the one just written), files of other format versions,
// and temporary files a writer that died left more than an hour ago.
func (c IndexCache) trim(keep string) error {
	ents, err := os.ReadDir(c.Dir)
	if err != nil {
		return err
	}
	type file struct {
		name string
		size int64
		used time.Time
	}
	var files []file
	for _, e := range ents {
		name := filepath.Join(c.Dir, e.Name())
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		switch {
		case strings.HasSuffix(e.Name(), indexSuffix) && strings.Count(e.Name(), ".") == 1:
			files = append(files, file{name, fi.Size(), fi.ModTime()})
		case strings.HasSuffix(e.Name(), indexExt) && strings.Count(e.Name(), ".") == 1:
			_ = os.Remove(name) // another version's: this build never reads it
		case strings.Contains(e.Name(), indexExt+".") && strings.HasSuffix(e.Name(), ".tmp") && c.Now().Sub(fi.ModTime()) > time.Hour:
			_ = os.Remove(name)
		}
	}
	sort.Slice(files, func(a, b int) bool {
		if files[a].name == keep || files[b].name == keep {
			return files[a].name == keep
		}
		return files[a].used.After(files[b].used)
	})
	var total int64
	var errs []error
	for k, f := range files {
		total += f.size
		if f.name != keep && (k >= c.MaxFiles || total > c.MaxBytes) {
			total -= f.size
			if err := os.Remove(f.name); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// IndexWithCache gives p its seek index: read from the user cache
// directory's IndexCache when a file there matches recPath and the key
// parts (the dialects and build in use, asked for only when needed),
// otherwise built and written there. disabled builds it without the
// cache. What goes wrong with the cache is said to note, and the index is
// then built as without one.
func IndexWithCache(ctx context.Context, p *Player, recPath string, disabled bool, parts func() []string, note func(string)) {
	if disabled {
		_ = p.BuildIndex(ctx)
		return
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		note("the seek index is not cached: " + err.Error())
		_ = p.BuildIndex(ctx)
		return
	}
	c := IndexCache{Dir: filepath.Join(dir, "retrytop")}
	// The recording and the executable are hashed while the file is read
	// and its checksum verified: a reopen waits for the longest of them,
	// not their sum.
	var key [32]byte
	var keyErr error
	ok, err := c.load(p, recPath, func() ([32]byte, error) {
		key, keyErr = indexKeyOf(recPath, parts)
		return key, keyErr
	}, nil)
	if ok {
		return
	}
	if keyErr != nil {
		note("the seek index is not cached: " + keyErr.Error())
		_ = p.BuildIndex(ctx)
		return
	}
	if err != nil {
		note("seek index cache ignored, indexing again: " + err.Error())
	}
	if err := p.BuildIndex(ctx); err != nil {
		return // stopped (the budget, the end of the replay): nothing to keep
	}
	if err := c.Save(p, recPath, key); err != nil {
		note("the seek index was not cached: " + err.Error())
	}
}

// BuildDigest identifies this build of retrytop for IndexKey: its
// executable's SHA-256 ("unknown" when it cannot be read), since another
// build may translate a recording differently.
func BuildDigest() string {
	name, err := os.Executable()
	if err != nil {
		return "unknown"
	}
	fh, err := os.Open(name)
	if err != nil {
		return "unknown"
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "unknown"
	}
	return hex.EncodeToString(h.Sum(nil))
}
