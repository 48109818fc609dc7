package expo

import (
	"bytes"
	"strings"
	"sync"
)

// selection is the line pre-filter of ExpfmtParser: it copies the lines of
// a text or OpenMetrics body that may belong to a family the filter wants,
// and remembers where each kept line was in the original body.
//
// Lines are kept or dropped by group: the group of a metric name is its
// root, the name with every family suffix (_bucket, _count, _sum, _total,
// _created, _gcount, _gsum) stripped from its end. All lines of one family
// (its descriptors and every sample) share a root, and expfmt only ever
// relates a line to families of the same root, so keeping or dropping
// whole groups never changes how a kept family parses.
//
// A group is kept when any line of it could belong to a family the filter
// wants: its name, the name with suffixes stripped one at a time, or any of
// those plus _total (an OpenMetrics counter "foo" is the family
// foo_total). Lines whose name cannot be read cheaply are kept, and so is
// every OpenMetrics line that is neither a sample nor a descriptor, so
// the parser still judges them; plain comments and blank lines of the text
// format are dropped.
type selection struct {
	out   []byte
	lines []int32 // lines[i] is the original 1-based line of out's line i+1

	recs   []lineRec
	groups map[string]int32 // root -> group id
	names  map[string]int32 // metric name -> group id; lookups by string(bytes) do not allocate
	wanted []bool           // by group id
	filter func(string) bool
}

type lineRec struct {
	start, end int32 // the line in body, newline included
	group      int32 // keepLine, dropLine or a group id
}

const (
	keepLine = -1
	dropLine = -2
)

var selections = sync.Pool{New: func() any {
	return &selection{groups: map[string]int32{}, names: map[string]int32{}}
}}

// maxPooledSelection bounds what a pooled selection may keep.
const maxPooledSelection = 4 << 20

func getSelection() *selection { return selections.Get().(*selection) }

func putSelection(s *selection) {
	if cap(s.out) > maxPooledSelection || cap(s.recs) > maxPooledSelection/12 || len(s.names) > 4096 {
		return
	}
	s.out, s.lines, s.recs, s.wanted, s.filter = s.out[:0], s.lines[:0], s.recs[:0], s.wanted[:0], nil
	clear(s.groups)
	clear(s.names)
	selections.Put(s)
}

// maxSelectable is the largest body selection works on: offsets are int32.
const maxSelectable = 1<<31 - 1

// run selects from body, which must not exceed maxSelectable bytes.
func (s *selection) run(body []byte, openMetrics bool, filter func(string) bool) {
	s.classifyAll(body, openMetrics, filter)
	// Pass 2: copy the lines of wanted groups.
	for i, r := range s.recs {
		if !s.kept(r) {
			continue
		}
		s.out = append(s.out, body[r.start:r.end]...)
		s.lines = append(s.lines, int32(i+1))
	}
}

// kept reports whether the selection keeps line r.
func (s *selection) kept(r lineRec) bool {
	return r.group != dropLine && (r.group < 0 || s.wanted[r.group])
}

// classifyAll is run's pass 1: it classifies every line of body and marks
// the groups some line wants.
func (s *selection) classifyAll(body []byte, openMetrics bool, filter func(string) bool) {
	s.filter = filter
	s.out, s.lines, s.recs = s.out[:0], s.lines[:0], s.recs[:0]
	// Pass 1: classify every line, and mark the groups some line wants.
	for off := 0; off < len(body); {
		end, next := lineAt(body, off)
		s.recs = append(s.recs, lineRec{start: int32(off), end: int32(next), group: s.classify(body[off:end], openMetrics)})
		off = next
	}
}

// lineAt is where the line of body starting at off ends (before its
// newline) and where the next one starts.
func lineAt(body []byte, off int) (end, next int) {
	end = bytes.IndexByte(body[off:], '\n')
	if end < 0 {
		return len(body), len(body)
	}
	return off + end, off + end + 1
}

// classify returns the group of one line (without its newline).
func (s *selection) classify(line []byte, openMetrics bool) int32 {
	i := 0
	if !openMetrics {
		i = skipBlank(line, 0)
	}
	if i == len(line) {
		if openMetrics {
			return keepLine // a blank line is an error in OpenMetrics
		}
		return dropLine
	}
	var name []byte
	var ok bool
	switch line[i] {
	case '#':
		j := skipBlank(line, i+1)
		k := j
		for k < len(line) && line[k] != ' ' && line[k] != '\t' {
			k++
		}
		switch tok := string(line[j:k]); {
		case tok == "HELP" || tok == "TYPE" || (tok == "UNIT" && openMetrics):
			name, ok = readName(line[skipBlank(line, k):])
		case openMetrics:
			return keepLine // "# EOF", or something for the parser to reject
		default:
			return dropLine // a plain comment of the text format
		}
	case '{':
		name, ok = braceName(line[i:])
	default:
		name, ok = readName(line[i:])
	}
	if !ok {
		return keepLine
	}
	return s.group(name)
}

// group returns the group id of a metric name, and marks the group wanted
// when the name could belong to a family the filter wants.
func (s *selection) group(name []byte) int32 {
	if g, ok := s.names[string(name)]; ok {
		return g
	}
	n := string(name)
	root := n
	for {
		b := stripSuffix(root)
		if b == root {
			break
		}
		root = b
	}
	g, ok := s.groups[root]
	if !ok {
		g = int32(len(s.wanted))
		s.groups[root] = g
		s.wanted = append(s.wanted, false)
	}
	s.names[n] = g
	if !s.wanted[g] {
		for c := n; ; {
			if s.filter(c) || s.filter(c+"_total") {
				s.wanted[g] = true
				break
			}
			b := stripSuffix(c)
			if b == c {
				break
			}
			c = b
		}
	}
	return g
}

var familySuffixes = []string{"_bucket", "_count", "_sum", "_total", "_created", "_gcount", "_gsum"}

// stripSuffix removes one family suffix from the end of name, if any.
func stripSuffix(name string) string {
	for _, suf := range familySuffixes {
		if len(name) > len(suf) && strings.HasSuffix(name, suf) {
			return name[:len(name)-len(suf)]
		}
	}
	return name
}

func skipBlank(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i
}

// readName reads a metric name at the start of b: bare up to a blank or
// '{', or double-quoted without escapes. ok is false when it cannot tell.
func readName(b []byte) (name []byte, ok bool) {
	if len(b) == 0 {
		return nil, false
	}
	if b[0] == '"' {
		return quoted(b)
	}
	k := 0
	for k < len(b) && b[k] != ' ' && b[k] != '\t' && b[k] != '{' {
		k++
	}
	return b[:k], k > 0
}

// quoted reads a double-quoted string without escapes at the start of b.
func quoted(b []byte) ([]byte, bool) {
	end := bytes.IndexByte(b[1:], '"')
	if end <= 0 {
		return nil, false
	}
	s := b[1 : 1+end]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, false
	}
	return s, true
}

// braceName reads the name of a sample written {"name", label="v"}: a
// quoted string first in the braces and not followed by '='.
func braceName(b []byte) ([]byte, bool) {
	i := skipBlank(b, 1)
	if i >= len(b) || b[i] != '"' {
		return nil, false
	}
	name, ok := quoted(b[i:])
	if !ok {
		return nil, false
	}
	j := skipBlank(b, i+len(name)+2)
	if j >= len(b) || (b[j] != ',' && b[j] != '}') {
		return nil, false
	}
	return name, true
}

// SelectBody appends to dst the lines of body that a parse with filter
// reads (the line pre-filter of ExpfmtParser) and returns the result: an
// exposition that parses with filter to what body parses to, smaller by
// the families filter cannot want. It is for a recorder that keeps only
// what the dialects read (record --only-relevant). ok is false, and dst
// returned unchanged, when the body must be kept whole: protobuf, a body
// too large for the pre-filter, or one that is plainly not an exposition
// (a web page filtered would look like an empty target).
//
// Like the filtered parse, it drops what that parse never reads: plain
// comments and blank lines of the text format, and the lines of unwanted
// families, errors in them included.
func SelectBody(dst, body []byte, contentType string, filter func(string) bool) (out []byte, ok bool) {
	if filter == nil || int64(len(body)) > maxSelectable || NotExposition("", body, contentType) != nil {
		return dst, false
	}
	_, kind := formatOf(contentType)
	if kind == formatProto {
		return dst, false
	}
	sel := getSelection()
	defer putSelection(sel)
	sel.run(body, kind == formatOpenMetrics, filter)
	return append(dst, sel.out...), true
}

// SeriesLines counts the lines of body a parse with filter may turn into
// samples: every line of a family the filter may want (all of them when
// filter is nil), comments and blank lines of the text format aside. It
// reads the body once without parsing it, so a caller can budget a parse
// by the series it will keep before running it.
func SeriesLines(body []byte, contentType string, filter func(string) bool) int {
	_, kind := formatOf(contentType)
	if filter == nil || kind == formatProto || int64(len(body)) > maxSelectable {
		return lineCount(body)
	}
	sel := getSelection()
	defer putSelection(sel)
	if n, ok := sel.countKept(body, kind == formatOpenMetrics, filter); ok {
		return n
	}
	return lineCount(body) // names by the thousand: every line counts, more than the filter keeps
}

func lineCount(body []byte) int {
	n := bytes.Count(body, []byte{'\n'})
	if len(body) > 0 && body[len(body)-1] != '\n' {
		n++ // the last line, unterminated
	}
	return n
}

// maxCountedNames bounds the metric names countKept remembers (about
// 8 MB): past it the count gives up rather than hold a table of names in
// proportion to the body it budgets.
const maxCountedNames = 1 << 16

// countKept counts the lines run would keep of body without remembering
// each line (run's 12 bytes a line): lines by group, then the groups
// wanted. ok is false when body names more than maxCountedNames metrics.
func (s *selection) countKept(body []byte, openMetrics bool, filter func(string) bool) (n int, ok bool) {
	s.filter = filter
	var byGroup []int
	for off := 0; off < len(body); {
		end, next := lineAt(body, off)
		switch g := s.classify(body[off:end], openMetrics); {
		case g == keepLine:
			n++
		case g >= 0:
			for int(g) >= len(byGroup) {
				byGroup = append(byGroup, 0)
			}
			byGroup[g]++
		}
		if len(s.names) > maxCountedNames {
			return 0, false
		}
		off = next
	}
	for g, c := range byGroup {
		if s.wanted[g] {
			n += c
		}
	}
	return n, true
}
