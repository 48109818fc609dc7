package scrape

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// In -short too (the hostile-target test is long): a gzip
// body that expands more than MaxGzipRatio times is refused as a bomb
// before it reaches the body limit, an endless stream of empty gzip
// members (which decompresses to nothing) is refused by the limit on the
// compressed bytes, and a real gzipped exposition still reads.
func TestGzipBombsAreRefused(t *testing.T) {
	gz := func(p []byte) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(p)
		zw.Close()
		return b.Bytes()
	}
	// 16 MiB of zeros in about 16 KiB (a 1 MiB member 16 times: readers
	// read concatenated members as one stream): 1000:1, under the 32 MiB
	// body limit, so only the ratio can refuse it.
	bomb := bytes.Repeat(gz(make([]byte, 1<<20)), 16)
	// Empty members up to twice the 1 MiB body limit set below.
	empty := gz(nil)
	members := bytes.Repeat(empty, 2<<20/len(empty))
	// A real exposition past the 1 MiB the ratio is checked from: numbers
	// and label values vary, so it compresses about 5-10 times.
	var real strings.Builder
	real.WriteString("# TYPE retry_originals_total counter\n")
	for i := 0; real.Len() < 5<<18; i++ {
		fmt.Fprintf(&real, "retry_originals_total{dependency=\"d%d\",priority=\"critical\"} %d\n", i, i*7919%100003)
	}
	realGz := gz([]byte(real.String()))

	for _, c := range []struct {
		name  string
		body  []byte
		limit int64 // Options.BodyLimit (0: the default)
		want  string
	}{
		{"bomb", bomb, 0, "refused as a decompression bomb"},
		{"empty members", members, 1 << 20, "compressed body exceeds the body limit of 1 MiB"},
		{"real exposition", realGz, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", ctText)
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(c.body)
			})
			sc := NewScraper([]Target{target("t", srv.URL)}, nil, Options{Clock: stepClock(), BodyLimit: c.limit})
			st := statusOf(t, sc.ScrapeOnce(t.Context()), "t")
			if c.want == "" {
				if !st.Up || st.Series == 0 {
					t.Errorf("%d-byte gzip (ratio %.0f): %+v, want up", len(c.body), float64(real.Len())/float64(len(c.body)), st)
				}
				return
			}
			if st.Up || !strings.Contains(st.LastError, c.want) {
				t.Errorf("%d-byte gzip: up %v, error %q; want %q", len(c.body), st.Up, st.LastError, c.want)
			}
		})
	}
}
