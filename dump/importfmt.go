package dump

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// Format names, as --input-format takes them.
const (
	FormatDump        = "dump"            // retrytop's own dump
	FormatOpenMetrics = "openmetrics"     // OpenMetrics text with timestamps
	FormatPromJSON    = "prometheus"      // Prometheus HTTP API query_range JSON (matrix)
	FormatVMJSON      = "victoriametrics" // VictoriaMetrics /api/v1/export JSON lines
	FormatConcat      = "concat"          // exposition snapshots with a timestamp line before each
)

// Formats lists the readable formats (for flag help).
var Formats = []string{FormatDump, FormatOpenMetrics, FormatPromJSON, FormatVMJSON, FormatConcat}

// ImportOptions tune the importers.
type ImportOptions struct {
	// Target names the snapshots of series that carry no instance label
	// (default: the file's base name without its extension).
	Target string
	// Parser reads the snapshots of a concat file (default
	// expo.ExpfmtParser with line caches of its own).
	Parser expo.Parser
	// Filter keeps only the families it selects (nil: all), as
	// expo.Parser's filter.
	Filter func(name string) bool
	// Warn receives what was read but dropped, with its place: a second
	// sample of a series at a timestamp it already has (Prometheus' rule:
	// the first wins), at most MaxDuplicateWarnings of them and then their
	// count. nil: dropped silently.
	Warn func(error)
}

// MaxDuplicateWarnings caps the duplicates named one by one.
const MaxDuplicateWarnings = 10

// ImportError is a file that could not be imported, with the place.
type ImportError struct {
	File   string
	Line   int   // 1-based; 0 when the format has no lines
	Offset int64 // byte offset, when Line is 0; -1 when unknown
	Msg    string
}

func (e *ImportError) Error() string {
	switch {
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.Offset >= 0:
		return fmt.Sprintf("%s: offset %d: %s", e.File, e.Offset, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// DetectFormat tells the format of a file from its first bytes (head; a
// few KiB are plenty).
func DetectFormat(head []byte) (string, error) {
	if bytes.HasPrefix(head, []byte(magic)) {
		return FormatDump, nil
	}
	trim := bytes.TrimLeft(head, " \t\r\n")
	if len(trim) == 0 {
		return "", errors.New("empty file")
	}
	if trim[0] == '{' {
		line := trim
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		var probe map[string]json.RawMessage
		if json.Unmarshal(line, &probe) == nil {
			if _, ok := probe["metric"]; ok {
				return FormatVMJSON, nil
			}
		}
		if bytes.Contains(head, []byte(`"resultType"`)) || bytes.Contains(head, []byte(`"status"`)) || bytes.Contains(head, []byte(`"data"`)) {
			return FormatPromJSON, nil
		}
		if bytes.Contains(line, []byte(`"metric"`)) {
			return FormatVMJSON, nil
		}
		return "", errors.New("JSON, but neither a Prometheus query_range result nor a VictoriaMetrics export; use --input-format")
	}
	first := true
	for _, l := range bytes.Split(head, []byte("\n")) {
		l = bytes.TrimRight(l, "\r")
		if first {
			if len(bytes.TrimSpace(l)) == 0 {
				continue
			}
			first = false
			if _, _, ok := parseStampLine(string(l)); ok {
				return FormatConcat, nil
			}
		}
		if string(l) == "# EOF" {
			return FormatOpenMetrics, nil
		}
		if len(l) > 0 && l[0] != '#' {
			if _, rest, err := splitSeries(string(l)); err == nil && len(strings.Fields(rest)) >= 2 {
				return FormatOpenMetrics, nil
			}
		}
	}
	return "", errors.New("cannot tell the format (not a dump, JSON, OpenMetrics with timestamps, or snapshots with timestamp lines); use --input-format")
}

// Import reads a file in one of the foreign formats (not FormatDump) into
// snapshots in time order (ties by target). format "" detects it.
func Import(path, format string, opts ImportOptions) ([]model.Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if format == "" {
		if format, err = DetectFormat(b[:min(len(b), 64<<10)]); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if opts.Target == "" {
		base := filepath.Base(path)
		opts.Target = strings.TrimSuffix(base, filepath.Ext(base))
	}
	return ImportBytes(b, path, format, opts)
}

// ImportBytes is Import on a file's content; name labels errors.
func ImportBytes(b []byte, name, format string, opts ImportOptions) ([]model.Snapshot, error) {
	if opts.Target == "" {
		opts.Target = "imported"
	}
	im := &importer{file: name, opts: opts}
	var err error
	switch format {
	case FormatOpenMetrics:
		err = im.openMetrics(b)
	case FormatPromJSON:
		err = im.promJSON(b)
	case FormatVMJSON:
		err = im.vmJSON(b)
	case FormatConcat:
		return importConcat(b, name, opts)
	case FormatDump:
		return nil, fmt.Errorf("%s: a dump is opened with Open, not imported", name)
	default:
		return nil, fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return nil, err
	}
	snaps := im.snapshots()
	if im.dups > MaxDuplicateWarnings && opts.Warn != nil {
		opts.Warn(&ImportError{File: name, Offset: -1, Msg: fmt.Sprintf("%d duplicate samples dropped in all (the first of each kept)", im.dups)})
	}
	return snaps, nil
}

type importer struct {
	file   string
	opts   ImportOptions
	line   int32                       // the line being read, 0 where the format has none
	dups   int                         // duplicates dropped
	types  map[string]model.MetricType // OpenMetrics # TYPE, by family name
	series []flatSeries                // every distinct series, once
	ids    map[string]int32            // series key -> index in series
	points []flatPoint
	buf    []byte
	labels model.Labels // scratch
}

// flatSeries is one flat series of a file: its target, name and labels
// (sorted; without __name__ and instance).
type flatSeries struct {
	target, name string
	labels       model.Labels
}

// flatPoint is one sample of one flat series as a file holds it. Series
// are interned: a long file holds millions of samples of a few thousand
// series.
type flatPoint struct {
	series int32
	line   int32 // where the file holds it (0: no lines)
	ms     int64
	v      float64
}

// add keeps one flat sample. labels may contain __name__ (ignored) and
// instance (the target). A bucket bound or quantile that is not a number
// is an error: the sample could not be placed in its histogram.
func (im *importer) add(name string, labels model.Labels, ms int64, v float64) error {
	if f := im.opts.Filter; f != nil && !f(name) && !f(familyOf(name)) && !createdOf(f, name) {
		return nil
	}
	target := im.opts.Target
	out := im.labels[:0]
	for _, l := range labels {
		switch l.Name {
		case "__name__":
		case "instance":
			if l.Value != "" {
				target = l.Value
			}
		case "le", "quantile":
			f, err := model.ParseFloat(l.Value)
			if err != nil {
				return fmt.Errorf("%s: %s %q is not a number", safetext.Terminal(name), l.Name, safetext.Terminal(l.Value))
			}
			l.Value = model.FormatFloat(f)
			out = append(out, l)
		default:
			out = append(out, l)
		}
	}
	out.Sort()
	im.labels = out
	im.buf = append(append(append(append(im.buf[:0], target...), 0xff), name...), 0xff)
	im.buf = out.AppendKey(im.buf)
	id, ok := im.ids[string(im.buf)]
	if !ok {
		if im.ids == nil {
			im.ids = map[string]int32{}
		}
		if len(im.series) >= math.MaxInt32 {
			return errors.New("too many series")
		}
		id = int32(len(im.series))
		im.ids[string(im.buf)] = id
		im.series = append(im.series, flatSeries{target: target, name: name, labels: append(model.Labels(nil), out...)})
	}
	im.points = append(im.points, flatPoint{series: id, line: im.line, ms: ms, v: v})
	return nil
}

// duplicate reports a sample dropped because its series already has one
// at its timestamp.
func (im *importer) duplicate(kept, dropped flatPoint) {
	im.dups++
	if im.opts.Warn == nil || im.dups > MaxDuplicateWarnings {
		return
	}
	fs := im.series[dropped.series]
	name := fs.name
	if len(fs.labels) > 0 {
		name += fs.labels.String()
	}
	msg := fmt.Sprintf("duplicate sample of %s at %s: kept the first (%s), dropped %s",
		safetext.Terminal(name), time.UnixMilli(dropped.ms).UTC().Format(time.RFC3339Nano), model.FormatFloat(kept.v), model.FormatFloat(dropped.v))
	if kept.line > 0 {
		msg += fmt.Sprintf(" (line %d)", kept.line)
	}
	im.opts.Warn(&ImportError{File: im.file, Line: int(dropped.line), Offset: -1, Msg: msg})
}

// createdOf reports whether name is the _created series of a counter the
// filter keeps (filters name counters with their _total).
func createdOf(filter func(string) bool, name string) bool {
	base, ok := strings.CutSuffix(name, "_created")
	return ok && filter(base+"_total")
}

// familyOf strips one histogram or summary suffix.
func familyOf(name string) string {
	for _, suf := range []string{"_bucket", "_count", "_sum", "_created", "_gcount", "_gsum"} {
		if strings.HasSuffix(name, suf) {
			return strings.TrimSuffix(name, suf)
		}
	}
	return name
}

// role is what a flat sample is to its family's sample.
type role int

const (
	roleValue role = iota
	roleBucket
	roleQuantile
	roleCount
	roleSum
	roleCreated
	roleSkip
)

// shape is the family a flat sample name belongs to.
type shape struct {
	family string
	typ    model.MetricType
	role   role
}

// shapes resolves the flat names of one target's series into families:
// by the file's # TYPE lines where it has them, else by Prometheus' naming
// (a _bucket with le is a histogram's, a quantile or a _count with a _sum
// a summary's, _total a counter's), so that histograms and summaries come
// out whole, as a scrape of the same data gives them to the dialects.
func (im *importer) shapes(ids []int32) map[string]shape {
	names := map[string]bool{}
	hist, quant := map[string]bool{}, map[string]bool{}
	for _, id := range ids {
		fs := &im.series[id]
		names[fs.name] = true
		if b, ok := strings.CutSuffix(fs.name, "_bucket"); ok && fs.labels.Has("le") {
			hist[b] = true
		}
		if fs.labels.Has("quantile") {
			quant[fs.name] = true
		}
	}
	typed := func(n string) (model.MetricType, bool) {
		t, ok := im.types[n]
		return t, ok
	}
	out := make(map[string]shape, len(names))
	for n := range names {
		sh := shape{family: n, typ: model.Untyped}
		if t, ok := typed(n); ok {
			sh.typ = t
			switch t {
			case model.Summary:
				sh.role = roleQuantile
			case model.Histogram:
				sh.role = roleSkip // a histogram has no sample of its own name
			}
			out[n] = sh
			continue
		}
		if b, ok := strings.CutSuffix(n, "_total"); ok {
			if t, known := typed(b); !known || t == model.Counter {
				out[n] = shape{family: n, typ: model.Counter}
				continue
			}
		}
		if quant[n] {
			out[n] = shape{family: n, typ: model.Summary, role: roleQuantile}
			continue
		}
		found := false
		for _, x := range []struct {
			suf  string
			role role
		}{{"_bucket", roleBucket}, {"_count", roleCount}, {"_sum", roleSum}, {"_gcount", roleCount}, {"_gsum", roleSum}, {"_created", roleCreated}} {
			b, ok := strings.CutSuffix(n, x.suf)
			if !ok {
				continue
			}
			t, known := typed(b)
			switch {
			case known && (t == model.Histogram || t == model.Summary && x.role != roleBucket):
			case known && t == model.Counter && x.role == roleCreated:
				b += "_total"
			case known:
				continue
			case hist[b]:
				t = model.Histogram
			case quant[b] || x.role != roleBucket && names[b+"_count"] && names[b+"_sum"] && !names[b]:
				t = model.Summary
			case x.role == roleCreated && names[b+"_total"]:
				t, b = model.Counter, b+"_total"
			default:
				continue
			}
			sh, found = shape{family: b, typ: t, role: x.role}, true
			break
		}
		if !found && strings.HasSuffix(n, "_created") {
			sh.role = roleSkip // a creation time of nothing we know: not a sample
		}
		out[n] = sh
	}
	return out
}

// snapshots groups the samples into one snapshot per target and scrape.
//
// Exporters that stamp each family when they collect it (promtool-style
// files from real exporters) give one scrape a millisecond or two of
// spread: a target's sample times are clustered, a cluster spanning less
// than half the shortest step of any of its series (so no series has two
// samples in one), at most 5 s, and stamped with its earliest time, when
// the exporter began to collect (a scraper stamps a scrape's start too).
func (im *importer) snapshots() []model.Snapshot {
	byTarget := map[string][]flatPoint{}
	for _, p := range im.points {
		t := im.series[p.series].target
		byTarget[t] = append(byTarget[t], p)
	}
	im.points = nil
	var out []model.Snapshot
	for target, pts := range byTarget {
		out = append(out, im.targetSnapshots(target, pts)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.Before(out[j].Time)
		}
		return out[i].Target < out[j].Target
	})
	return out
}

// placed is a series resolved into its family's sample.
type placed struct {
	shape
	labels model.Labels // the sample's: without le or quantile
	key    string       // of labels
	bound  float64      // le or quantile
}

// targetSnapshots makes the snapshots of one target from its points:
// one per cluster of sample times (snapshots).
func (im *importer) targetSnapshots(target string, pts []flatPoint) []model.Snapshot {
	pts = im.dedupPoints(pts)
	ids, step := seriesSteps(pts)
	place := im.placeSeries(ids)
	cluster, stamps := clusterTimes(pts, step)
	snaps := make([]map[string]*famAcc, len(stamps))
	for i := range pts {
		p := &pts[i]
		pl := place[p.series]
		if pl.role == roleSkip {
			continue
		}
		c := cluster[p.ms]
		if snaps[c] == nil {
			snaps[c] = map[string]*famAcc{}
		}
		snaps[c][pl.family] = snaps[c][pl.family].take(pl, p.v)
	}
	out := make([]model.Snapshot, 0, len(stamps))
	for c, fams := range snaps {
		sn := model.Snapshot{Target: target, Time: time.UnixMilli(stamps[c])}
		for _, fa := range fams {
			if f := fa.family(); len(f.Samples) > 0 {
				sn.Families = append(sn.Families, f)
			}
		}
		if len(sn.Families) == 0 {
			continue
		}
		sort.Slice(sn.Families, func(i, j int) bool { return sn.Families[i].Name < sn.Families[j].Name })
		out = append(out, sn)
	}
	return out
}

// dedupPoints sorts pts by series and time and drops a series' second
// sample at one timestamp: the first in the file wins (the sort is
// stable), as Prometheus keeps the first.
func (im *importer) dedupPoints(pts []flatPoint) []flatPoint {
	sort.SliceStable(pts, func(i, j int) bool {
		if pts[i].series != pts[j].series {
			return pts[i].series < pts[j].series
		}
		return pts[i].ms < pts[j].ms
	})
	kept := pts[:0]
	for k := range pts {
		if n := len(kept); n > 0 && kept[n-1].series == pts[k].series && kept[n-1].ms == pts[k].ms {
			im.duplicate(kept[n-1], pts[k])
			continue
		}
		kept = append(kept, pts[k])
	}
	return kept
}

// maxSpread is the widest cluster of sample times read as one scrape (ms).
const maxSpread = 5000

// seriesSteps returns the series of pts (sorted by series and time) and
// the shortest step of any of them, which bounds a cluster (2*maxSpread
// at most).
func seriesSteps(pts []flatPoint) ([]int32, int64) {
	step := int64(2 * maxSpread)
	var ids []int32
	for k := range pts {
		if k == 0 || pts[k].series != pts[k-1].series {
			ids = append(ids, pts[k].series)
		} else if pts[k].ms > pts[k-1].ms {
			step = min(step, pts[k].ms-pts[k-1].ms)
		}
	}
	return ids, step
}

// placeSeries resolves each series into its family's sample.
func (im *importer) placeSeries(ids []int32) map[int32]*placed {
	shapes := im.shapes(ids)
	place := make(map[int32]*placed, len(ids))
	for _, id := range ids {
		fs := &im.series[id]
		pl := &placed{shape: shapes[fs.name], labels: fs.labels}
		switch pl.role {
		case roleBucket:
			pl.bound, _ = model.ParseFloat(fs.labels.Get("le"))
			pl.labels = fs.labels.Without("le")
		case roleQuantile:
			pl.bound, _ = model.ParseFloat(fs.labels.Get("quantile"))
			pl.labels = fs.labels.Without("quantile")
		}
		pl.key = string(pl.labels.AppendKey(nil))
		place[id] = pl
	}
	return place
}

// clusterTimes clusters the sample times of pts, each cluster spanning
// less than half of step: it maps a sample time to its cluster's index,
// and returns each cluster's earliest time.
func clusterTimes(pts []flatPoint, step int64) (map[int64]int, []int64) {
	times := make([]int64, len(pts))
	for i := range pts {
		times[i] = pts[i].ms
	}
	slices.Sort(times)
	cluster := map[int64]int{}
	var stamps []int64
	for lo := 0; lo < len(times); {
		hi := lo
		for hi < len(times) && 2*(times[hi]-times[lo]) < step {
			cluster[times[hi]] = len(stamps)
			hi++
		}
		stamps = append(stamps, times[lo])
		lo = hi
	}
	return cluster, stamps
}

// sampleAcc gathers the flat series of one sample in one snapshot.
type sampleAcc struct {
	s                model.Sample
	buckets          []model.Bucket
	quantiles        []model.QuantileValue
	count, sum       float64
	hasCount, hasSum bool
	hasValue         bool
}

// famAcc gathers the samples of one family in one snapshot.
type famAcc struct {
	f       model.Family
	samples map[string]*sampleAcc
	order   []string
}

// take adds value v of the flat series pl to its sample in fa, made when
// nil; it returns fa.
func (fa *famAcc) take(pl *placed, v float64) *famAcc {
	if fa == nil {
		fa = &famAcc{f: model.Family{Name: pl.family, Type: pl.typ}, samples: map[string]*sampleAcc{}}
	}
	sa := fa.samples[pl.key]
	if sa == nil {
		sa = &sampleAcc{s: model.Sample{Labels: pl.labels}}
		fa.samples[pl.key] = sa
		fa.order = append(fa.order, pl.key)
	}
	switch pl.role {
	case roleValue:
		sa.s.Value, sa.hasValue = v, true
	case roleBucket:
		sa.buckets = append(sa.buckets, model.Bucket{UpperBound: pl.bound, Count: v})
	case roleQuantile:
		sa.quantiles = append(sa.quantiles, model.QuantileValue{Quantile: pl.bound, Value: v})
	case roleCount:
		sa.count, sa.hasCount = v, true
	case roleSum:
		sa.sum, sa.hasSum = v, true
	case roleCreated:
		if !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0 && v < 1e13 {
			sa.s.CreatedMs = int64(math.Round(v * 1000))
		}
	}
	return fa
}

// family returns the family with its samples in the order of their
// labels' keys, leaving out those with nothing but a creation time.
func (fa *famAcc) family() model.Family {
	sort.Strings(fa.order)
	for _, k := range fa.order {
		sa := fa.samples[k]
		switch fa.f.Type {
		case model.Histogram:
			if len(sa.buckets) == 0 && !sa.hasCount && !sa.hasSum {
				continue // only a creation time
			}
			expo.FinishHistogram(&sa.s, sa.buckets, sa.count, sa.hasCount, sa.sum, sa.hasSum)
		case model.Summary:
			if len(sa.quantiles) == 0 && !sa.hasCount && !sa.hasSum {
				continue
			}
			expo.FinishSummary(&sa.s, sa.quantiles, sa.count, sa.hasCount, sa.sum, sa.hasSum)
		default:
			if !sa.hasValue {
				continue
			}
		}
		fa.f.Samples = append(fa.f.Samples, sa.s)
	}
	return fa.f
}

// ---- OpenMetrics text with timestamps ----

func (im *importer) openMetrics(b []byte) error {
	im.types = make(map[string]model.MetricType)
	lineNo := 0
	sawEOF := false
	for len(b) > 0 {
		lineNo++
		var line string
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = string(b[:i]), b[i+1:]
		} else {
			line, b = string(b), nil
		}
		line = strings.TrimSuffix(line, "\r")
		fail := func(format string, args ...any) error {
			return &ImportError{File: im.file, Line: lineNo, Msg: fmt.Sprintf(format, args...)}
		}
		if sawEOF {
			if strings.TrimSpace(line) != "" {
				return fail("content after # EOF")
			}
			continue
		}
		switch {
		case line == "# EOF":
			sawEOF = true
			continue
		case strings.TrimSpace(line) == "":
			continue
		case strings.HasPrefix(line, "#"):
			f := strings.Fields(line)
			if len(f) >= 4 && f[1] == "TYPE" {
				switch f[3] {
				case "counter":
					im.types[f[2]] = model.Counter
				case "gauge":
					im.types[f[2]] = model.Gauge
				case "histogram", "gaugehistogram":
					im.types[f[2]] = model.Histogram
				case "summary":
					im.types[f[2]] = model.Summary
				case "unknown", "untyped", "info", "stateset":
					im.types[f[2]] = model.Untyped
				default:
					return fail("unknown metric type %q", safetext.Terminal(f[3]))
				}
			}
			continue
		}
		name, labels, v, ms, err := ParseSampleLine(line)
		if err != nil {
			return fail("%v", err)
		}
		im.line = int32(min(lineNo, math.MaxInt32))
		if err := im.add(name, labels, ms, v); err != nil {
			return fail("%v", err)
		}
	}
	return nil
}

// ParseSampleLine reads one sample line of OpenMetrics text with a
// timestamp (what ExportOpenMetrics writes): name{labels} value seconds,
// a UTF-8 name quoted inside the braces, an exemplar after " # " ignored.
// It returns the time in Unix milliseconds.
func ParseSampleLine(line string) (name string, labels model.Labels, v float64, ms int64, err error) {
	name, labels, rest, err := parseSeries(line)
	if err != nil {
		return "", nil, 0, 0, err
	}
	if i := strings.Index(rest, " # "); i >= 0 {
		rest = rest[:i] // an exemplar
	}
	fields := strings.Fields(rest)
	if len(fields) < 2 {
		return "", nil, 0, 0, fmt.Errorf("sample of %q has no timestamp; every sample needs one (seconds since the epoch)", safetext.Terminal(name))
	}
	if len(fields) > 2 {
		return "", nil, 0, 0, fmt.Errorf("unexpected %q after the timestamp", safetext.Terminal(fields[2]))
	}
	if v, err = model.ParseFloat(fields[0]); err != nil {
		return "", nil, 0, 0, fmt.Errorf("bad value %q", safetext.Terminal(fields[0]))
	}
	ts, err := strconv.ParseFloat(fields[1], 64)
	if err != nil || math.IsNaN(ts) || math.IsInf(ts, 0) || math.Abs(ts) > 1e13 {
		return "", nil, 0, 0, fmt.Errorf("bad timestamp %q (want seconds since the epoch)", safetext.Terminal(fields[1]))
	}
	return name, labels, v, int64(math.Round(ts * 1000)), nil
}

// parseSeries reads name{labels} at the start of line and returns the rest.
func parseSeries(line string) (string, model.Labels, string, error) {
	name, rest, err := splitSeries(line)
	if err != nil {
		return "", nil, "", err
	}
	var labels model.Labels
	if strings.HasPrefix(rest, "{") {
		var quotedName string
		labels, quotedName, rest, err = parseLabels(rest)
		if err != nil {
			return "", nil, "", err
		}
		if name == "" {
			name = quotedName
		}
	}
	if name == "" {
		return "", nil, "", errors.New("sample without a metric name")
	}
	if !utf8.ValidString(name) {
		return "", nil, "", errors.New("metric name is not UTF-8")
	}
	return name, labels, rest, nil
}

// splitSeries splits off a bare metric name (empty when the line starts
// with '{').
func splitSeries(line string) (string, string, error) {
	i := strings.IndexAny(line, "{ \t")
	if i < 0 {
		return "", "", errors.New("sample without a value")
	}
	return line[:i], line[i:], nil
}

// parseLabels reads {a="b",...}; a first quoted string not followed by '='
// is the metric name (UTF-8 names).
func parseLabels(s string) (model.Labels, string, string, error) {
	var labels model.Labels
	name := ""
	i := 1
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == ',') {
			i++
		}
		if i >= len(s) {
			return nil, "", "", errors.New("unterminated label set")
		}
		if s[i] == '}' {
			i++
			break
		}
		var ln string
		if s[i] == '"' {
			v, n, err := unquote(s[i:])
			if err != nil {
				return nil, "", "", err
			}
			i += n
			for i < len(s) && s[i] == ' ' {
				i++
			}
			if i < len(s) && s[i] != '=' {
				if name != "" || len(labels) > 0 {
					return nil, "", "", errors.New("quoted metric name must come first in the braces")
				}
				name = v
				continue
			}
			ln = v
		} else {
			j := i
			for j < len(s) && s[j] != '=' && s[j] != ' ' && s[j] != '}' && s[j] != ',' {
				j++
			}
			ln = s[i:j]
			i = j
			for i < len(s) && s[i] == ' ' {
				i++
			}
		}
		if ln == "" || i >= len(s) || s[i] != '=' {
			return nil, "", "", errors.New("malformed label: want name=\"value\"")
		}
		i++
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) || s[i] != '"' {
			return nil, "", "", fmt.Errorf("label %q: value must be quoted", safetext.Terminal(ln))
		}
		v, n, err := unquote(s[i:])
		if err != nil {
			return nil, "", "", fmt.Errorf("label %q: %v", safetext.Terminal(ln), err)
		}
		i += n
		labels = append(labels, model.Label{Name: ln, Value: v})
	}
	return labels, name, s[i:], nil
}

// unquote reads a double-quoted string with \\, \" and \n escapes; n is
// how many bytes it took.
func unquote(s string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			i++
			if i >= len(s) {
				return "", 0, errors.New("unterminated string")
			}
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case '\\', '"':
				b.WriteByte(s[i])
			default:
				return "", 0, fmt.Errorf("unknown escape \\%c", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errors.New("unterminated string")
}

// ---- Prometheus query_range JSON ----

type promResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      *struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string    `json:"metric"`
			Values [][2]json.RawMessage `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

func (im *importer) promJSON(b []byte) error {
	var resp promResponse
	if err := json.Unmarshal(b, &resp); err != nil {
		return im.jsonError(b, 0, err)
	}
	fail := func(format string, args ...any) error {
		return &ImportError{File: im.file, Offset: -1, Msg: fmt.Sprintf(format, args...)}
	}
	if resp.Status != "success" {
		if resp.Status == "" {
			return fail("no \"status\": not a Prometheus API response")
		}
		return fail("the query failed: %s: %s", safetext.Terminal(resp.ErrorType), safetext.Terminal(resp.Error))
	}
	if resp.Data == nil {
		return fail("no \"data\"")
	}
	if resp.Data.ResultType != "matrix" {
		return fail("resultType %q: want \"matrix\", the result of /api/v1/query_range", safetext.Terminal(resp.Data.ResultType))
	}
	for i, r := range resp.Data.Result {
		name := r.Metric["__name__"]
		if name == "" {
			return fail("series %d (%s) has no __name__: query raw series (a selector), not an expression", i, safetext.Terminal(model.LabelsFromMap(r.Metric).String()))
		}
		labels := model.LabelsFromMap(r.Metric)
		for j, p := range r.Values {
			var ts float64
			var vs string
			if err := json.Unmarshal(p[0], &ts); err != nil {
				return fail("series %d (%s), value %d: bad timestamp %s", i, safetext.Terminal(name), j, safetext.Terminal(string(p[0])))
			}
			if err := json.Unmarshal(p[1], &vs); err != nil {
				return fail("series %d (%s), value %d: value must be a string, got %s", i, safetext.Terminal(name), j, safetext.Terminal(string(p[1])))
			}
			v, err := model.ParseFloat(vs)
			if err != nil {
				return fail("series %d (%s), value %d: bad value %q", i, safetext.Terminal(name), j, safetext.Terminal(vs))
			}
			if math.IsNaN(ts) || math.Abs(ts) > 1e13 {
				return fail("series %d (%s), value %d: bad timestamp", i, safetext.Terminal(name), j)
			}
			if err := im.add(name, labels, int64(math.Round(ts*1000)), v); err != nil {
				return fail("series %d, value %d: %v", i, j, err)
			}
		}
	}
	return nil
}

// jsonError places a JSON error at its line of b (base: b's first line).
func (im *importer) jsonError(b []byte, base int, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off >= 0 && off <= int64(len(b)) {
		return &ImportError{File: im.file, Line: base + 1 + bytes.Count(b[:off], []byte("\n")), Msg: "invalid JSON: " + safetext.Terminal(err.Error())}
	}
	if base > 0 {
		return &ImportError{File: im.file, Line: base + 1, Msg: "invalid JSON: " + safetext.Terminal(err.Error())}
	}
	return &ImportError{File: im.file, Offset: -1, Msg: "invalid JSON: " + safetext.Terminal(err.Error())}
}

// ---- VictoriaMetrics /api/v1/export JSON lines ----

type vmLine struct {
	Metric     map[string]string `json:"metric"`
	Values     []json.RawMessage `json:"values"`
	Timestamps []int64           `json:"timestamps"`
}

func (im *importer) vmJSON(b []byte) error {
	lineNo := 0
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		lineNo++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		fail := func(format string, args ...any) error {
			return &ImportError{File: im.file, Line: lineNo, Msg: fmt.Sprintf(format, args...)}
		}
		var l vmLine
		if err := json.Unmarshal(line, &l); err != nil {
			return im.jsonError(line, lineNo-1, err)
		}
		name := l.Metric["__name__"]
		if name == "" {
			return fail("series without __name__")
		}
		if len(l.Values) != len(l.Timestamps) {
			return fail("%d values for %d timestamps", len(l.Values), len(l.Timestamps))
		}
		labels := model.LabelsFromMap(l.Metric)
		for j, raw := range l.Values {
			v, err := vmValue(raw)
			if err != nil {
				return fail("value %d: %v", j, err)
			}
			if err := im.add(name, labels, l.Timestamps[j], v); err != nil {
				return fail("value %d: %v", j, err)
			}
		}
	}
	return nil
}

// vmValue reads a value: a JSON number, or a string such as "NaN" or
// "Inf".
func vmValue(raw json.RawMessage) (float64, error) {
	var f float64
	if err := json.Unmarshal(raw, &f); err == nil {
		return f, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if v, err := model.ParseFloat(s); err == nil {
			return v, nil
		}
	}
	return 0, fmt.Errorf("bad value %s", safetext.Terminal(string(raw)))
}

// ---- concatenated exposition snapshots ----

// parseStampLine reads a timestamp line: [# ][SCRAPE ]TIMESTAMP [TARGET],
// where TIMESTAMP is Unix seconds (at most 11 digits, an optional
// fraction), Unix milliseconds (12 to 14 digits, an optional fraction) or
// RFC 3339.
func parseStampLine(line string) (time.Time, string, bool) {
	s := strings.TrimSpace(line)
	s = strings.TrimPrefix(s, "# ")
	f := strings.Fields(s)
	if len(f) > 1 && f[0] == "SCRAPE" {
		f = f[1:]
	}
	if len(f) == 0 || len(f) > 2 {
		return time.Time{}, "", false
	}
	target := ""
	if len(f) == 2 {
		target = f[1]
		if safetext.Terminal(target) != target || strings.ContainsAny(target, "\"\\{}") {
			return time.Time{}, "", false
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, f[0]); err == nil {
		return t, target, true
	}
	if strings.ContainsAny(f[0], "eEnN+") {
		return time.Time{}, "", false
	}
	sec, frac, _ := strings.Cut(f[0], ".")
	// Seconds have 10 digits until the year 2286; 12 or more digits are
	// milliseconds (date +%s%3N), which would be after the year 5000 as
	// seconds.
	fracDigits := 9
	if len(sec) >= 12 {
		fracDigits = 6
	}
	if sec == "" || len(sec) > 14 || len(frac) > fracDigits {
		return time.Time{}, "", false
	}
	si, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || si < 0 {
		return time.Time{}, "", false
	}
	var sub int64 // the fraction in units of 10^-fracDigits
	if frac != "" {
		n, err := strconv.ParseUint(frac, 10, 64)
		if err != nil {
			return time.Time{}, "", false
		}
		sub = int64(n)
		for k := len(frac); k < fracDigits; k++ {
			sub *= 10
		}
	}
	if len(sec) >= 12 {
		return time.UnixMilli(si).Add(time.Duration(sub)), target, true
	}
	return time.Unix(si, sub), target, true
}

func importConcat(b []byte, name string, opts ImportOptions) ([]model.Snapshot, error) {
	parser := opts.Parser
	if parser == nil {
		parser = expo.ExpfmtParser{Lines: expo.NewLineCaches(0)}
	}
	var out []model.Snapshot
	var outLines []int // the timestamp line of each of out
	var cur *model.Snapshot
	var chunk []byte
	chunkLine := 0
	flush := func() error {
		if cur == nil {
			return nil
		}
		fams, err := parser.Parse(cur.Target, chunk, "text/plain; version=0.0.4", opts.Filter)
		if err != nil {
			var pe *expo.ParseError
			if errors.As(err, &pe) {
				line := 0
				if pe.Line > 0 {
					line = chunkLine + pe.Line
				}
				return &ImportError{File: name, Line: line, Offset: -1, Msg: pe.Msg}
			}
			return &ImportError{File: name, Line: chunkLine, Msg: err.Error()}
		}
		cur.Families = fams
		out = append(out, *cur)
		outLines = append(outLines, chunkLine)
		return nil
	}
	lineNo := 0
	for off := 0; off < len(b); {
		end, next := lineAt(b, off)
		lineNo++
		line := string(bytes.TrimRight(b[off:end], "\r"))
		if t, target, ok := parseStampLine(line); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			if target == "" {
				target = opts.Target
			}
			cur = &model.Snapshot{Target: target, Time: t}
			chunk, chunkLine = chunk[:0], lineNo
		} else if cur == nil {
			if strings.TrimSpace(line) != "" {
				return nil, &ImportError{File: name, Line: lineNo, Msg: "expected a timestamp line (Unix seconds, Unix milliseconds or RFC 3339, optionally after \"# SCRAPE \" and followed by a target name) before the first snapshot"}
			}
		} else {
			chunk = append(chunk, b[off:next]...)
		}
		off = next
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, &ImportError{File: name, Offset: -1, Msg: "no snapshot found"}
	}
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return out[order[i]].Time.Before(out[order[j]].Time) })
	// A target's second snapshot at one time: the first in the file wins,
	// as for samples.
	kept := make([]model.Snapshot, 0, len(out))
	seen := map[string]int{} // target -> index in out of its newest kept
	dups := 0
	for _, i := range order {
		sn := out[i]
		if k, ok := seen[sn.Target]; ok && out[k].Time.Equal(sn.Time) {
			if dups++; opts.Warn != nil && dups <= MaxDuplicateWarnings {
				opts.Warn(&ImportError{File: name, Line: outLines[i], Offset: -1,
					Msg: fmt.Sprintf("duplicate snapshot of %s at %s: kept the first (line %d)", safetext.Terminal(sn.Target), sn.Time.UTC().Format(time.RFC3339Nano), outLines[k])})
			}
			continue
		}
		seen[sn.Target] = i
		kept = append(kept, sn)
	}
	if dups > MaxDuplicateWarnings && opts.Warn != nil {
		opts.Warn(&ImportError{File: name, Offset: -1, Msg: fmt.Sprintf("%d duplicate snapshots dropped in all", dups)})
	}
	return kept, nil
}
