package dump

import (
	"bytes"
	"math"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

// Reading a frame's values without parsing its text.
//
// A steady target's frame mostly has exactly its previous frame's
// structure (the body's text with a slot where each number is: the
// codec's tokens), only other numbers. The parse of its body is then the
// previous parse with new values: per target, a recording keeps the last
// parse's expo.SlotMap (slot -> family, sample and field, built from
// what the parser reports of each value token it read), and a frame whose
// structure and content type are the mapped frame's is read by copying
// the parse and putting each changed slot's number in (SlotMap.Apply):
// the decoded digits and power of ten as the float strconv reads
// (num.float, or strconv on the number's own text past Clinger's fast
// path; TestNumFloatAsParseFloat). A version 5 frame's tokens are checked
// as they are decoded, so it is not rendered unless a slot must be read
// from its text (ApplyValues refuses); an older frame is rendered and
// checked against its body's checksum (a codec bug must not pass as a
// wrong number), into the reader's buffer, not a copy.
//
// Anything else parses: the first frame of a target (of each Fork: a
// recording's map belongs to its own reader), another structure or
// content type, a parser that is not an expo.ValueParser (or the
// recording's own under OpenOptions.Wrap), a target past the maps' bound
// (maxValueMapBytes), a body the fast
// path does not take, a parse whose map refuses (a field derived from
// two numbers, buckets the parser reorders, a number read other than as
// a value), a value the parser would have decided on otherwise (Apply
// refuses: a negative count, a timestamp that is not an integer). A
// failed scrape in between changes nothing: a parse is a function of the
// body alone, so the structure is what decides. TestValuesEqualParse
// compares both ways on every fixture and on generated dumps.

// valueState is a target's last mapped parse in one recording.
type valueState struct {
	idx       int32 // the entry of the newest frame read through the map
	ct        string
	structure []byte // the mapped frame's structure (a copy)
	slots     *expo.SlotMap
	changed   []bool    // scratch: the slots whose number changed
	vals      []float64 // scratch: the slots' values (slotValues)
	text      []byte    // scratch: a number's text (slotValues)
	size      int64     // what it keeps, as valueMapSize reckons it
}

// maxValueMapBytes bounds what the value maps of a recording and all its
// Forks keep, in total: a map holds its frame's structure, a destination
// per slot and a copy of the parse (for 2,016 series about 0.4 MB). Past
// it a target's frames are parsed, as without maps: the targets mapped
// first keep theirs (a bound by recency would evict every map before its
// next use when targets are read round robin, as loading reads them).
var maxValueMapBytes int64 = 64 << 20 // a var: the tests lower it

// valueMapSize reckons what a map keeps: its structure, a slot
// destination (16 bytes), the pointer to its field (8) and a number's
// share of the slice headers per slot, and the parse at expo.ParseCost
// bytes per byte of body.
func valueMapSize(structure, body, slots int) int64 {
	return int64(structure) + 32*int64(slots) + expo.ParseCost*int64(body)
}

// forget drops target's map, giving its bytes back.
func (v *valueFrame) forget(target string) {
	if vs := v.vals[target]; vs != nil {
		v.kept.Add(-vs.size)
		delete(v.vals, target)
	}
}

// valueFrame is a frame lent to the parse of a recording's snapshot: the
// recording's maps, the frame and the filter it parses with.
type valueFrame struct {
	f      *lentFrame
	filter func(string) bool
	vals   map[string]*valueState
	mapped *int          // counts the frames read through a map (the tests')
	kept   *atomic.Int64 // the bytes the maps of the recording and its Forks keep
}

// parse reads the frame as p.Parse would: through the target's map when
// the frame's structure is the mapped one's, else by parsing (and
// mapping the parse for the next frames).
func (v *valueFrame) parse(p expo.ValueParser) ([]model.Family, error) {
	f := v.f
	vs := v.vals[f.Target]
	if vs != nil && vs.ct == f.ContentType && vs.slots.Slots() == len(f.nums) &&
		((f.sameBase && f.base == vs.idx) || bytes.Equal(vs.structure, f.structure)) {
		// Decoded right from the frame read last: only the numbers that
		// changed since are read.
		var changed []bool
		if f.sameBase && f.base == vs.idx && len(f.baseNums) == len(f.nums) {
			changed = vs.changedSlots(f.nums, f.baseNums)
			vs.slots.MarkAlwaysRead(changed)
		}
		vals := vs.slotValues(f.nums, changed)
		if !f.rendered {
			// Its tokens were checked as they were decoded: no text is
			// needed unless a slot read must be read from it.
			if fams, ok := vs.slots.ApplyValues(changed, vals); ok {
				vs.idx = f.idx
				*v.mapped++
				return fams, nil
			}
			if err := f.render(); err != nil {
				return nil, err
			}
		}
		if fams, ok := vs.slots.Apply(f.Body, f.offs, changed, vals); ok {
			vs.idx = f.idx
			*v.mapped++
			return fams, nil
		}
	}
	if err := f.render(); err != nil {
		return nil, err
	}
	fams, vm, err := p.ParseValues(f.Target, f.Body, f.ContentType, v.filter)
	v.forget(f.Target)
	if err != nil {
		return nil, err
	}
	size := valueMapSize(len(f.structure), len(f.Body), len(f.offs)/2)
	if noValueMaps || v.kept.Load()+size > maxValueMapBytes {
		return fams, nil
	}
	if sm := vm.Bind(fams, f.offs); sm != nil {
		if vs == nil {
			vs = &valueState{}
		}
		vs.idx, vs.ct, vs.slots, vs.size = f.idx, f.ContentType, sm, size
		vs.structure = append(vs.structure[:0], f.structure...)
		v.vals[f.Target] = vs
		v.kept.Add(size)
	}
	return fams, nil
}

// snapshotValues is Snapshot of a dump: the frame is decoded and lent
// (not copied) to the parse, which reads it through the target's map
// when the recording's parser is an expo.ValueParser, or its own parse
// under OpenOptions.Wrap (a dialect translator's Parsing).
func (d *dumpRecording) snapshotValues(i int) (*model.Snapshot, error) {
	var snap *model.Snapshot
	var scrapeErr error
	vp, isValues := d.parser.(expo.ValueParser)
	lend := d.r.frameLent
	if isValues || d.wrap != nil {
		// The frame is read through v.parse, directly or as the
		// wrapper's ownParser, which renders it if it needs the text;
		// any other parser is given the text.
		lend = d.r.frameLentTokens
	}
	err := lend(i, func(f *lentFrame) error {
		v := &valueFrame{f: f, filter: d.filter, vals: d.vals, mapped: &d.mapped, kept: d.kept}
		var fams []model.Family
		var err error
		if isValues {
			fams, err = v.parse(vp)
		} else {
			// Under Wrap, the wrapper calls ownParser, which finds v here.
			d.reading = v
			fams, err = d.parser.Parse(f.Target, f.Body, f.ContentType, d.filter)
			d.reading = nil
		}
		if err != nil {
			return err
		}
		snap = &model.Snapshot{Target: f.Target, Time: f.Time, Families: fams}
		return nil
	}, func(f Frame) {
		scrapeErr = &ScrapeError{Target: f.Target, Msg: f.Err}
	})
	if err != nil {
		return nil, err
	}
	if scrapeErr != nil {
		return nil, scrapeErr
	}
	return snap, nil
}

// ownParser is a dump recording's own parse under OpenOptions.Wrap: the
// frame the recording is reading (that very body, with the recording's
// filter) goes through its value maps; anything else, such as the
// wrapper's unfiltered parse of the same body, is parsed.
type ownParser struct{ d *dumpRecording }

// Parse implements expo.Parser. The frame being read may be lent without
// its text (frameLentTokens): the wrapper then passes a nil body, which
// stands for it.
func (p ownParser) Parse(target string, body []byte, contentType string, filter func(string) bool) ([]model.Family, error) {
	v := p.d.reading
	if v != nil && v.f.Target == target && v.f.ContentType == contentType &&
		(body == nil || (len(body) > 0 && len(body) == len(v.f.Body) && &body[0] == &v.f.Body[0])) {
		if expo.SameFilter(filter, v.filter) {
			return v.parse(expo.ExpfmtParser{Lines: p.d.lines})
		}
		if err := v.f.render(); err != nil { // another parse of the same body: its text
			return nil, err
		}
		body = v.f.Body
	}
	return expo.ExpfmtParser{Lines: p.d.lines}.Parse(target, body, contentType, filter)
}

// noValueMaps makes every frame parse (the tests' and benchmarks' anchor).
var noValueMaps = false

// changedSlots marks the slots whose number differs from base's (the
// number of the frame vs read last).
func (vs *valueState) changedSlots(nums, base []num) []bool {
	if cap(vs.changed) < len(nums) {
		vs.changed = make([]bool, len(nums))
	}
	c := vs.changed[:len(nums)]
	for i := range nums {
		c[i] = nums[i].m != base[i].m || !nums[i].sameShape(base[i])
	}
	return c
}

// slotValues gives the value of every slot read (read[i], every slot when
// read is nil) that num.float knows exactly, NaN for the others: the text
// is read for those (SlotMap.Apply). A slot not read keeps whatever it
// had: Apply does not look at it.
func (vs *valueState) slotValues(nums []num, read []bool) []float64 {
	if cap(vs.vals) < len(nums) {
		vs.vals = make([]float64, len(nums))
	}
	v := vs.vals[:len(nums)]
	// The text buffer is a local while the loop runs: set in vs each
	// time, it cost a write barrier a number while the collector marks.
	text := vs.text
	for i := range nums {
		if read != nil && !read[i] {
			continue
		}
		if f, ok := nums[i].float(); ok {
			v[i] = f
			continue
		}
		// Past Clinger's fast path (a float64 printed in 17 digits, as
		// Go and Envoy print sums): strconv on the number's own text, as
		// the parser reads it (expo's parseFloat: the text's bytes are
		// all ones it takes), not a render of the body.
		text = appendNum(text[:0], nums[i])
		if f, err := strconv.ParseFloat(unsafe.String(&text[0], len(text)), 64); err == nil {
			v[i] = f
		} else {
			v[i] = math.NaN() // the text is read, and refused
		}
	}
	vs.text = text
	return v
}
