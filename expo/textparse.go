package expo

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/retrytop/retrytop/internal/safetext"

	"github.com/retrytop/retrytop/model"
)

// fastText parses the common shape of the Prometheus text format (0.0.4)
// straight into model families, about ten times faster than expfmt and
// with a fraction of its garbage: expfmt builds a protobuf message per
// sample, which for a dashboard scraping ten targets a second was most of
// its idle CPU (docs/performance.md).
//
// It is a fast path, not a second grammar: it follows expfmt's text parser
// decision for decision (family lookup with _count/_sum/_bucket suffixes,
// histogram and summary series grouped by their labels, le and quantile
// handling, duplicate-label and reserved-name checks), and whenever a line
// is outside the shape it knows — quoted UTF-8 names, gauge histograms,
// anything malformed — it gives up (ok false) and the caller parses the
// body with expfmt, which either accepts it or produces the error with its
// line. So errors always come from expfmt, and for every body the fast
// path accepts, its result equals expfmt's converted one
// (TestFastTextMatchesExpfmt and FuzzFastText check this).
func fastText(body []byte, filter func(string) bool) (fams []model.Family, ok bool) {
	return parseFast(body, filter, false, nil)
}

// fastTextSelect is fastText that does not read the lines of families
// filter cannot want: it decides once per group of names (a name with its
// family suffixes stripped, as the line pre-filter of select.go groups
// them) from the first name of the group it meets, and skips the group's
// lines after finding their name. Its result is the pre-filter's followed
// by fastText: errors in skipped lines go unreported, as there. When a
// later line wants a group whose earlier lines were skipped (the filter
// wants foo_count, the group began with foo), the skipped lines could
// have changed how the wanted ones parse, so it gives up (ok false) and
// the caller takes the pre-filter's path.
func fastTextSelect(body []byte, filter func(string) bool) (fams []model.Family, ok bool) {
	return parseFast(body, filter, true, nil)
}

// parseFast is fastText (skip false) or fastTextSelect (skip true); cache,
// when not nil, is the line cache of the target the body came from.
func parseFast(body []byte, filter func(string) bool, skip bool, cache *lineCache) (fams []model.Family, ok bool) {
	return parseFastRec(body, filter, skip, cache, nil)
}

// parseFastRec is parseFast; rec, when not nil, records where each value
// and timestamp token went (ValueMap).
func parseFastRec(body []byte, filter func(string) bool, skip bool, cache *lineCache, rec *valueRecorder) (fams []model.Family, ok bool) {
	// A line cut off by the end of the body is an error for expfmt unless
	// it is only blanks.
	if i := bytes.LastIndexByte(body, '\n'); len(bytes.Trim(body[i+1:], " \t")) > 0 {
		return nil, false
	}
	p := getTextParser()
	defer p.release()
	if skip && filter != nil {
		p.sel = filter
		p.dec = &p.ownDec
		if cache != nil && !cache.sel.tooMany {
			p.dec = &cache.sel
		}
		p.dec.use(filter)
		if p.dec.tooMany {
			p.dec = &p.ownDec // this parse's own, as for a body without a cache
			p.dec.use(filter)
		}
	}
	p.cache = cache
	p.rec = rec
	for rest := body; len(rest) > 0; p.lineNo++ {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break // trailing blanks, checked above
		}
		p.lineOff = len(body) - len(rest)
		if !p.line(rest[:i]) {
			return nil, false
		}
		rest = rest[i+1:]
	}
	if p.conflict {
		return nil, false
	}
	if cache != nil {
		cache.truncate(p.lineNo)
	}
	return p.families(filter), true
}

// keyBytes views a line cache's series key (an immutable string) as bytes
// for the parser's key comparisons; the view is never written.
func keyBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// Family types of the fast path; typeUnset until a TYPE line or the first
// sample fixes it (the first sample makes it untyped, as in expfmt).
const (
	typeUnset = iota
	typeCounter
	typeGauge
	typeUntyped
	typeHistogram
	typeSummary
)

type textFamily struct {
	name    string
	help    string
	typ     int
	samples []textSample
	// series groups histogram and summary lines by their labels (without
	// le or quantile), keyed by the labels' bytes.
	series map[string]int
	out    bool // left out of the result (families)
	room   int  // bytes of room kept while in textParser.spare
	// bucketsPer is the most buckets a series of the family had at the
	// parse before: the room its first histogram series is given
	// (bucketRoom).
	bucketsPer int
}

type textSample struct {
	labels model.Labels
	value  float64
	tsMs   int64

	buckets              []model.Bucket
	quantiles            []model.QuantileValue
	count, sum           float64
	countKnown, sumKnown bool
}

type textParser struct {
	byName map[string]*textFamily
	order  []*textFamily
	// spare holds the families of earlier parses by name, emptied, with
	// their slices' room: a target's next scrape fills each again without
	// growing a slice (spareSamples counts their samples' room, bounded
	// by maxSpareSamples).
	spare        map[string]*textFamily
	spareSamples int
	spareBytes   int // the spare families' room in bytes (textFamily.room)
	idleBytes    int // what the parser kept when it went idle (idleParsers)

	// strings interns names and label values across parses: a target
	// exposes the same ones every scrape, so after the first scrape
	// parsing allocates no strings. Bounded by maxInternBytes, which
	// stringBytes counts against with the table's own bytes per entry.
	strings     map[string]string
	stringBytes int

	// bucketArena is the parse's room for histogram buckets, handed out a
	// series at a time (bucketRoom): the result keeps it, so families
	// need not copy the buckets out. bucketHint is the last parse's use.
	bucketArena            []model.Bucket
	bucketUsed, bucketHint int

	// scratch, reused across lines
	pairs []rawPair
	key   []byte
	unesc []byte

	// cur is the family of the previous line: lines of a family come
	// together, so most lines find theirs without a map lookup.
	cur *textFamily
	// suffixed counts the families named with a _count, _sum or _bucket
	// suffix; while there are none, a name's base is its only family.
	suffixed int
	// The histogram or summary series of the previous line, by key.
	lastGroup    *textFamily
	lastGroupIdx int
	lastKey      []byte
	lastKeyRef   []byte // lastKey's slice in the line cache, when it came from there

	// sel, when set, is fastTextSelect's filter; dec holds its decisions
	// on names (the line cache's, kept across parses, or ownDec), gstate
	// the parse's state of each group dec numbers; lastName and lastWanted
	// the previous line's. prevLabels is the label set built last
	// (labelSet).
	prevLabels model.Labels

	sel        func(string) bool
	dec        *selDecisions
	ownDec     selDecisions
	gstate     []groupState
	lastName   []byte
	totalBuf   []byte // scratch: a name with _total
	lastWanted bool
	recent     [4]recentName // the last names decided, round robin
	recentNext int
	conflict   bool // a group became wanted after lines of it were skipped
	nonASCII   bool // a label value of the line has a byte >= 0x80

	// cache is the line cache of the body's target (nil: none); lineNo
	// is the 0-based line of the body being read.
	cache  *lineCache
	lineNo int
	// lineOff is where the line being read starts in the body; rec, when
	// not nil, records the value tokens' destinations (ValueMap).
	lineOff int
	rec     *valueRecorder
	// The sample line read last: its line, its cache entry (nil: none),
	// whether fastTextSelect skipped it, else its family and suffix.
	prevLine    int
	prevEntry   *lineEntry
	prevSkipped bool
	prevFam     *textFamily
	prevSfx     string
}

// recentName is a name fastTextSelect decided on, and its decision.
type recentName struct {
	name        []byte
	wanted, set bool
}

// groupState is fastTextSelect's decision on one group of names in one
// parse.
type groupState struct {
	wanted, skipped bool
}

// nameDecision is fastTextSelect's reading of one name: its group's
// number (the group of the name with its family suffixes stripped) and
// whether the filter wants the name itself (the name, one of its strips,
// or either with _total). A function of the filter and the name alone.
type nameDecision struct {
	group  int32
	wanted bool
	// exact is the filter's answer on the name alone, asked when the
	// name is a family's (families): 0 not asked yet, 1 no, 2 yes.
	exact uint8
}

// selDecisions holds a filter's decisions on names: a target exposes the
// same names every scrape, so the line cache keeps them across parses
// (while the filter is the same) instead of asking the filter and
// stripping suffixes again each parse.
type selDecisions struct {
	filter func(string) bool // the filter decided with; kept, so its address is not reused
	names  map[string]nameDecision
	roots  map[string]int32 // group numbers by root name
	// tooMany: a line cache's decisions passed maxSelNames once; the
	// target's parses then decide on their own, as without a cache.
	tooMany bool
}

// maxSelNames bounds a line cache's kept decisions. A target with more
// names parses with decisions of its own, dropped after each parse:
// starting the kept ones over every parse saved nothing and counted the
// names against the line caches' bound anew each time, so that every
// target's cache started over every few parses (20,000 names: 4.5 MB a
// parse; TestSelDecisionsTooManyNames).
const maxSelNames = 1 << 14

// funcID is the closure a func value points to: two values with the same
// one run the same code on the same captured variables.
func funcID(f func(string) bool) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&f)) }

// SameFilter reports whether a and b are the same filter value (both nil,
// or the same closure): a parse with one is a parse with the other. Go
// cannot compare funcs; this compares what they point to.
func SameFilter(a, b func(string) bool) bool { return funcID(a) == funcID(b) }

// use readies d for filter: emptied when it holds another filter's
// decisions; when it holds too many, emptied for good and marked tooMany.
func (d *selDecisions) use(filter func(string) bool) {
	if len(d.names) > maxSelNames {
		d.names, d.roots, d.filter, d.tooMany = nil, nil, nil, true
		return
	}
	if d.names == nil {
		d.names, d.roots = map[string]nameDecision{}, map[string]int32{}
	}
	if d.filter == nil || funcID(d.filter) != funcID(filter) {
		clear(d.names)
		clear(d.roots)
		d.filter = filter
	}
}

// idleParsers keeps up to maxIdleParsers parsers (their interned strings
// and their families' room) between parses. Not a sync.Pool: a GC
// empties a pool, and scrapes a second apart have GCs between them, so
// every parse would start cold, allocating what the last one had.
var (
	idleParsersMu sync.Mutex
	idleParsers   []*textParser
)

// maxIdleDecisions bounds the decisions of its own an idle parser keeps
// room for (tens of KB): a larger parse's maps go with it.
const maxIdleDecisions = 1 << 10

// maxIdleParsers bounds the idle parsers: parses running at once beyond
// it make parsers that go when done.
const maxIdleParsers = 4

// idleParserShare is the part of the process' memory limit (512 MiB
// without one, the command's default) the idle parsers but the largest
// may keep together: 8 MiB at 512 MiB, 4 MiB at 256 MiB. The largest is
// kept whatever its size (about 8 MB at most: maxInternBytes and the
// room of maxSpareSamples), so a large target's scrapes never start
// cold; the others only within the share, so a fleet of large targets
// parsed at once does not keep four of them, and small ones keep theirs.
const idleParserShare = 64

// idleParserBytes is the idle parsers' share of the memory limit.
func idleParserBytes() int {
	return int(memoryLimit() / idleParserShare)
}

// memoryLimit is the process' memory limit, 512 MiB without one.
func memoryLimit() int64 {
	// debug.SetMemoryLimit(-1) reads the limit without changing it.
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		return l
	}
	return 512 << 20
}

func getTextParser() *textParser {
	idleParsersMu.Lock()
	if n := len(idleParsers); n > 0 {
		p := idleParsers[n-1]
		idleParsers[n-1] = nil
		idleParsers = idleParsers[:n-1]
		idleParsersMu.Unlock()
		return p
	}
	idleParsersMu.Unlock()
	return newTextParser()
}

func newTextParser() *textParser {
	return &textParser{byName: map[string]*textFamily{}, spare: map[string]*textFamily{}, strings: map[string]string{}, prevLine: -2}
}

// maxInternBytes bounds a parser's interned strings, each counted with
// internEntryBytes; past it the table starts over.
const maxInternBytes = 4 << 20

// internEntryBytes is what an entry of the intern table costs besides its
// string: a map slot of two string headers, its control byte and the
// table's slack. Without it, a target of a million short label values
// kept some 40 MB of table under a 4 MiB bound.
const internEntryBytes = 40

// maxSpareSamples bounds the samples' room a parser keeps for reuse
// (about 3.7 MB of textSample; a histogram's or summary's series is one
// sample, so a 100,000-series Envoy body has some 25,000).
const maxSpareSamples = 1 << 15

func (p *textParser) release() {
	// Drop every reference into the body: Parse must not retain it.
	clear(p.pairs[:cap(p.pairs)])
	p.pairs = p.pairs[:0]
	clear(p.byName)
	for _, f := range p.order {
		if p.spareSamples+cap(f.samples) > maxSpareSamples {
			continue
		}
		if old := p.spare[f.name]; old != nil {
			p.spareSamples -= cap(old.samples)
			p.spareBytes -= old.room
		}
		f.room = cap(f.samples) * int(unsafe.Sizeof(textSample{}))
		f.bucketsPer = 0
		for i := range f.samples[:cap(f.samples)] {
			ts := &f.samples[:cap(f.samples)][i]
			f.bucketsPer = max(f.bucketsPer, len(ts.buckets))
			// The labels are the line cache's and the buckets the
			// result's: neither to be kept alive nor written again.
			ts.labels, ts.buckets = nil, nil
			f.room += 16 * cap(ts.quantiles)
		}
		f.help, f.typ, f.samples = "", typeUnset, f.samples[:0]
		clear(f.series)
		p.spare[f.name] = f
		p.spareSamples += cap(f.samples)
		p.spareBytes += f.room
	}
	clear(p.order)
	p.order = p.order[:0]
	p.bucketArena, p.bucketHint, p.bucketUsed = nil, p.bucketUsed, 0
	p.cur, p.suffixed, p.lastGroup, p.lastKey, p.prevLabels = nil, 0, nil, p.lastKey[:0], nil
	p.sel, p.lastName, p.lastWanted, p.conflict = nil, p.lastName[:0], false, false
	p.cache, p.lineNo, p.lastKeyRef, p.lineOff, p.rec = nil, 0, nil, 0, nil
	p.prevLine, p.prevEntry, p.prevSkipped, p.prevFam, p.prevSfx = -2, nil, false, nil, ""
	for k := range p.recent {
		p.recent[k].set = false
	}
	p.recentNext = 0
	clear(p.gstate)
	p.gstate = p.gstate[:0]
	p.dec = nil
	if p.ownDec.filter != nil {
		p.ownDec.filter = nil // a parse's own: the next starts afresh
		if len(p.ownDec.names) > maxIdleDecisions {
			// A cleared map keeps its table, which idleBytes does not count.
			p.ownDec.names, p.ownDec.roots = nil, nil
		} else {
			clear(p.ownDec.names)
			clear(p.ownDec.roots)
		}
	}
	p.idleBytes = p.spareBytes + p.stringBytes
	share := idleParserBytes()
	idleParsersMu.Lock()
	sum, largest := p.idleBytes, p.idleBytes
	for _, q := range idleParsers {
		sum, largest = sum+q.idleBytes, max(largest, q.idleBytes)
	}
	if len(idleParsers) < maxIdleParsers && sum-largest <= share {
		idleParsers = append(idleParsers, p)
	}
	idleParsersMu.Unlock()
}

// str returns b as a string, interned.
func (p *textParser) str(b []byte) string {
	if s, ok := p.strings[string(b)]; ok {
		return s
	}
	if p.stringBytes+len(b)+internEntryBytes > maxInternBytes {
		p.strings = map[string]string{} // not clear: a cleared map keeps its table
		p.stringBytes = 0
	}
	s := string(b)
	p.strings[s] = s
	p.stringBytes += len(s) + internEntryBytes
	return s
}

// rawPair is a label as it appears on the line; value is unescaped into
// textParser.unesc when it had escapes.
type rawPair struct {
	name, value []byte
}

// Character classes of the text format, one table lookup per byte.
const (
	cBlank = 1 << iota
	cNameStart
	cLabelName // also a digit
	cMetricName
	cValueEnd // ends a quoted label value: '"', '\\' or a byte >= 0x80
	cNotFloat // hex-float and underscore forms, which expfmt refuses: p P _ x X
)

var charClass = func() (t [256]uint8) {
	t[' '], t['\t'] = cBlank, cBlank
	for c := 0; c < 256; c++ {
		b := byte(c)
		if (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || b == '_' {
			t[c] |= cNameStart | cLabelName | cMetricName
		}
		if b >= '0' && b <= '9' {
			t[c] |= cLabelName | cMetricName
		}
		if c >= 0x80 {
			t[c] |= cValueEnd
		}
	}
	t[':'] |= cMetricName
	for _, c := range "pP_xX" {
		t[c] |= cNotFloat
	}
	t['"'] |= cValueEnd
	t['\\'] |= cValueEnd
	return t
}()

func isBlank(b byte) bool { return charClass[b]&cBlank != 0 }

func skipBlanks(l []byte, i int) int {
	for i < len(l) && isBlank(l[i]) {
		i++
	}
	return i
}

func isNameStart(b byte) bool { return charClass[b]&cNameStart != 0 }

func isLabelNameChar(b byte) bool { return charClass[b]&cLabelName != 0 }

func isMetricNameChar(b byte) bool { return charClass[b]&cMetricName != 0 }

// metricName reads an unquoted metric name at l[i:]; n is its end. A quote
// anywhere in the name is expfmt's UTF-8 quoting: not for the fast path.
func metricName(l []byte, i int) (n int, ok bool) {
	if i >= len(l) || !(isNameStart(l[i]) || l[i] == ':') {
		return i, false
	}
	n = i + 1
	for n < len(l) && isMetricNameChar(l[n]) {
		n++
	}
	if n < len(l) && l[n] == '"' {
		return n, false
	}
	return n, true
}

func (p *textParser) line(l []byte) bool {
	i := skipBlanks(l, 0)
	if i == len(l) {
		return true
	}
	if l[i] == '#' {
		if p.sel != nil && !p.wants(l, i) {
			return true
		}
		return p.comment(l, i+1)
	}
	return p.sample(l, i)
}

// wants reports whether fastTextSelect reads the line at l[i:]: lines
// whose name it cannot read, and comments other than HELP and TYPE, are
// read (the parser judges them); the others by their group.
func (p *textParser) wants(l []byte, i int) bool {
	if l[i] == '#' {
		j := skipBlanks(l, i+1)
		k := j
		for k < len(l) && !isBlank(l[k]) {
			k++
		}
		if kw := string(l[j:k]); kw != "HELP" && kw != "TYPE" {
			return true
		}
		i = skipBlanks(l, k)
	}
	n, ok := metricName(l, i)
	if !ok || n == i || (n < len(l) && !isBlank(l[n]) && l[n] != '{') {
		return true // not a name the pre-filter reads alike: the parser judges the line
	}
	return p.wantName(l[i:n])
}

// wantName is wants for a line whose name it could read.
func (p *textParser) wantName(name []byte) bool {
	if string(name) == string(p.lastName) {
		return p.lastWanted
	}
	// A histogram's lines take turns between a few names: the decision on
	// a name seen lately stands (a group only ever turns wanted, and one
	// turning wanted after being skipped ends the parse as a conflict).
	for k := range p.recent {
		if r := &p.recent[k]; r.set && string(r.name) == string(name) {
			p.lastName = append(p.lastName[:0], name...)
			p.lastWanted = r.wanted
			return r.wanted
		}
	}
	d := p.decide(name)
	for int(d.group) >= len(p.gstate) {
		p.gstate = append(p.gstate, groupState{})
	}
	g := &p.gstate[d.group]
	if !g.wanted && d.wanted {
		g.wanted = true
		if g.skipped {
			p.conflict = true
		}
	}
	if !g.wanted {
		g.skipped = true
	}
	p.lastName = append(p.lastName[:0], name...)
	p.lastWanted = g.wanted
	r := &p.recent[p.recentNext%len(p.recent)]
	r.name, r.wanted, r.set = append(r.name[:0], name...), g.wanted, true
	p.recentNext++
	return g.wanted
}

// decide returns the decision on name, from p.dec when made before.
func (p *textParser) decide(name []byte) nameDecision {
	d := p.dec
	if nd, ok := d.names[string(name)]; ok {
		return nd
	}
	root := name
	for {
		b := stripSuffixBytes(root)
		if len(b) == len(root) {
			break
		}
		root = b
	}
	nd := nameDecision{group: int32(len(d.roots))}
	if gi, ok := d.roots[string(root)]; ok {
		nd.group = gi
	} else {
		d.roots[string(root)] = nd.group
	}
	// As selection.group: the name, each of its strips, and each with
	// _total. Names interned: the filter's argument would otherwise be
	// a new string each time.
	for c := p.str(name); ; {
		p.totalBuf = append(append(p.totalBuf[:0], c...), "_total"...)
		if p.sel(c) || p.sel(p.str(p.totalBuf)) {
			nd.wanted = true
			break
		}
		b := stripSuffix(c)
		if b == c {
			break
		}
		c = b
	}
	d.names[string(name)] = nd
	if p.cache != nil && d == &p.cache.sel {
		// Counted with the line cache's entries, under the same bound.
		p.cache.charge(int64(len(name) + len(root) + 2*entryOverhead))
	}
	return nd
}

// wantsFamily is filter(name), from the kept decisions when they are
// filter's.
func (p *textParser) wantsFamily(name string, filter func(string) bool) bool {
	d := p.dec
	if d == nil || funcID(d.filter) != funcID(filter) {
		return filter(name)
	}
	nd, ok := d.names[name]
	if ok && nd.exact != 0 {
		return nd.exact == 2
	}
	want := filter(name)
	if ok { // a family's name is met on its lines first: no entry made here
		nd.exact = 1
		if want {
			nd.exact = 2
		}
		d.names[name] = nd
	}
	return want
}

// stripSuffixBytes is stripSuffix on bytes.
func stripSuffixBytes(name []byte) []byte {
	for _, suf := range familySuffixes {
		if len(name) > len(suf) && string(name[len(name)-len(suf):]) == suf {
			return name[:len(name)-len(suf)]
		}
	}
	return name
}

// lookup finds the family a name belongs to the way expfmt does: the exact
// name, else a summary's or histogram's base for _count/_sum/_bucket. suffix
// says which component the name is.
func (p *textParser) lookup(name []byte) (f *textFamily, suffix string) {
	if f = p.byName[string(name)]; f != nil {
		return f, ""
	}
	for _, sfx := range [...]string{"_count", "_sum", "_bucket"} {
		if !bytes.HasSuffix(name, []byte(sfx)) {
			continue
		}
		if b := p.byName[string(name[:len(name)-len(sfx)])]; b != nil &&
			(b.typ == typeHistogram || (b.typ == typeSummary && sfx != "_bucket")) {
			return b, sfx
		}
	}
	return nil, ""
}

func (p *textParser) family(name []byte) (*textFamily, string) {
	if c := p.cur; c != nil {
		if string(name) == c.name {
			return c, ""
		}
		// name is base + suffix of the current family: with no family
		// named with a suffix, lookup finds no exact match and then the
		// base, which is c.
		if n := len(c.name); p.suffixed == 0 && len(name) > n && string(name[:n]) == c.name &&
			(c.typ == typeHistogram || c.typ == typeSummary) {
			switch string(name[n:]) {
			case "_count":
				return c, "_count"
			case "_sum":
				return c, "_sum"
			case "_bucket":
				if c.typ == typeHistogram {
					return c, "_bucket"
				}
			}
		}
	}
	if f, sfx := p.lookup(name); f != nil {
		p.cur = f
		return f, sfx
	}
	f := p.spare[string(name)]
	if f != nil {
		delete(p.spare, f.name)
		p.spareSamples -= cap(f.samples)
		p.spareBytes -= f.room
	} else {
		f = &textFamily{name: p.str(name)}
	}
	p.byName[f.name] = f
	p.order = append(p.order, f)
	for _, sfx := range [...]string{"_count", "_sum", "_bucket"} {
		if bytes.HasSuffix(name, []byte(sfx)) {
			p.suffixed++
			break
		}
	}
	p.cur = f
	return f, ""
}

// comment reads a # line from l[i:] (after the '#').
func (p *textParser) comment(l []byte, i int) bool {
	i = skipBlanks(l, i)
	k := i
	for k < len(l) && !isBlank(l[k]) {
		k++
	}
	keyword := l[i:k]
	help := string(keyword) == "HELP"
	if (!help && string(keyword) != "TYPE") || k == len(l) {
		return true // a plain comment, or a keyword alone
	}
	i = skipBlanks(l, k)
	if i == len(l) {
		return true
	}
	n, ok := metricName(l, i)
	if !ok {
		return false
	}
	if n == len(l) {
		return true // a name alone is not an error
	}
	if !isBlank(l[n]) {
		return false
	}
	f, _ := p.family(l[i:n])
	i = skipBlanks(l, n)
	if i == len(l) {
		return true
	}
	text := l[i:]
	if help {
		// text is not empty, so neither is an earlier HELP's.
		if f.help != "" {
			return false
		}
		s, ok := unescapeHelp(text)
		if !ok {
			return false
		}
		f.help = p.str(s)
		return true
	}
	if f.typ != typeUnset {
		return false
	}
	switch string(text) {
	case "counter", "COUNTER":
		f.typ = typeCounter
	case "gauge", "GAUGE":
		f.typ = typeGauge
	case "untyped", "UNTYPED":
		f.typ = typeUntyped
	case "histogram", "HISTOGRAM":
		f.typ = typeHistogram
	case "summary", "SUMMARY":
		f.typ = typeSummary
	default:
		return false // other spellings and gauge histograms: expfmt decides
	}
	return true
}

// unescapeHelp undoes HELP escapes (\\, \n and \"); any other escape is
// expfmt's error to report.
func unescapeHelp(b []byte) ([]byte, bool) {
	if bytes.IndexByte(b, '\\') < 0 {
		return b, true
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i == len(b) {
			return nil, false
		}
		switch b[i] {
		case '\\', '"':
			out = append(out, b[i])
		case 'n':
			out = append(out, '\n')
		default:
			return nil, false
		}
	}
	return out, true
}

// sample reads a sample line starting at l[i].
func (p *textParser) sample(l []byte, i int) bool {
	// A line whose name and labels are those of the same line of the
	// target's previous body is read from the line cache: only its value
	// and timestamp are parsed.
	var e *lineEntry
	var n int
	if c := p.cache; c != nil && p.lineNo < len(c.lines) {
		if ce := &c.lines[p.lineNo]; ce.prefix != "" && len(l)-i >= len(ce.prefix) && string(l[i:i+len(ce.prefix)]) == ce.prefix {
			e, n = ce, i+len(ce.name)
		}
	}
	if e == nil {
		var ok bool
		if n, ok = metricName(l, i); !ok {
			return false
		}
	}
	prevE := p.prevEntry
	adjacent := p.prevLine == p.lineNo-1 && prevE != nil
	var f *textFamily
	var sfx string
	if e != nil && adjacent && e.name == prevE.name {
		// The name of the line before, both lines from the cache: its
		// decision and its family stand (nothing came between to change
		// them). Lines of one name share the name's string, so this is
		// mostly a pointer comparison.
		p.prevLine, p.prevEntry = p.lineNo, e
		if p.prevSkipped {
			if p.rec != nil {
				p.rec.skip(p.lineOff, len(l))
			}
			return true
		}
		f, sfx = p.prevFam, p.prevSfx
	} else {
		if p.sel != nil && (n == len(l) || isBlank(l[n]) || l[n] == '{') && !p.wantName(l[i:n]) {
			p.prevLine, p.prevEntry, p.prevSkipped = p.lineNo, e, true
			if p.rec != nil {
				p.rec.skip(p.lineOff, len(l))
			}
			return true // a family fastTextSelect skips (wants)
		}
		f, sfx = p.family(l[i:n])
		p.prevLine, p.prevEntry, p.prevSkipped, p.prevFam, p.prevSfx = p.lineNo, e, false, f, sfx
	}
	if f.typ == typeUnset {
		f.typ = typeUntyped
	}
	// The special labels of histograms and summaries.
	special := specialLabel[f.typ]
	if e != nil && e.special == special {
		return p.value(l, skipBlanks(l, i+len(e.prefix)), f, sfx, keyBytes(e.key), e.labels, true, e.specialVal, e.hasSpecial)
	}

	i0 := i
	i = skipBlanks(l, n)
	p.pairs = p.pairs[:0]
	p.unesc = p.unesc[:0]
	p.nonASCII = false
	if i < len(l) && l[i] == '{' {
		var ok bool
		if i, ok = p.labels(l, i+1); !ok {
			return false
		}
	} else if i == n && i < len(l) {
		return false // a name ended by something other than a blank or '{'
	}

	specialVal, hasSpecial := math.NaN(), false
	for _, pr := range p.pairs {
		if string(pr.name) == "__name__" || (p.nonASCII && !utf8.Valid(pr.value)) {
			return false
		}
		if special != "" && string(pr.name) == special {
			v, ok := parseValue(pr.value)
			if !ok {
				return false
			}
			specialVal, hasSpecial = v, true
		}
	}
	if hasDuplicateNames(p.pairs, special) {
		return false
	}
	grouped := f.typ == typeHistogram || f.typ == typeSummary
	if grouped {
		p.groupKey(special)
	}
	// Cached only when what follows cannot change how the name and labels
	// read: the prefix ends in '}' or a blank (i > n), never right after
	// the name, where a '{' would start labels.
	if c := p.cache; c != nil && i > n {
		var labels model.Labels
		var key string
		shared := false
		if grouped && adjacent && prevE.special == special && prevE.key == string(p.key) {
			labels, key, shared = prevE.labels, prevE.key, true // the series of the line before
		} else {
			labels = p.labelSet(special)
			if grouped {
				key = string(p.key)
			}
		}
		prefix := c.prefixOf(l[i0:i])
		name := prefix[:n-i0]
		if adjacent && prevE.name == name {
			name = prevE.name // shared, for the comparison above
		}
		p.prevEntry = c.put(p.lineNo, lineEntry{prefix: prefix, name: name, special: special,
			specialVal: specialVal, hasSpecial: hasSpecial, labels: labels, key: key}, shared)
		return p.value(l, i, f, sfx, keyBytes(key), labels, true, specialVal, hasSpecial)
	}
	return p.value(l, i, f, sfx, p.key, nil, false, specialVal, hasSpecial)
}

// specialLabel is the label a family type reads apart: le of a histogram
// series, quantile of a summary's.
var specialLabel = [...]string{typeHistogram: "le", typeSummary: "quantile", typeUntyped: ""}

// value reads the value and optional timestamp at l[i:] and adds the
// sample to f. For a histogram or summary line key is its series' key.
// When known, labels are the line's without the special label, sorted;
// otherwise they are built from p.pairs when needed.
func (p *textParser) value(l []byte, i int, f *textFamily, sfx string, key []byte, labels model.Labels, known bool, specialVal float64, hasSpecial bool) bool {
	// The value, then an optional timestamp, each ended by a blank or the
	// end of the line; nothing may follow the timestamp, not even a blank.
	v0 := i
	value, i, ok := valueAt(l, i)
	if !ok {
		return false
	}
	v1 := i
	var tsMs int64
	t0 := i
	hasTS := i < len(l)
	if hasTS {
		t0 = skipBlanks(l, i)
		if t0 == len(l) {
			return false // expfmt reads an empty timestamp
		}
		for _, c := range l[t0:] {
			if isBlank(c) {
				return false
			}
		}
		ts, err := strconv.ParseInt(string(l[t0:]), 10, 64)
		if err != nil {
			return false
		}
		tsMs = ts
	}

	switch f.typ {
	case typeHistogram, typeSummary:
		s := p.grouped(f, key, labels, known)
		if hasTS { // the newest timestamp of the series' lines wins
			s.tsMs = tsMs
		}
		if !addComponent(f, s, sfx, value, specialVal, hasSpecial) {
			return false
		}
		if p.rec != nil {
			field, conv, k := componentField(f, s, sfx, specialVal, hasSpecial)
			p.rec.token(p.lineOff+v0, p.lineOff+v1, f, p.lastGroupIdx, field, conv, k)
		}
	default:
		if !known {
			labels = p.labelSet("")
		} else if labels != nil {
			p.prevLabels = labels
		}
		f.samples = append(f.samples, textSample{labels: labels, value: value, tsMs: tsMs})
		if p.rec != nil {
			p.rec.token(p.lineOff+v0, p.lineOff+v1, f, len(f.samples)-1, fieldValue, convValue, 0)
		}
	}
	if hasTS && p.rec != nil {
		idx := len(f.samples) - 1
		if f.typ == typeHistogram || f.typ == typeSummary {
			idx = p.lastGroupIdx
		}
		p.rec.token(p.lineOff+t0, p.lineOff+len(l), f, idx, fieldTS, convTS, 0)
	}
	return true
}

// addComponent stores one line's value into a histogram or summary series
// as expfmt does: _count and _sum by suffix, else a bucket or quantile when
// the line had le or quantile, else nothing.
func addComponent(f *textFamily, s *textSample, sfx string, value, special float64, hasSpecial bool) bool {
	switch {
	case sfx == "_count":
		v, ok := countValue(f.typ, value)
		if !ok {
			return false
		}
		s.count, s.countKnown = v, true
	case sfx == "_sum":
		s.sum, s.sumKnown = value, true
	case !hasSpecial || math.IsNaN(special):
	case f.typ == typeHistogram:
		v, ok := bucketValue(value)
		if !ok {
			return false
		}
		s.buckets = append(s.buckets, model.Bucket{UpperBound: special, Count: v})
	default:
		s.quantiles = append(s.quantiles, model.QuantileValue{Quantile: special, Value: value})
	}
	return true
}

// countValue is a _count line's value as a histogram or summary series
// keeps it: expfmt stores a summary's count as an integer, and refuses a
// histogram's that is negative (ok false).
func countValue(typ int, value float64) (float64, bool) {
	if typ == typeSummary {
		value = float64(uint64(value))
	} else if value < 0 {
		return 0, false
	}
	return zeroPositive(value), true
}

// bucketValue is a bucket line's value as its histogram keeps it (a
// negative count refused).
func bucketValue(value float64) (float64, bool) {
	if value < 0 {
		return 0, false
	}
	return zeroPositive(value), true
}

// zeroPositive turns -0 into 0: expfmt stores counts as integers when they
// are whole, which loses the sign of zero.
func zeroPositive(v float64) float64 {
	if v == 0 {
		return 0
	}
	return v
}

// groupKey sorts p.pairs by name and builds the key of the line's
// histogram or summary series into p.key: its labels without the special
// one.
func (p *textParser) groupKey(special string) {
	// Insertion sort: a handful of labels, and sort.Slice allocates.
	for a := 1; a < len(p.pairs); a++ {
		for b := a; b > 0 && bytes.Compare(p.pairs[b].name, p.pairs[b-1].name) < 0; b-- {
			p.pairs[b], p.pairs[b-1] = p.pairs[b-1], p.pairs[b]
		}
	}
	p.key = p.key[:0]
	for _, pr := range p.pairs {
		if string(pr.name) == special {
			continue
		}
		p.key = append(p.key, pr.name...)
		p.key = append(p.key, 0)
		p.key = append(p.key, pr.value...)
		p.key = append(p.key, 0)
	}
}

// grouped returns the series of a histogram or summary family that key
// names, creating it on first sight with labels when known, else with
// labels built from p.pairs, which groupKey sorted.
func (p *textParser) grouped(f *textFamily, key []byte, labels model.Labels, known bool) *textSample {
	if f == p.lastGroup {
		// The series of the line before. A key from the line cache is
		// shared by the lines of one series: the same slice is the same key.
		if known && len(key) > 0 && len(key) == len(p.lastKeyRef) && &key[0] == &p.lastKeyRef[0] {
			return &f.samples[p.lastGroupIdx]
		}
		if string(key) == string(p.lastKey) {
			if known {
				p.lastKeyRef = key
			}
			return &f.samples[p.lastGroupIdx]
		}
	}
	p.lastKeyRef = nil
	if known {
		p.lastKeyRef = key
	}
	if f.series == nil {
		f.series = map[string]int{}
	}
	if i, ok := f.series[string(key)]; ok {
		p.lastGroup, p.lastGroupIdx, p.lastKey = f, i, append(p.lastKey[:0], key...)
		return &f.samples[i]
	}
	p.lastGroup, p.lastGroupIdx, p.lastKey = f, len(f.samples), append(p.lastKey[:0], key...)
	if known {
		// A cached key is a string of the line cache: the map keeps it
		// instead of a copy.
		f.series[unsafe.String(unsafe.SliceData(key), len(key))] = len(f.samples)
	} else {
		f.series[string(key)] = len(f.samples)
	}
	if !known {
		labels = p.labelSet(specialLabel[f.typ])
	}
	n := len(f.samples)
	var buckets []model.Bucket
	if f.typ == typeHistogram {
		// Series of a family usually share their buckets: room for as
		// many as the series before (the first: the family's widest at
		// the last parse), and +Inf. Not the widest for every series: a
		// body of one wide series among many narrow ones would then ask
		// for room quadratic in its size.
		k := f.bucketsPer
		if n > 0 {
			k = len(f.samples[n-1].buckets)
		}
		buckets = p.bucketRoom(k + 1)
	}
	if n < cap(f.samples) {
		// A sample of an earlier parse: its quantiles' room is reused
		// (families copies them out).
		f.samples = f.samples[:n+1]
		ts := &f.samples[n]
		*ts = textSample{labels: labels, buckets: buckets, quantiles: ts.quantiles[:0]}
		return ts
	}
	f.samples = append(f.samples, textSample{labels: labels, buckets: buckets})
	return &f.samples[n]
}

// bucketRoom returns room for k buckets from the parse's arena, capped at
// k: a series whose buckets outgrow it appends into memory of its own,
// never into the next series' room.
func (p *textParser) bucketRoom(k int) []model.Bucket {
	a := p.bucketArena
	if cap(a)-len(a) < k {
		// The first chunk as large as the last parse's use, later ones a
		// quarter of it: a steady target fills one chunk.
		size := max(k, 256, p.bucketHint/4)
		if p.bucketUsed == 0 {
			size = max(size, p.bucketHint)
		}
		a = make([]model.Bucket, 0, size)
	}
	n := len(a)
	p.bucketArena = a[:n+k]
	p.bucketUsed += k
	return a[n : n : n+k]
}

// labelSet builds the line's labels without the special one, sorted.
func (p *textParser) labelSet(special string) model.Labels {
	n := 0
	for _, pr := range p.pairs {
		if string(pr.name) != special {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	ls := make(model.Labels, 0, n)
	// Neighbouring lines mostly share label names and some values: take
	// the strings of the previous label set where they match before
	// asking the intern table.
	prev := p.prevLabels
	for _, pr := range p.pairs {
		if string(pr.name) == special {
			continue
		}
		l := model.Label{}
		if k := len(ls); k < len(prev) {
			if string(pr.name) == prev[k].Name {
				l.Name = prev[k].Name
			}
			if string(pr.value) == prev[k].Value {
				l.Value = prev[k].Value
			}
		}
		if l.Name == "" {
			l.Name = p.str(pr.name)
		}
		if l.Value == "" && len(pr.value) > 0 {
			l.Value = p.str(pr.value)
		}
		ls = append(ls, l)
	}
	for a := 1; a < len(ls); a++ {
		for b := a; b > 0 && ls[b].Name < ls[b-1].Name; b-- {
			ls[b], ls[b-1] = ls[b-1], ls[b]
		}
	}
	p.prevLabels = ls
	return ls
}

// hasDuplicateNames reports a label name given twice; the special label
// is exempt, as in expfmt (a second le simply wins).
func hasDuplicateNames(pairs []rawPair, special string) bool {
	for a := 1; a < len(pairs); a++ {
		if string(pairs[a].name) == special {
			continue
		}
		for b := 0; b < a; b++ {
			if bytes.Equal(pairs[a].name, pairs[b].name) {
				return true
			}
		}
	}
	return false
}

// labels reads `name="value",...}` from l[i:] into p.pairs and returns the
// index after the closing brace and any blanks.
func (p *textParser) labels(l []byte, i int) (int, bool) {
	for {
		i = skipBlanks(l, i)
		if i == len(l) {
			return i, false
		}
		if l[i] == '}' {
			return skipBlanks(l, i+1), true
		}
		if !isNameStart(l[i]) {
			return i, false
		}
		n := i + 1
		for n < len(l) && isLabelNameChar(l[n]) {
			n++
		}
		name := l[i:n]
		i = skipBlanks(l, n)
		if i == len(l) || l[i] != '=' {
			return i, false
		}
		i = skipBlanks(l, i+1)
		if i == len(l) || l[i] != '"' {
			return i, false
		}
		value, end, ok := p.labelValue(l, i+1)
		if !ok {
			return i, false
		}
		p.pairs = append(p.pairs, rawPair{name: name, value: value})
		i = skipBlanks(l, end)
		if i == len(l) {
			return i, false
		}
		switch l[i] {
		case ',':
			i++
		case '}':
			return skipBlanks(l, i+1), true
		default:
			return i, false
		}
	}
}

// labelValue reads a quoted value from l[i:] (after the opening quote),
// unescaping \\, \" and \n; end is the index after the closing quote.
func (p *textParser) labelValue(l []byte, i int) (value []byte, end int, ok bool) {
	j := i
	for {
		j = valueEnd(l, j)
		if j < len(l) && l[j] >= 0x80 {
			p.nonASCII = true
			j++
			continue
		}
		break
	}
	if j == len(l) {
		return nil, j, false
	}
	if l[j] == '"' {
		return l[i:j], j + 1, true
	}
	p.nonASCII = true // unescaped below: checked as a whole
	// Escapes: unescape into the shared scratch. Values already appended
	// point into it, so it must not be reallocated under them: copy them
	// out to a fresh buffer instead of growing in place.
	start := len(p.unesc)
	buf := p.unesc
	if cap(buf)-len(buf) < len(l)-i {
		buf = make([]byte, 0, max(2*cap(buf), len(l)))
		start = 0
	}
	for k := i; k < len(l); k++ {
		c := l[k]
		switch c {
		case '"':
			p.unesc = buf
			return buf[start:len(buf):len(buf)], k + 1, true
		case '\\':
			k++
			if k == len(l) {
				return nil, k, false
			}
			switch l[k] {
			case '\\', '"':
				buf = append(buf, l[k])
			case 'n':
				buf = append(buf, '\n')
			default:
				return nil, k, false
			}
		default:
			buf = append(buf, c)
		}
	}
	return nil, len(l), false
}

// valueEnd returns the index of the first '"', '\\' or byte >= 0x80 of
// l from j, or len(l): eight bytes at a time, since label values (hosts,
// routes) are most of a line's bytes.
func valueEnd(l []byte, j int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; j+8 <= len(l); j += 8 {
		x := binary.LittleEndian.Uint64(l[j:])
		q, b := x^('"'*ones), x^('\\'*ones)
		// A zero byte of q or b borrows into its high bit; borrows move
		// only upward, so the lowest flagged byte is exact.
		if m := ((q-ones)&^q | (b-ones)&^b | x) & highs; m != 0 {
			return j + bits.TrailingZeros64(m)/8
		}
	}
	for ; j < len(l) && charClass[l[j]]&cValueEnd == 0; j++ {
	}
	return j
}

// parseValue parses a sample value or an le/quantile label as expfmt
// does: strconv.ParseFloat, refusing the hex-float and underscore forms.
// Decimals without an exponent, most of any exposition, are read without
// strconv (decimalValue).
func parseValue(b []byte) (float64, bool) {
	if v, n, ok := decimalValue(b, 0); ok && n == len(b) {
		return v, true
	}
	return parseFloat(b)
}

// parseFloat is parseValue's general case.
func parseFloat(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if charClass[c]&cNotFloat != 0 { // not bytes.ContainsAny: it builds its set on every call
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(b), 64)
	return v, err == nil
}

// valueAt reads the value that starts at l[i] and ends at a blank or the
// end of the line; end is where it ends.
func valueAt(l []byte, i int) (v float64, end int, ok bool) {
	if v, n, ok := decimalValue(l, i); ok && (n == len(l) || isBlank(l[n])) {
		return v, n, true
	}
	end = i
	for end < len(l) && !isBlank(l[end]) {
		end++
	}
	v, ok = parseFloat(l[i:end])
	return v, end, ok
}

// pow10 holds the powers of ten a float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// decimalValue reads [+-]digits[.digits] from b[i:] up to the first byte
// that is none of those, when it can give strconv.ParseFloat's result
// without it: at most 19 digits whose value is below 2^53, so the digits
// are exact as a float64 and one division by an exact power of ten is
// rounded once, correctly, as strconv rounds (Clinger's fast path, which
// strconv takes too). ok is false when it cannot tell; n is the index
// after what it read.
func decimalValue(b []byte, i int) (v float64, n int, ok bool) {
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	var m uint64
	d0 := i
	for ; i < len(b) && b[i]-'0' < 10; i++ {
		m = m*10 + uint64(b[i]-'0')
	}
	digits, frac := i-d0, 0
	if i < len(b) && b[i] == '.' {
		i++
		f0 := i
		for ; i < len(b) && b[i]-'0' < 10; i++ {
			m = m*10 + uint64(b[i]-'0')
		}
		frac = i - f0
		digits += frac
	}
	// 19 digits cannot overflow m. An exponent or anything else after
	// the digits is for the caller to see: it then asks strconv.
	if digits == 0 || digits > 19 || m >= 1<<53 {
		return 0, i, false
	}
	v, _ = ExactDecimal(int64(m), -frac) // m < 2^53, frac <= 19
	if neg {
		v = -v
	}
	return v, i, true
}

// ExactDecimal is m·10^k as strconv.ParseFloat reads the decimal text of
// it, when one rounding gives it: |m| below 2^53 is exact as a float64,
// and one multiplication or division by a power of ten a float64 holds
// exactly (|k| <= 22) rounds once, correctly, as strconv rounds
// (Clinger's fast path, which strconv takes for the same numbers). ok is
// false otherwise. The text parser reads values with it, and a dump reads
// its decoded numbers with it.
func ExactDecimal(m int64, k int) (v float64, ok bool) {
	if m >= 1<<53 || m <= -1<<53 {
		return 0, false
	}
	v = float64(m)
	switch {
	case k == 0:
		return v, true
	case k > 0 && k < len(pow10):
		return v * pow10[k], true
	case k < 0 && -k < len(pow10):
		return v / pow10[-k], true
	}
	return 0, false
}

// families converts what was read into model families: empty families
// dropped, filtered, sorted by name, histograms and summaries finished as
// convertFamilies finishes expfmt's. The samples and quantiles of all
// families are cut from one slice each, and the buckets already lie in
// the parse's arena (bucketRoom), which the result keeps: a few
// allocations a parse instead of some per family and per series (the
// parser's own slices are reused by the next parse, so the result cannot
// share them).
func (p *textParser) families(filter func(string) bool) []model.Family {
	nFams, nSamples, nQuantiles := 0, 0, 0
	for _, f := range p.order {
		f.out = len(f.samples) == 0 || (filter != nil && !p.wantsFamily(f.name, filter))
		if f.out {
			continue
		}
		nFams++
		nSamples += len(f.samples)
		switch f.typ {
		case typeSummary:
			for i := range f.samples {
				nQuantiles += len(f.samples[i].quantiles)
			}
		}
	}
	out := make([]model.Family, 0, nFams)
	samples := make([]model.Sample, nSamples)
	var quantiles []model.QuantileValue
	if nQuantiles > 0 {
		quantiles = make([]model.QuantileValue, nQuantiles)
	}
	for _, f := range p.order {
		if f.out {
			continue
		}
		n := len(f.samples)
		mf := model.Family{Name: f.name, Help: safetext.Terminal(f.help), Samples: samples[:n:n]}
		samples = samples[n:]
		switch f.typ {
		case typeCounter:
			mf.Type = model.Counter
		case typeGauge:
			mf.Type = model.Gauge
		case typeHistogram:
			mf.Type = model.Histogram
		case typeSummary:
			mf.Type = model.Summary
		default:
			mf.Type = model.Untyped
		}
		for i := range f.samples {
			ts := &f.samples[i]
			s := &mf.Samples[i]
			s.Labels, s.TimestampMs = ts.labels, ts.tsMs
			switch mf.Type {
			case model.Histogram:
				// The buckets lie in the parse's arena (bucketRoom), the
				// result's from now on, with room for the +Inf bucket
				// finishHistogram may add; the result is capped at its
				// length, so an append by a caller never reaches the next
				// sample's buckets.
				if p.rec != nil && (!bucketsSorted(ts.buckets) || !ts.countKnown ||
					len(ts.buckets) == 0 || !math.IsInf(ts.buckets[len(ts.buckets)-1].UpperBound, +1)) {
					// finishHistogram would move buckets or derive a
					// field from a value: a value map cannot follow.
					p.rec.derived = true
				}
				finishHistogram(s, ts.buckets, ts.count, ts.countKnown, ts.sum, ts.sumKnown)
				used := len(s.Buckets)
				s.Buckets = s.Buckets[:used:used]
			case model.Summary:
				k := len(ts.quantiles)
				qs := quantiles[:k:k]
				copy(qs, ts.quantiles)
				if p.rec != nil && !quantilesSorted(qs) {
					p.rec.derived = true // the sort would move values
				}
				finishSummary(s, qs, ts.count, ts.countKnown, ts.sum, ts.sumKnown)
				quantiles = quantiles[k:]
			default:
				s.Value = ts.value
			}
		}
		out = append(out, mf)
	}
	slices.SortFunc(out, func(a, b model.Family) int { return strings.Compare(a.Name, b.Name) })
	if p.rec != nil {
		p.rec.finish(p.order, out)
	}
	return out
}

// lineCache is what the fast path read from each line of a target's
// previous body, up to the line's value: a target exposes the same
// series in the same order every scrape, so a line whose bytes up to its
// value equal the previous body's line at the same position has the same
// family name, labels and le or quantile, and only its value and
// timestamp are parsed (Prometheus' scrape cache keys series by those
// bytes too). An entry is a function of its prefix bytes and the family
// type's special label alone, so a cache shared by two targets, or stale,
// is only slower, never wrong; TestLineCacheMatchesUncached checks it.
type lineCache struct {
	owner *LineCaches // whose bound counts the entries; nil: uncounted
	mu    sync.Mutex  // held by the parse using it (TryLock: a second parse goes without)
	lines []lineEntry
	// sel keeps fastTextSelect's decisions on the target's names.
	sel selDecisions
	// arena holds the entries' prefixes one after another, as the lines
	// were read: a body's comparisons then stream through memory instead
	// of visiting a string allocated apart per line. Bytes written are
	// never written again (the prefixes are strings); a full chunk is
	// left to the strings in it and a new one started. arenaBytes counts
	// the bytes written since the last compaction (truncate).
	arena      []byte
	arenaBytes int
	liveBytes  int // the entries' prefix bytes, kept as entries change
}

// Arena chunks grow from minArenaChunk to maxArenaChunk bytes, so a
// small target's cache stays small.
const (
	minArenaChunk = 1 << 10
	maxArenaChunk = 256 << 10
)

// prefixOf copies b into the arena and returns the copy as a string.
func (c *lineCache) prefixOf(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > cap(c.arena)-len(c.arena) {
		c.arena = make([]byte, 0, max(len(b), min(2*cap(c.arena), maxArenaChunk), minArenaChunk))
	}
	n := len(c.arena)
	c.arena = append(c.arena, b...)
	c.arenaBytes += len(b)
	return unsafe.String(&c.arena[n], len(b))
}

type lineEntry struct {
	// prefix is the line from its name up to its value: the name, the
	// labels and the blanks after them. "" for a line not cached.
	prefix     string
	name       string // prefix's name, the string of the line before's when equal
	special    string // the family type's special label when read: le, quantile or ""
	hasSpecial bool
	specialVal float64
	labels     model.Labels // without the special label, sorted; shared by the samples read with it
	key        string       // a histogram or summary line's series key (groupKey)
}

// entryOverhead approximates an entry's bytes besides its prefix, key and
// labels, for the cache's bound.
const entryOverhead = 96

// put stores the entry of line k and returns it; shared says its labels
// and key are the line before's, already counted.
func (c *lineCache) put(k int, e lineEntry, shared bool) *lineEntry {
	if k >= len(c.lines) {
		if k >= cap(c.lines) {
			grown := make([]lineEntry, k+1, max(2*cap(c.lines), k+1, 256))
			copy(grown, c.lines)
			c.lines = grown
		}
		c.lines = c.lines[:k+1] // past the old length: zero (truncate clears)
	}
	cost := int64(len(e.prefix) + entryOverhead)
	if !shared {
		cost += int64(len(e.key) + 32*len(e.labels))
	}
	c.charge(cost)
	c.liveBytes += len(e.prefix) - len(c.lines[k].prefix)
	c.lines[k] = e
	return &c.lines[k]
}

// truncate drops the entries past a body's n lines.
// It then compacts the arena when less than half of what was written
// since the last compaction is still in use (lines changed, or the body
// shrank): the prefixes are copied into one chunk, in line order.
func (c *lineCache) truncate(n int) {
	if n < len(c.lines) {
		for k := n; k < len(c.lines); k++ {
			c.liveBytes -= len(c.lines[k].prefix)
		}
		clear(c.lines[n:])
		c.lines = c.lines[:n]
	}
	live := c.liveBytes
	if c.arenaBytes <= 2*live+minArenaChunk {
		return
	}
	c.arena, c.arenaBytes = make([]byte, 0, max(live, minArenaChunk)), 0
	for k := range c.lines {
		e := &c.lines[k]
		if e.prefix == "" {
			continue
		}
		nl := len(e.name)
		e.prefix = c.prefixOf(keyBytes(e.prefix))
		e.name = e.prefix[:nl]
		// Lines of one name share its string, as when made (sample).
		if k > 0 && c.lines[k-1].name == e.name {
			e.name = c.lines[k-1].name
		}
	}
}

// LineCaches holds the line caches of a set of targets, one per target
// name: whoever scrapes or reads those targets owns one and hands it to
// its ExpfmtParser (ExpfmtParser.Lines). Entries are counted as they are
// made (an entry replaced still counts) and past the bound every cache
// starts over, so the memory stays bounded whatever the targets do and
// the caches of targets gone are dropped with the rest.
type LineCaches struct {
	mu     sync.Mutex
	caches map[string]*lineCache
	bytes  atomic.Int64
	reset  atomic.Bool
	fixed  int64        // the bound given to NewLineCaches; 0: follow the memory limit
	bound  atomic.Int64 // the bound in force, read at each parse
}

// NewLineCaches returns an empty set of line caches bounded at bound bytes
// together; bound <= 0 follows the process' memory limit at each parse
// (DefaultLineCacheBytes).
func NewLineCaches(bound int64) *LineCaches {
	l := &LineCaches{caches: map[string]*lineCache{}, fixed: max(bound, 0)}
	l.bound.Store(l.limit())
	return l
}

// DefaultLineCacheBytes is maxLineCacheBytes, or lineCacheShare of the
// process' memory limit when that is less (32 MiB at 256 MiB).
func DefaultLineCacheBytes() int64 { return min(maxLineCacheBytes, memoryLimit()/lineCacheShare) }

func (l *LineCaches) limit() int64 {
	if l.fixed > 0 {
		return l.fixed
	}
	return DefaultLineCacheBytes()
}

// Bytes is what the caches count now.
func (l *LineCaches) Bytes() int64 { return l.bytes.Load() }

// lineCacheShare is the part of the memory limit the line caches may
// take: MemoryBudget gives the scrapes in flight half, the store five
// eighths (model.StoreShareEighths).
const lineCacheShare = 8

// maxLineCacheBytes bounds the line caches together: about 250,000
// lines, the bodies of 125 targets of 2,000 series. Past it, a fleet pays
// an uncached parse and the cache's filling on most scrapes.
const maxLineCacheBytes = 64 << 20

// maxLineCaches bounds how many targets have a line cache.
const maxLineCaches = 4096

// lineCacheBytesPerBodyByte is what a cache takes per byte of the body it
// holds at most: 3.3-4.6 measured on bodies of 1,000,000 short series.
const lineCacheBytesPerBodyByte = 5

// acquire returns the line cache of target for a body of size bytes,
// locked, or nil when it is in use by another parse, there is no room, the
// body's lines alone would pass the bound, or l is nil; release it with
// release.
func (l *LineCaches) acquire(target string, size int) *lineCache {
	if l == nil {
		return nil
	}
	l.bound.Store(l.limit())
	if int64(size)*lineCacheBytesPerBodyByte > l.bound.Load() {
		return nil
	}
	l.mu.Lock()
	if l.reset.Load() {
		l.caches = map[string]*lineCache{}
		l.bytes.Store(0)
		l.reset.Store(false)
	}
	c := l.caches[target]
	if c == nil {
		if len(l.caches) >= maxLineCaches {
			l.mu.Unlock()
			return nil
		}
		c = &lineCache{owner: l}
		l.caches[target] = c
	}
	l.mu.Unlock()
	if !c.mu.TryLock() {
		return nil
	}
	return c
}

func (l *LineCaches) release(c *lineCache) {
	if c != nil {
		c.mu.Unlock()
	}
}

// charge counts n more bytes against the owner's bound; past it every
// cache of the owner starts over at its next parse.
func (c *lineCache) charge(n int64) {
	if o := c.owner; o != nil && o.bytes.Add(n) > o.bound.Load() {
		o.reset.Store(true)
	}
}

// quantilesSorted reports whether finishSummary's stable sort would leave
// qs as it is.
func quantilesSorted(qs []model.QuantileValue) bool {
	for i := range qs {
		if qs[i].Quantile != qs[i].Quantile || i > 0 && qs[i].Quantile < qs[i-1].Quantile {
			return false
		}
	}
	return true
}
