package dump

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// ExportOptions tune ExportOpenMetrics.
type ExportOptions struct {
	// TargetLabel is the label that carries the target's name (default
	// "instance"); a series that already has it keeps its own value.
	TargetLabel string
	// MemoryBudget bounds the samples held at once, in bytes (default
	// 256 MiB): families are exported in batches, one pass over the
	// recording per batch.
	MemoryBudget int64
}

// ExportStats says what an export wrote.
type ExportStats struct {
	Families, Series, Samples int
	Skipped                   int // entries that could not be read (failed scrapes, damage)
}

// ExportOpenMetrics writes rec as OpenMetrics text with timestamps, the
// input of `promtool tsdb create-blocks-from openmetrics`: each family
// once, each series contiguous with its samples in time order, the target
// as an instance label, "# EOF" at the end. Counters whose name lacks
// _total, which OpenMetrics cannot express, are written as unknown.
func ExportOpenMetrics(w io.Writer, rec Recording, opts ExportOptions) (ExportStats, error) {
	if opts.TargetLabel == "" {
		opts.TargetLabel = "instance"
	}
	if opts.MemoryBudget <= 0 {
		opts.MemoryBudget = 256 << 20
	}
	var st ExportStats
	// Pass 1: the families, their types and sizes.
	type famInfo struct {
		typ     model.MetricType
		help    string
		samples int64
	}
	fams := make(map[string]*famInfo)
	for i := 0; i < rec.Len(); i++ {
		snap, err := rec.Snapshot(i)
		if err != nil {
			st.Skipped++
			continue
		}
		for _, f := range snap.Families {
			fi := fams[f.Name]
			if fi == nil {
				fi = &famInfo{typ: f.Type, help: f.Help}
				fams[f.Name] = fi
			}
			n := int64(0)
			for _, s := range f.Samples {
				n += int64(len(s.Buckets) + len(s.Quantiles) + 2)
			}
			fi.samples += n
		}
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	bw := bufio.NewWriterSize(w, 1<<20)
	const perSample = 48 // bytes held per sample while batching
	for start := 0; start < len(names); {
		end := start
		var size int64
		for end < len(names) && (end == start || size+fams[names[end]].samples*perSample <= opts.MemoryBudget) {
			size += fams[names[end]].samples * perSample
			end++
		}
		batch := make(map[string]bool, end-start)
		for _, n := range names[start:end] {
			batch[n] = true
		}
		series := make(map[string]map[string]*exportSeries) // family -> series key -> points
		for i := 0; i < rec.Len(); i++ {
			snap, err := rec.Snapshot(i)
			if err != nil {
				continue
			}
			ms := snap.Time.UnixMilli()
			for fi := range snap.Families {
				f := &snap.Families[fi]
				if !batch[f.Name] {
					continue
				}
				byKey := series[f.Name]
				if byKey == nil {
					byKey = make(map[string]*exportSeries)
					series[f.Name] = byKey
				}
				for si := range f.Samples {
					s := &f.Samples[si]
					labels := s.Labels
					if !labels.Has(opts.TargetLabel) {
						labels = labels.With(opts.TargetLabel, snap.Target)
					}
					k := string(labels.AppendKey(nil))
					es := byKey[k]
					if es == nil {
						es = &exportSeries{labels: labels}
						byKey[k] = es
					}
					if n := len(es.points); n > 0 && es.points[n-1].ms >= ms {
						continue // OpenMetrics wants increasing timestamps per series
					}
					es.points = append(es.points, exportPoint{ms: ms, s: cloneSample(s)})
				}
			}
		}
		for _, name := range names[start:end] {
			byKey := series[name]
			keys := make([]string, 0, len(byKey))
			for k := range byKey {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			fi := fams[name]
			writeFamily(bw, name, fi.typ, fi.help, keys, byKey, &st)
		}
		start = end
	}
	bw.WriteString("# EOF\n")
	return st, bw.Flush()
}

type exportPoint struct {
	ms int64
	s  model.Sample
}

type exportSeries struct {
	labels model.Labels
	points []exportPoint
}

func cloneSample(s *model.Sample) model.Sample {
	c := model.Sample{Value: s.Value, Count: s.Count, Sum: s.Sum, CreatedMs: s.CreatedMs}
	c.Buckets = append([]model.Bucket(nil), s.Buckets...)
	c.Quantiles = append([]model.QuantileValue(nil), s.Quantiles...)
	return c
}

func writeFamily(w *bufio.Writer, name string, typ model.MetricType, help string, keys []string, byKey map[string]*exportSeries, st *ExportStats) {
	family, sampleName, omType := name, name, "unknown"
	switch typ {
	case model.Counter:
		if strings.HasSuffix(name, "_total") && len(name) > len("_total") {
			family, omType = strings.TrimSuffix(name, "_total"), "counter"
		}
	case model.Gauge:
		omType = "gauge"
	case model.Histogram:
		omType = "histogram"
	case model.Summary:
		omType = "summary"
	}
	st.Families++
	fmt.Fprintf(w, "# TYPE %s %s\n", omName(family), omType)
	if help != "" {
		fmt.Fprintf(w, "# HELP %s %s\n", omName(family), escapeHelp(help))
	}
	var buf []byte
	line := func(n string, labels model.Labels, extra, extraVal string, v float64, ms int64) {
		buf = appendSeries(buf[:0], n, labels, extra, extraVal)
		buf = append(buf, ' ')
		buf = append(buf, model.FormatFloat(v)...)
		buf = append(buf, ' ')
		buf = appendSeconds(buf, ms)
		buf = append(buf, '\n')
		w.Write(buf)
		st.Samples++
	}
	// created writes a series' creation time (OpenMetrics _created, in
	// seconds), which tells an importer that a series new since the
	// previous sample started at 0.
	created := func(labels model.Labels, s *model.Sample, ms int64) {
		if s.CreatedMs > 0 && (omType == "counter" || omType == "histogram" || omType == "summary") {
			line(family+"_created", labels, "", "", float64(s.CreatedMs)/1000, ms)
		}
	}
	for _, k := range keys {
		es := byKey[k]
		st.Series++
		for _, p := range es.points {
			switch typ {
			case model.Histogram:
				for _, b := range p.s.Buckets {
					line(family+"_bucket", es.labels, "le", model.FormatFloat(b.UpperBound), b.Count, p.ms)
				}
				if !math.IsNaN(p.s.Count) {
					line(family+"_count", es.labels, "", "", p.s.Count, p.ms)
				}
				if !math.IsNaN(p.s.Sum) {
					line(family+"_sum", es.labels, "", "", p.s.Sum, p.ms)
				}
			case model.Summary:
				for _, q := range p.s.Quantiles {
					line(family, es.labels, "quantile", model.FormatFloat(q.Quantile), q.Value, p.ms)
				}
				if !math.IsNaN(p.s.Count) {
					line(family+"_count", es.labels, "", "", p.s.Count, p.ms)
				}
				if !math.IsNaN(p.s.Sum) {
					line(family+"_sum", es.labels, "", "", p.s.Sum, p.ms)
				}
			default:
				line(sampleName, es.labels, "", "", p.s.Value, p.ms)
			}
			created(es.labels, &p.s, p.ms)
		}
	}
}

// LegacyName reports whether n needs no quoting in the text formats: a
// metric name (label false, colons allowed) or a label name.
func LegacyName(n string, label bool) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		ok := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') || (!label && c == ':')
		if !ok {
			return false
		}
	}
	return true
}

func omName(n string) string {
	if LegacyName(n, false) {
		return n
	}
	return `"` + escapeValue(n) + `"`
}

func appendSeries(dst []byte, name string, labels model.Labels, extra, extraVal string) []byte {
	quoted := !LegacyName(name, false)
	if !quoted {
		dst = append(dst, name...)
	}
	if len(labels) == 0 && extra == "" && !quoted {
		return dst
	}
	dst = append(dst, '{')
	first := true
	if quoted {
		dst = append(dst, '"')
		dst = append(dst, escapeValue(name)...)
		dst = append(dst, '"')
		first = false
	}
	write := func(n, v string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if LegacyName(n, true) {
			dst = append(dst, n...)
		} else {
			dst = append(dst, '"')
			dst = append(dst, escapeValue(n)...)
			dst = append(dst, '"')
		}
		dst = append(dst, '=', '"')
		dst = append(dst, escapeValue(v)...)
		dst = append(dst, '"')
	}
	for _, l := range labels {
		if l.Name == extra {
			continue
		}
		write(l.Name, l.Value)
	}
	if extra != "" {
		write(extra, extraVal)
	}
	return append(dst, '}')
}

func escapeValue(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return r.Replace(s)
}

func escapeHelp(s string) string {
	if !strings.ContainsAny(s, "\\\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

// appendSeconds writes ms as seconds with up to three decimals.
func appendSeconds(dst []byte, ms int64) []byte {
	if ms%1000 == 0 {
		return strconv.AppendInt(dst, ms/1000, 10)
	}
	return strconv.AppendFloat(dst, float64(ms)/1000, 'f', -1, 64)
}
