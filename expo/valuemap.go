package expo

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Value maps. A target's next body mostly differs from its previous one
// in its numbers only (a dump stores the structure, the text with a slot
// where each number is, apart from the numbers: dump). Its parse
// is then the previous parse with each number put where its token went,
// through the conversion the parser applied to the token's text: a
// ValueMap records, for a body the fast path parsed, each value and
// timestamp token's place in the body and its destination in the result,
// and SlotMap.Apply replays it on a body with the same structure. A map
// is refused when the parser made a decision a number could change other
// than the number's own conversion (a field derived from two tokens,
// buckets reordered): the caller then parses.

// Destinations of a value token.
const (
	fieldNone     = iota // read and checked, kept nowhere (a bucket of le="NaN", a dropped family)
	fieldValue           // Sample.Value
	fieldCount           // Sample.Count
	fieldSum             // Sample.Sum
	fieldBucket          // Sample.Buckets[k].Count
	fieldQuantile        // Sample.Quantiles[k].Value
	fieldTS              // Sample.TimestampMs
)

// Conversions of a token's text (value's, then addComponent's).
const (
	convValue        = iota // valueAt
	convTS                  // strconv.ParseInt, as value reads a timestamp
	convHistCount           // countValue of a histogram
	convSummaryCount        // countValue of a summary
	convBucket              // bucketValue
)

// valueTok is one value or timestamp token of a parsed body.
type valueTok struct {
	start, end int32 // in the body
	fam        int32 // index in the result; -1 while recording, or when the family was left out
	sample, k  int32
	field      uint8
	conv       uint8
	f          *textFamily // while recording
}

// valueRecorder collects a parse's tokens (textParser.rec).
type valueRecorder struct {
	toks    []valueTok
	skips   []int32 // start, end of each line fastTextSelect skipped
	derived bool    // a value decision the map cannot follow
	done    bool    // the fast path produced the result
}

func (r *valueRecorder) skip(off, n int) {
	r.skips = append(r.skips, int32(off), int32(off+n))
}

func (r *valueRecorder) token(start, end int, f *textFamily, sample int, field, conv uint8, k int) {
	r.toks = append(r.toks, valueTok{start: int32(start), end: int32(end), fam: -1, sample: int32(sample), k: int32(k), field: field, conv: conv, f: f})
}

// componentField is the destination addComponent gave a histogram or
// summary line's value, just stored into s.
func componentField(f *textFamily, s *textSample, sfx string, special float64, hasSpecial bool) (field, conv uint8, k int) {
	switch {
	case sfx == "_count":
		if f.typ == typeSummary {
			return fieldCount, convSummaryCount, 0
		}
		return fieldCount, convHistCount, 0
	case sfx == "_sum":
		return fieldSum, convValue, 0
	case !hasSpecial || math.IsNaN(special):
		return fieldNone, convValue, 0
	case f.typ == typeHistogram:
		return fieldBucket, convBucket, len(s.buckets) - 1
	default:
		return fieldQuantile, convValue, len(s.quantiles) - 1
	}
}

// finish numbers the tokens' families as families sorted them.
func (r *valueRecorder) finish(order []*textFamily, out []model.Family) {
	idx := make(map[*textFamily]int32, len(order))
	for _, f := range order {
		if f.out {
			continue
		}
		i, _ := slices.BinarySearchFunc(out, f.name, func(a model.Family, name string) int { return strings.Compare(a.Name, name) })
		idx[f] = int32(i)
	}
	for i := range r.toks {
		t := &r.toks[i]
		if fi, ok := idx[t.f]; ok {
			t.fam = fi
		} else {
			t.field = fieldNone
		}
		t.f = nil
	}
	r.done = true
}

// ValueMap says where each value and timestamp token of a body went in
// its parse (ExpfmtParser.ParseValues).
type ValueMap struct {
	toks  []valueTok
	skips []int32
	// firstEnd is where the body's first line that is not blank ends:
	// notExposition reads its value.
	firstEnd int32
}

// ValueParser is a Parser that also says where each number of a body went
// in its parse, so a later body of the same structure can be read through
// a SlotMap instead of parsed (a recording's value maps).
type ValueParser interface {
	Parser
	ParseValues(target string, body []byte, contentType string, filter func(string) bool) ([]model.Family, *ValueMap, error)
}

// ParseValues is Parse, with a ValueMap of the result when the fast path
// parsed the body and could follow every value (nil otherwise).
func (p ExpfmtParser) ParseValues(target string, body []byte, contentType string, filter func(string) bool) ([]model.Family, *ValueMap, error) {
	rec := &valueRecorder{}
	fams, err := p.parse(target, body, contentType, filter, rec)
	if err != nil || !rec.done || rec.derived || len(body) > math.MaxInt32 {
		return fams, nil, err
	}
	m := &ValueMap{toks: rec.toks, skips: rec.skips}
	start := 0
	for i, c := range body {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			break
		}
		if c == '\n' {
			start = i + 1
		}
	}
	m.firstEnd = int32(len(body))
	if i := bytes.IndexByte(body[start:], '\n'); i >= 0 {
		m.firstEnd = int32(start + i)
	}
	return fams, m, nil
}

// slotDest is where one slot's number goes.
type slotDest struct {
	fam, sample, k int32
	field, conv    uint8
	first          bool // on the first line: must read as a float (sampleStart)
	// always: the field is written by other slots too, the last write
	// winning; read whether or not the slot changed.
	always bool
}

// SlotMap replays a parse on bodies of the same structure: slot i of the
// body (its start and end offsets offs[2i], offs[2i+1]) goes to dest[i].
type SlotMap struct {
	dest []slotDest
	// cur is the parse of the last body applied (at first the bound
	// one's), never handed out; valid is false after an Apply that
	// refused partway.
	cur   []model.Family
	valid bool
	// out is the copy Apply handed out last, spare one given back
	// (Release) for the next Apply to copy into.
	out, spare *familyBuf
	// field is, per slot, the float64 in cur its value goes to (nil: a
	// timestamp, or kept nowhere), made at the first apply: cur's arrays
	// never move.
	field []*float64
}

// Bind matches the numbers' slots of the parsed body (each slot's start
// and end offset, in order) to the map's tokens and keeps a copy of fams,
// the parse. nil when a slot is neither a value or timestamp token nor in
// a line the parse skipped, or a field is written both by a slot and by a
// number that is text (then the order of the writes would matter).
func (m *ValueMap) Bind(fams []model.Family, offs []int32) *SlotMap {
	if m == nil || len(offs)%2 != 0 {
		return nil
	}
	n := len(offs) / 2
	sm := &SlotMap{dest: make([]slotDest, n)}
	slotOf := make([]int32, len(m.toks)) // 1 + the slot of each token, 0: text
	t, sk := 0, 0
	for i := 0; i < n; i++ {
		s, e := offs[2*i], offs[2*i+1]
		for t < len(m.toks) && m.toks[t].start < s {
			t++
		}
		if t < len(m.toks) && m.toks[t].start == s && m.toks[t].end == e {
			tk := m.toks[t]
			sm.dest[i] = slotDest{fam: tk.fam, sample: tk.sample, k: tk.k, field: tk.field, conv: tk.conv}
			slotOf[t] = int32(i) + 1
			t++
		} else {
			for sk < len(m.skips) && m.skips[sk+1] < e {
				sk += 2
			}
			if sk >= len(m.skips) || m.skips[sk] > s {
				return nil // a number the parse read otherwise than as a value
			}
			sm.dest[i] = slotDest{fam: -1, field: fieldNone, conv: 0xff}
		}
		sm.dest[i].first = s < m.firstEnd
	}
	// A field written twice (a histogram series' timestamp on each of its
	// lines, a _count given twice) takes the last write: only when every
	// write is a slot does the replay, in body order, end as the parse.
	type key struct {
		fam, sample, k int32
		field          uint8
	}
	var writes map[key]int
	var multi []int // the tokens of those fields
	for i, tk := range m.toks {
		if tk.field == fieldNone || tk.fam < 0 {
			continue
		}
		if tk.field == fieldTS || tk.field == fieldCount || tk.field == fieldSum {
			if writes == nil {
				writes = make(map[key]int)
			}
			kk := key{tk.fam, tk.sample, tk.k, tk.field}
			w := writes[kk] + 1
			if slotOf[i] == 0 {
				w += 1 << 20 // a text write
			}
			writes[kk] = w
			multi = append(multi, i)
		}
	}
	for _, w := range writes {
		if text, all := w>>20, w&(1<<20-1); text > 0 && all > 1 {
			return nil
		}
	}
	for _, i := range multi {
		tk := m.toks[i]
		if w := writes[key{tk.fam, tk.sample, tk.k, tk.field}]; slotOf[i] > 0 && w&(1<<20-1) > 1 {
			sm.dest[slotOf[i]-1].always = true // every write is a slot's (above)
		}
	}
	sm.cur, sm.valid = new(familyBuf).copyOf(fams), true
	return sm
}

// MarkAlwaysRead sets changed[i] for each slot i that Apply reads
// whether or not its number changed (a field other slots write too):
// then changed says every slot read.
func (sm *SlotMap) MarkAlwaysRead(changed []bool) {
	if len(changed) != len(sm.dest) {
		return
	}
	for i := range sm.dest {
		if sm.dest[i].always {
			changed[i] = true
		}
	}
}

// Slots is how many slots the map binds.
func (sm *SlotMap) Slots() int { return len(sm.dest) }

// Apply returns the parse of body, whose structure is the bound body's
// and whose slots are at offs: fresh families, the last applied parse's
// with each slot's number read as the parser reads its token. changed,
// when not nil, says which slots' text changed since the body applied
// last (or bound): the others are not read again. ok false when a number
// would have made the parser decide otherwise (a negative count, a
// timestamp that is not an integer, a float out of range): then the body
// must be parsed. vals, when not nil, gives every slot's number as the
// parser's value function reads its text, where the caller knows it
// exactly (the dump's codec decodes numbers as digits and a power of
// ten): NaN says to read the text. Only the slots changed marks (every
// slot when changed is nil) need a value there: another is read from the
// text when the map must read every slot. A timestamp and a slot of the first
// line are always read from the text.
func (sm *SlotMap) Apply(body []byte, offs []int32, changed []bool, vals []float64) ([]model.Family, bool) {
	if len(offs) != 2*len(sm.dest) {
		return nil, false
	}
	return sm.apply(body, offs, changed, vals)
}

// ApplyValues is Apply without the body's text: every slot to be read is
// read from vals. ok false, with the map as it was, when some slot needs
// its text (a timestamp, a slot of the first line, a NaN in vals): then
// call Apply with the text. ok false after reading, as Apply's, when a
// number would have made the parser decide otherwise.
func (sm *SlotMap) ApplyValues(changed []bool, vals []float64) ([]model.Family, bool) {
	if len(vals) != len(sm.dest) || (changed != nil && len(changed) != len(sm.dest)) || !sm.valid {
		return nil, false
	}
	for i := range sm.dest {
		d := &sm.dest[i]
		if changed != nil && !changed[i] && !d.always {
			continue
		}
		if d.first || (d.conv != 0xff && (d.conv == convTS || math.IsNaN(vals[i]))) {
			return nil, false
		}
	}
	return sm.applyValues(changed, vals)
}

// applyValues is apply for ApplyValues once it has found every slot to
// be read in vals (the map valid, so only those changed marks and those
// always read): each value, converted as apply converts it, goes
// straight to its field (a twentieth of analyze's instructions went to
// finding it, sample and bucket, a slot at a time).
func (sm *SlotMap) applyValues(changed []bool, vals []float64) ([]model.Family, bool) {
	dest, field, vals := sm.dest, sm.fields(), vals[:len(sm.dest)]
	sm.valid = false // until every slot is read
	for i := range dest {
		d := &dest[i]
		if changed != nil && !changed[i] && !d.always {
			continue // its text, and so its reading, is the last body's
		}
		if d.conv == 0xff {
			continue // a line the parse skipped
		}
		v, ok := convert(d.conv, vals[i])
		if !ok {
			return nil, false
		}
		if f := field[i]; f != nil {
			*f = v
		}
	}
	return sm.handOut(), true
}

// convert is a value token's number as the parse keeps it (conv, the
// token's conversion, not a timestamp's): a histogram's or summary's
// count, a bucket's; false where the parser refuses it.
func convert(conv uint8, v float64) (float64, bool) {
	switch conv {
	case convHistCount:
		return countValue(typeHistogram, v)
	case convSummaryCount:
		return countValue(typeSummary, v)
	case convBucket:
		return bucketValue(v)
	}
	return v, true
}

// fields is, per slot, where in cur its value goes (nil for a timestamp
// or a value kept nowhere), made at the first call.
func (sm *SlotMap) fields() []*float64 {
	if sm.field != nil {
		return sm.field[:len(sm.dest)]
	}
	out := make([]*float64, len(sm.dest))
	for i, d := range sm.dest {
		if d.conv == 0xff || d.fam < 0 || d.field == fieldNone || d.field == fieldTS {
			continue
		}
		smp := &sm.cur[d.fam].Samples[d.sample]
		switch d.field {
		case fieldValue:
			out[i] = &smp.Value
		case fieldCount:
			out[i] = &smp.Count
		case fieldSum:
			out[i] = &smp.Sum
		case fieldBucket:
			out[i] = &smp.Buckets[d.k].Count
		case fieldQuantile:
			out[i] = &smp.Quantiles[d.k].Value
		}
	}
	sm.field = out
	return out
}

// apply is Apply.
func (sm *SlotMap) apply(body []byte, offs []int32, changed []bool, vals []float64) ([]model.Family, bool) {
	if (changed != nil && len(changed) != len(sm.dest)) || (vals != nil && len(vals) != len(sm.dest)) {
		return nil, false
	}
	read := changed // the slots whose vals the caller gave
	if !sm.valid {
		changed = nil // every slot is read
	}
	sm.valid = false // until every slot is read
	field := sm.fields()
	for i := range sm.dest {
		d := &sm.dest[i]
		if changed != nil && !changed[i] && !d.always {
			continue // its text, and so its reading, is the last body's
		}
		var s, e int32
		if body != nil {
			s, e = offs[2*i], offs[2*i+1]
			if s < 0 || e < s || int(e) > len(body) {
				return nil, false
			}
			if d.first {
				if _, err := strconv.ParseFloat(string(body[s:e]), 64); err != nil {
					return nil, false
				}
			}
		}
		if d.conv == 0xff {
			continue // a line the parse skipped
		}
		var v float64
		var ts int64
		ok := true
		switch d.conv {
		case convTS:
			var err error
			ts, err = strconv.ParseInt(string(body[s:e]), 10, 64)
			ok = err == nil
		default:
			if vals != nil && !d.first && !math.IsNaN(vals[i]) && (read == nil || read[i]) {
				v = vals[i]
			} else {
				var end int
				v, end, ok = valueAt(body[:e], int(s))
				ok = ok && end == int(e)
			}
			if ok {
				v, ok = convert(d.conv, v)
			}
		}
		if !ok {
			return nil, false
		}
		if d.field == fieldTS {
			sm.cur[d.fam].Samples[d.sample].TimestampMs = ts
		} else if f := field[i]; f != nil {
			*f = v
		}
	}
	return sm.handOut(), true
}

// handOut marks cur, every slot read, valid and hands out a copy of it,
// into the spare buffer when there is one.
func (sm *SlotMap) handOut() []model.Family {
	sm.valid = true
	b := sm.spare
	if b == nil {
		b = new(familyBuf)
	}
	sm.out, sm.spare = b, nil
	return b.copyOf(sm.cur)
}

// Release gives back fams, the result of this map's last Apply, which
// its caller no longer reads: the next Apply copies into it instead of
// allocating. Unless inUse (what the caller goes on reading, such as a
// translation of fams) shares any of its memory, which is then kept as
// it is; so is anything that is not the last result. It reports whether
// fams was taken.
func (sm *SlotMap) Release(fams, inUse []model.Family) bool {
	b := sm.out
	if b == nil || len(fams) == 0 || len(b.Families) == 0 || &fams[0] != &b.Families[0] || model.FamilyArrays(*b).UsedBy(inUse) {
		return false
	}
	sm.out, sm.spare = nil, b
	return true
}

// familyBuf holds a copy of a parse: its families and the samples,
// buckets and quantiles they are cut from.
type familyBuf model.FamilyArrays

// copyOf copies fams into b with its own samples, buckets and quantiles
// (one slice of each, as families cuts them), reusing b's arrays when
// they are large enough; labels and strings are shared, as the line cache
// shares them between parses.
func (b *familyBuf) copyOf(fams []model.Family) []model.Family {
	nS, nB, nQ := 0, 0, 0
	for i := range fams {
		nS += len(fams[i].Samples)
		for j := range fams[i].Samples {
			nB += len(fams[i].Samples[j].Buckets)
			nQ += len(fams[i].Samples[j].Quantiles)
		}
	}
	b.Families = grown(b.Families, len(fams))
	b.Samples = grown(b.Samples, nS)
	b.Buckets = grown(b.Buckets, nB)
	b.Quantiles = grown(b.Quantiles, nQ)
	out, samples, buckets, quantiles := b.Families, b.Samples, b.Buckets, b.Quantiles
	for i := range fams {
		out[i] = fams[i]
		n := len(fams[i].Samples)
		out[i].Samples = samples[:n:n]
		samples = samples[n:]
		copy(out[i].Samples, fams[i].Samples)
		for j := range out[i].Samples {
			s := &out[i].Samples[j]
			if len(s.Buckets) > 0 { // an empty one is shared: nothing to write
				k := len(s.Buckets)
				b := buckets[:k:k]
				buckets = buckets[k:]
				copy(b, s.Buckets)
				s.Buckets = b
			}
			if len(s.Quantiles) > 0 {
				k := len(s.Quantiles)
				q := quantiles[:k:k]
				quantiles = quantiles[k:]
				copy(q, s.Quantiles)
				s.Quantiles = q
			}
		}
	}
	return out
}

// grown is s with length n: s's array when it holds n, else a new one
// (nil for none).
func grown[T any](s []T, n int) []T {
	if n == 0 {
		return s[:0]
	}
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
