package expo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/retrytop/retrytop/internal/safetext"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/retrytop/retrytop/model"
)

// Parser turns one scraped body into typed families.
//
// target names the source in errors; contentType is the response's
// Content-Type header. filter selects families by name (nil keeps all):
// counter families are named as exposed, with _total; histogram and
// summary families by their base name, without _bucket, _count or _sum.
// filter may also be asked about other names (a sample name with its
// suffix, a name with _total added) and must be cheap, pure and safe for
// concurrent use: ExpfmtParser keeps a target's answers across parses
// while filter is the same func value. Apart from errors in lines of families the filter
// drops, a filtered result must equal the unfiltered one restricted to the
// selected families (TestParserFilterDifferential checks this). Families
// are sorted by name, Help is sanitised, label values are kept as exposed
// (they are identity; sanitise them for display). Parse must not retain
// body.
//
// Errors name the target and, where known, the line (see ParseError).
type Parser interface {
	Parse(target string, body []byte, contentType string, filter func(name string) bool) ([]model.Family, error)
}

// ParseError is a malformed exposition.
type ParseError struct {
	Target string
	// Line is the 1-based line of the body as served; 0 when the format
	// has no lines (protobuf) or the error has no position.
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("target %q: %s", e.Target, e.Detail())
}

// Detail is the error without the target: its line, where known, and
// what is wrong, for a line that names the target already (its status).
func (e *ParseError) Detail() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// ExpfmtParser parses with prometheus/common/expfmt: the Prometheus text
// format (0.0.4, with UTF-8 quoted names), OpenMetrics 1.0 and 0.0.1, and
// delimited protobuf. An unknown or missing content type is read as the
// text format. Metric and label names may be any UTF-8. Gauge histograms
// become model.Histogram; native histograms (protobuf only) are read
// through their classic buckets.
//
// With a filter, lines of families the filter cannot want are dropped
// before expfmt sees them, so the cost of the parse follows the selected
// families rather than the whole body. Lines whose family cannot be told
// cheaply are kept, and so are all OpenMetrics lines that are not samples
// or descriptors, so errors still surface. A malformed line of a dropped
// family is not reported.
//
// OpenMetrics is parsed by expfmt's ABNF-based parser, which is slow: about
// 20 µs and 20 KB of garbage per byte on ordinary lines, and worse than
// quadratic in the length of a line (a 2 KB line takes seconds). So an
// OpenMetrics body, after filtering, is refused with an error when it is
// larger than MaxOpenMetricsBytes or has a line longer than
// MaxOpenMetricsLineBytes, rather than let one target burn seconds of CPU
// per scrape. The Scraper asks for the text format first, so only servers
// that speak nothing else send OpenMetrics.
//
// The zero value is ready to use and safe for concurrent use.
type ExpfmtParser struct {
	// MaxOpenMetricsBytes caps an OpenMetrics body handed to expfmt
	// (0: DefaultMaxOpenMetricsBytes; negative: no cap).
	MaxOpenMetricsBytes int
	// MaxOpenMetricsLineBytes caps each of its lines (0:
	// DefaultMaxOpenMetricsLineBytes; negative: no cap).
	MaxOpenMetricsLineBytes int
	// Lines keeps each target's lines between parses, so a body that
	// repeats its previous lines is read without re-tokenising them
	// (nil: no cache; the fast path reads every line).
	Lines *LineCaches
}

// Defaults of ExpfmtParser's OpenMetrics caps. With both, expfmt spends at
// most about 2 s on a hostile body and about 0.15 s on an ordinary one
// (measured on the 2-core benchmark machine, see docs/performance.md).
const (
	DefaultMaxOpenMetricsBytes     = 8 << 10
	DefaultMaxOpenMetricsLineBytes = 256
)

type formatKind int

const (
	formatText formatKind = iota
	formatOpenMetrics
	formatProto
)

// Parse implements Parser.
func (p ExpfmtParser) Parse(target string, body []byte, contentType string, filter func(string) bool) ([]model.Family, error) {
	return p.parse(target, body, contentType, filter, nil)
}

// parse is Parse; rec, when not nil, records the fast path's value tokens
// (ParseValues).
func (p ExpfmtParser) parse(target string, body []byte, contentType string, filter func(string) bool, rec *valueRecorder) ([]model.Family, error) {
	if err := NotExposition(target, body, contentType); err != nil {
		return nil, err
	}
	format, kind := formatOf(contentType)

	if kind == formatText {
		// The fast path reads the target's lines with its line cache and,
		// with a filter, skips unwanted families itself, copying nothing;
		// what it does not take goes through the pre-filter below.
		cache := p.Lines.acquire(target, len(body))
		fams, ok := parseFastRec(body, filter, filter != nil, cache, rec)
		p.Lines.release(cache)
		if ok {
			return fams, nil
		}
	}

	in := body
	var lines []int32 // with selected, the original line of each line of in
	selected := filter != nil && kind != formatProto && int64(len(body)) <= maxSelectable
	if selected {
		sel := getSelection()
		defer putSelection(sel)
		sel.run(body, kind == formatOpenMetrics, filter)
		in, lines = sel.out, sel.lines
	}

	if kind == formatOpenMetrics {
		if line, msg := p.checkOpenMetrics(in); msg != "" {
			perr := &ParseError{Target: target, Line: line, Msg: msg}
			if selected && line > 0 {
				perr.Line = originalLine(perr.Line, lines, body)
			}
			return nil, perr
		}
	}

	if kind == formatText && selected {
		if fams, ok := fastText(in, filter); ok {
			return fams, nil
		}
	}
	var fams []*dto.MetricFamily
	var err error
	switch kind {
	case formatText:
		fams, err = parseText(in)
	case formatOpenMetrics, formatProto:
		fams, err = decodeAll(in, format)
	}
	if err != nil {
		perr := &ParseError{Target: target, Msg: err.Error()}
		var ep expfmt.ParseError
		if errors.As(err, &ep) {
			perr.Line, perr.Msg = ep.Line, ep.Msg
			if selected {
				perr.Line = originalLine(perr.Line, lines, body)
			}
		}
		if format == expfmt.FmtUnknown && contentType != "" {
			perr.Msg += fmt.Sprintf(" (content type %q read as text format)", contentType)
		}
		return nil, perr
	}
	return convertFamilies(fams, filter), nil
}

// notExposition refuses a body that is plainly something else: a web page
// or a JSON document answering 200 where metrics were expected. With a
// family filter its lines would be dropped unread and the target would
// count as up with 0 series; it is down, and says why. Only the first byte
// that is not white space is looked at, so a real exposition pays nothing,
// and a content type alone never refuses a body that parses (an unknown
// type is read as text, as before).
func NotExposition(target string, body []byte, contentType string) error {
	media, _, _ := strings.Cut(contentType, ";")
	media = strings.ToLower(strings.TrimSpace(media))
	if media == "application/vnd.google.protobuf" {
		return nil // binary: its first byte means nothing here
	}
	var first byte
	found := false
	start := 0 // where the first line that is not blank starts
	for i, c := range body {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			first, found = c, true
			break
		}
		if c == '\n' {
			start = i + 1
		}
	}
	var what string
	switch {
	case !found:
		return nil // empty: no series, said by the target
	case first == '<':
		what = "a web page"
	case first == '{' || first == '[':
		// A UTF-8 metric name may open a text exposition with '{': only a
		// body that does not claim to be one is judged by it.
		if media == "text/plain" || media == "application/openmetrics-text" {
			return nil
		}
		what = "a JSON document"
	default:
		line, ok := sampleStart(body[start:])
		if ok {
			return nil
		}
		// A plain-text page ("OK", "404 page not found") would pass a
		// family filter unread, as a web page would.
		n := 1 + bytes.Count(body[:start], []byte{'\n'})
		msg := fmt.Sprintf("not a Prometheus exposition: %q is neither a comment nor a sample", line[:min(len(line), 40)])
		if contentType != "" {
			msg += fmt.Sprintf(" (content type %q)", contentType)
		}
		return &ParseError{Target: target, Line: n, Msg: msg}
	}
	msg := fmt.Sprintf("not a Prometheus exposition: it starts with '%c', %s", first, what)
	if contentType != "" {
		msg += fmt.Sprintf(" (content type %q)", contentType)
	}
	return &ParseError{Target: target, Line: 1, Msg: msg}
}

// sampleStart reports whether a text line (the first that is not blank)
// starts like the text format's: a comment, or a metric name followed by
// labels, or by a value that is a number. When it does not, it returns
// the line. A real exposition pays no allocation for it.
func sampleStart(b []byte) (string, bool) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	// The blanks NotExposition skips, no others: b keeps its first byte
	// that is not one.
	b = bytes.Trim(b, " \t\r")
	if len(b) == 0 {
		return "", false
	}
	if b[0] == '#' {
		return "", true
	}
	name := 0
	for name < len(b) && (b[name] == '_' || b[name] == ':' ||
		'a' <= b[name]|0x20 && b[name]|0x20 <= 'z' || name > 0 && '0' <= b[name] && b[name] <= '9') {
		name++
	}
	if name > 0 && name < len(b) {
		switch b[name] {
		case '{':
			return "", true
		case ' ', '\t':
			v := bytes.TrimLeft(b[name:], " \t")
			end := 0
			for end < len(v) && v[end] != ' ' && v[end] != '\t' {
				end++
			}
			if _, err := strconv.ParseFloat(string(v[:end]), 64); err == nil {
				return "", true
			}
		}
	}
	return string(b), false
}

// formats remembers the format of each content type seen (at most
// maxFormats of them): a target sends the same header every scrape, and
// expfmt's reading of it was a twentieth of a small scrape's CPU.
var (
	formats     sync.Map // string -> formatEntry
	formatCount atomic.Int32
)

const maxFormats = 64

type formatEntry struct {
	format expfmt.Format
	kind   formatKind
}

func formatOf(contentType string) (expfmt.Format, formatKind) {
	if e, ok := formats.Load(contentType); ok {
		fe := e.(formatEntry)
		return fe.format, fe.kind
	}
	fe := formatEntry{format: expfmt.ResponseFormat(http.Header{"Content-Type": {contentType}})}
	switch fe.format.FormatType() {
	case expfmt.TypeOpenMetrics:
		fe.kind = formatOpenMetrics
	case expfmt.TypeProtoDelim:
		fe.kind = formatProto
	}
	if formatCount.Add(1) <= maxFormats {
		formats.Store(contentType, fe)
	}
	return fe.format, fe.kind
}

func parseText(in []byte) ([]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	m, err := p.TextToMetricFamilies(bytes.NewReader(in))
	if err != nil {
		return nil, err
	}
	out := make([]*dto.MetricFamily, 0, len(m))
	for _, f := range m {
		if f.GetType() == dto.MetricType_HISTOGRAM {
			unmakeCounts(f, in)
		}
		out = append(out, f)
	}
	return out, nil
}

// unmakeCounts takes back the _count of 0 expfmt gives a histogram that
// had none once one of its buckets' counts is fractional (its
// normalizeHistogram turns an absent count into 0 then): absent made
// zero, where the fast path reads the +Inf bucket. An explicit _count 0
// reads the same, so the body is looked at: with no _count line of the
// family at all, the 0 was made. A family with a _count line for some
// label sets and not others keeps its zeros (both readings are possible).
func unmakeCounts(f *dto.MetricFamily, body []byte) {
	checked, given := false, false
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		if h == nil || h.SampleCount != nil || h.SampleCountFloat == nil || h.GetSampleCountFloat() != 0 {
			continue
		}
		if !checked {
			checked, given = true, hasLine(body, f.GetName()+"_count")
		}
		if !given {
			h.SampleCountFloat = nil
		}
	}
}

// hasLine reports whether body has a sample line of the series name:
// at a line's start (after blanks), followed by '{', a blank or the end,
// or quoted anywhere (a UTF-8 name; or a label's value, which only makes
// it keep a zero).
func hasLine(body []byte, name string) bool {
	if bytes.Contains(body, []byte(strconv.Quote(name))) {
		return true
	}
	bare := []byte(name)
	for i := 0; ; {
		k := bytes.Index(body[i:], bare)
		if k < 0 {
			return false
		}
		k += i
		end := k + len(name)
		j := k - 1
		for j >= 0 && (body[j] == ' ' || body[j] == '\t') {
			j--
		}
		atStart := j < 0 || body[j] == '\n'
		if atStart && (end == len(body) || body[end] == '{' || body[end] == ' ' || body[end] == '\t') {
			return true
		}
		i = k + 1
	}
}

func decodeAll(in []byte, format expfmt.Format) ([]*dto.MetricFamily, error) {
	// No escaping means names are validated as UTF-8, not as legacy names.
	dec := expfmt.NewDecoder(bytes.NewReader(in), format.WithEscapingScheme(pmodel.NoEscaping))
	var out []*dto.MetricFamily
	for {
		mf := new(dto.MetricFamily)
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, mf)
	}
}

// checkOpenMetrics applies the OpenMetrics caps: msg is "" or the reason,
// line the offending line (0 for the whole body).
func (p ExpfmtParser) checkOpenMetrics(in []byte) (line int, msg string) {
	limit, lineLimit := p.MaxOpenMetricsBytes, p.MaxOpenMetricsLineBytes
	if limit == 0 {
		limit = DefaultMaxOpenMetricsBytes
	}
	if lineLimit == 0 {
		lineLimit = DefaultMaxOpenMetricsLineBytes
	}
	const advice = "; serve the Prometheus text format or raise the ExpfmtParser caps"
	if limit > 0 && len(in) > limit {
		return 0, fmt.Sprintf("OpenMetrics body of %d bytes (after filtering) exceeds %s, the most given to expfmt's slow OpenMetrics parser%s",
			len(in), FormatBytes(int64(limit)), advice)
	}
	if lineLimit > 0 {
		for n, rest := 1, in; len(rest) > 0; n++ {
			line := rest
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				line, rest = rest[:i], rest[i+1:]
			} else {
				rest = nil
			}
			if len(line) > lineLimit {
				return n, fmt.Sprintf("OpenMetrics line of %d bytes exceeds %d, the longest given to expfmt's slow OpenMetrics parser%s",
					len(line), lineLimit, advice)
			}
		}
	}
	return 0, ""
}

// originalLine maps a line number of the filtered body back to the body as
// served. Lines past the filtered body (an error at its end) count on from
// the end of the original.
func originalLine(n int, lines []int32, body []byte) int {
	if n >= 1 && n <= len(lines) {
		return int(lines[n-1])
	}
	total := bytes.Count(body, []byte{'\n'})
	if len(body) > 0 && body[len(body)-1] != '\n' {
		total++
	}
	if n > len(lines) {
		return total + n - len(lines)
	}
	return n
}

// convertFamilies turns expfmt's families into model families, keeping only
// those filter selects, sorted by name.
func convertFamilies(fams []*dto.MetricFamily, filter func(string) bool) []model.Family {
	out := make([]model.Family, 0, len(fams))
	for _, mf := range fams {
		name := mf.GetName()
		if filter != nil && !filter(name) {
			continue
		}
		f := model.Family{Name: name, Help: safetext.Terminal(mf.GetHelp())}
		metrics := mf.GetMetric()
		f.Samples = make([]model.Sample, 0, len(metrics))
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			f.Type = model.Counter
		case dto.MetricType_GAUGE:
			f.Type = model.Gauge
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			f.Type = model.Histogram
		case dto.MetricType_SUMMARY:
			f.Type = model.Summary
		default:
			f.Type = model.Untyped
		}
		for _, m := range metrics {
			s := model.Sample{Labels: convertLabels(m.GetLabel()), TimestampMs: m.GetTimestampMs()}
			switch f.Type {
			case model.Counter:
				s.Value = m.GetCounter().GetValue()
				s.CreatedMs = createdMs(m.GetCounter().GetCreatedTimestamp())
			case model.Gauge:
				s.Value = m.GetGauge().GetValue()
			case model.Untyped:
				s.Value = m.GetUntyped().GetValue()
			case model.Histogram:
				convertHistogram(&s, m.GetHistogram())
				if mf.GetType() == dto.MetricType_HISTOGRAM {
					s.CreatedMs = createdMs(m.GetHistogram().GetCreatedTimestamp())
				}
			case model.Summary:
				convertSummary(&s, m.GetSummary())
				s.CreatedMs = createdMs(m.GetSummary().GetCreatedTimestamp())
			}
			f.Samples = append(f.Samples, s)
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// createdMs is a created timestamp in Unix milliseconds, 0 when absent or
// not after the epoch.
func createdMs(ts *timestamppb.Timestamp) int64 {
	if ts == nil || ts.CheckValid() != nil {
		return 0
	}
	return max(ts.AsTime().UnixMilli(), 0)
}

func convertLabels(lps []*dto.LabelPair) model.Labels {
	if len(lps) == 0 {
		return nil
	}
	ls := make(model.Labels, len(lps))
	sorted := true
	for i, lp := range lps {
		ls[i] = model.Label{Name: lp.GetName(), Value: lp.GetValue()}
		if i > 0 && ls[i].Name < ls[i-1].Name {
			sorted = false
		}
	}
	if !sorted {
		ls.Sort()
	}
	return ls
}

// convertHistogram fills a classic histogram from expfmt's.
func convertHistogram(s *model.Sample, h *dto.Histogram) {
	if h == nil {
		h = &dto.Histogram{}
	}
	bs := h.GetBucket()
	buckets := make([]model.Bucket, 0, len(bs)+1)
	for _, b := range bs {
		c := b.GetCumulativeCountFloat()
		if b.CumulativeCount != nil {
			c = float64(b.GetCumulativeCount())
		}
		buckets = append(buckets, model.Bucket{UpperBound: b.GetUpperBound(), Count: c})
	}
	var count float64
	switch {
	case h.SampleCountFloat != nil:
		count = h.GetSampleCountFloat()
	case h.SampleCount != nil:
		count = float64(h.GetSampleCount())
	}
	finishHistogram(s, buckets, count, h.SampleCount != nil || h.SampleCountFloat != nil, h.GetSampleSum(), h.SampleSum != nil)
}

// finishHistogram fills a classic histogram: cumulative buckets sorted by
// upper bound and ending in +Inf. A missing _count is the +Inf bucket (they
// are equal by definition); a missing _sum is NaN, which the store keeps as
// absent, never as zero. buckets is used in place.
func finishHistogram(s *model.Sample, buckets []model.Bucket, count float64, countKnown bool, sum float64, sumKnown bool) {
	s.Buckets = buckets
	// slices' stable sort is sort.SliceStable's algorithm without its
	// reflection (an allocation per call): the same order, NaN included.
	// Buckets come sorted as a rule; without NaN, sorted pairs mean a
	// sorted slice, which a stable sort leaves as it is.
	if !bucketsSorted(s.Buckets) {
		slices.SortStableFunc(s.Buckets, func(a, b model.Bucket) int { return lessInt(a.UpperBound < b.UpperBound, b.UpperBound < a.UpperBound) })
	}
	s.Count = count
	if n := len(s.Buckets); n == 0 || !math.IsInf(s.Buckets[n-1].UpperBound, +1) {
		if countKnown || n > 0 {
			inf := s.Count
			if !countKnown {
				inf = s.Buckets[n-1].Count
			}
			s.Buckets = append(s.Buckets, model.Bucket{UpperBound: math.Inf(+1), Count: inf})
		}
	}
	if s.Buckets == nil {
		s.Buckets = []model.Bucket{}
	}
	if !countKnown {
		if n := len(s.Buckets); n > 0 {
			s.Count = s.Buckets[n-1].Count
		} else {
			s.Count = math.NaN()
		}
	}
	s.Sum = math.NaN()
	if sumKnown {
		s.Sum = sum
	}
}

// convertSummary fills a summary from expfmt's.
func convertSummary(s *model.Sample, sm *dto.Summary) {
	qs := sm.GetQuantile()
	quantiles := make([]model.QuantileValue, 0, len(qs))
	for _, q := range qs {
		quantiles = append(quantiles, model.QuantileValue{Quantile: q.GetQuantile(), Value: q.GetValue()})
	}
	finishSummary(s, quantiles, float64(sm.GetSampleCount()), sm != nil && sm.SampleCount != nil, sm.GetSampleSum(), sm != nil && sm.SampleSum != nil)
}

// bucketsSorted reports buckets in order of their bounds, none NaN.
func bucketsSorted(bs []model.Bucket) bool {
	for i := range bs {
		if bs[i].UpperBound != bs[i].UpperBound || i > 0 && bs[i].UpperBound < bs[i-1].UpperBound {
			return false
		}
	}
	return true
}

// lessInt is a comparison's result from the less function both ways.
func lessInt(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

// finishSummary fills a summary: quantiles sorted, missing _count and _sum
// as NaN (absent). quantiles is used in place.
func finishSummary(s *model.Sample, quantiles []model.QuantileValue, count float64, countKnown bool, sum float64, sumKnown bool) {
	if quantiles == nil {
		quantiles = []model.QuantileValue{}
	}
	s.Quantiles = quantiles
	slices.SortStableFunc(s.Quantiles, func(a, b model.QuantileValue) int { return lessInt(a.Quantile < b.Quantile, b.Quantile < a.Quantile) })
	s.Count, s.Sum = math.NaN(), math.NaN()
	if countKnown {
		s.Count = count
	}
	if sumKnown {
		s.Sum = sum
	}
}

// FinishHistogram fills s as the parsers fill a classic histogram from its
// parts (buckets in any order, a missing +Inf bucket, _count or _sum), so
// that an importer reassembling flat series yields the very sample a scrape
// of the same text would.
func FinishHistogram(s *model.Sample, buckets []model.Bucket, count float64, countKnown bool, sum float64, sumKnown bool) {
	finishHistogram(s, buckets, count, countKnown, sum, sumKnown)
}

// FinishSummary is FinishHistogram for a summary.
func FinishSummary(s *model.Sample, quantiles []model.QuantileValue, count float64, countKnown bool, sum float64, sumKnown bool) {
	finishSummary(s, quantiles, count, countKnown, sum, sumKnown)
}

// FormatBytes writes a byte count for an error message: whole MiB or KiB
// when it divides evenly, else MiB to one decimal from 1 MiB, else bytes.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ParseCost is what parsing a body is taken to cost on top of the body,
// per byte of body, at least: the families, labels and strings a parse
// allocates (measured 1.1-1.7 bytes per byte for the text fast path and
// expfmt on the dialect fixtures; 2 leaves room).
const ParseCost = 2

// ParseBytesPerSeries is what parsing one series a parse keeps is taken
// to cost: the heap right after parsing a body of 1,000,000 short series
// measured 250-500 bytes a series (the families, the target's line
// cache, garbage not yet collected), however short the lines; per byte
// of body that is up to 15 bytes, so bodies of many short series are
// budgeted by their series, not their bytes.
const ParseBytesPerSeries = 512
