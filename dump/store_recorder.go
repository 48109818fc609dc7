package dump

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/retrytop/retrytop/model"
)

// TextContentType is the content type of the frames StoreRecorder writes.
const TextContentType = "text/plain; version=0.0.4; charset=utf-8"

// StoreRecorder writes into a dump what a source put into a store without
// bodies of its own: retrytop's Prometheus API source, whose series are
// query results. Each scrape time of each target not written yet becomes
// one frame holding the target's series at that time in the Prometheus
// text format, so a replay, analyze or export reads it like any recording.
// Histogram and summary components are written as their family's
// _bucket/_count/_sum lines under one TYPE line; a series without a value at
// a time is left out of that frame.
type StoreRecorder struct {
	w    *Writer
	last map[string]int64 // per target, the newest time written
	buf  []byte
}

// NewStoreRecorder returns a recorder appending to w.
func NewStoreRecorder(w *Writer) *StoreRecorder {
	return &StoreRecorder{w: w, last: map[string]int64{}}
}

// Sync writes the scrapes st gained since the previous Sync, oldest first
// per target, and returns how many frames it wrote. A write error stops
// the target at hand; the others are still written, and the first error
// is returned.
func (r *StoreRecorder) Sync(st *model.Store) (int, error) {
	frames := 0
	var first error
	for _, target := range st.Targets() {
		last, seen := r.last[target]
		if !seen {
			last = math.MinInt64
		}
		var times []int64
		for _, t := range st.TimesSince(target, last) {
			if t > last {
				times = append(times, t)
			}
		}
		if len(times) == 0 {
			continue
		}
		fams := familiesOf(st, target, times[0])
		for _, t := range times {
			r.buf = appendText(r.buf[:0], fams, t)
			if err := r.w.Append(target, time.UnixMilli(t), TextContentType, r.buf); err != nil {
				if first == nil {
					first = err
				}
				break
			}
			r.last[target] = t
			frames++
		}
	}
	return frames, first
}

// textFamily is the flat series of one family, as stored.
type textFamily struct {
	name   string
	typ    model.MetricType
	series []model.Series
}

// familiesOf groups target's series (points from sinceMs) by family:
// histogram and summary components under their base name.
func familiesOf(st *model.Store, target string, sinceMs int64) []textFamily {
	byName := map[string]*textFamily{}
	var out []*textFamily
	for _, name := range st.Names(target) {
		for _, s := range st.SelectSince(target, name, nil, sinceMs) {
			base := name
			if s.Type == model.Histogram || s.Type == model.Summary {
				for _, sfx := range []string{"_bucket", "_count", "_sum"} {
					if s.Type == model.Summary && sfx == "_bucket" {
						continue
					}
					if b, ok := strings.CutSuffix(name, sfx); ok {
						base = b
						break
					}
				}
			}
			f := byName[base]
			if f == nil {
				f = &textFamily{name: base, typ: s.Type}
				byName[base] = f
				out = append(out, f)
			}
			f.series = append(f.series, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	fams := make([]textFamily, len(out))
	for i, f := range out {
		fams[i] = *f
	}
	return fams
}

// appendText writes the families' values at time t in the text format.
func appendText(dst []byte, fams []textFamily, t int64) []byte {
	for _, f := range fams {
		typed := false
		for _, s := range f.series {
			i := sort.Search(len(s.Points), func(i int) bool { return s.Points[i].T >= t })
			if i == len(s.Points) || s.Points[i].T != t {
				continue
			}
			if !typed {
				dst = append(dst, "# TYPE "...)
				dst = append(dst, omName(f.name)...)
				dst = append(dst, ' ')
				dst = append(dst, textType(f.typ)...)
				dst = append(dst, '\n')
				typed = true
			}
			dst = appendSeries(dst, s.Name, s.Labels, "", "")
			dst = append(dst, ' ')
			dst = model.AppendFloat(dst, s.Points[i].V)
			dst = append(dst, '\n')
		}
	}
	return dst
}

func textType(t model.MetricType) string {
	switch t {
	case model.Counter:
		return "counter"
	case model.Gauge:
		return "gauge"
	case model.Histogram:
		return "histogram"
	case model.Summary:
		return "summary"
	}
	return "untyped"
}
