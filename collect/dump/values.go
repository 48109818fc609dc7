package dump

import (
	"bytes"
	"sync"
	"unsafe"

	"github.com/retrytop/retrytop/collect"
	"github.com/retrytop/retrytop/model"
)

// Reading a frame's values without parsing its text.
//
// A steady target's frame mostly has exactly its previous frame's
// structure (the body's text with a slot where each number is: the
// codec's tokens), only other numbers. The parse of its body is then the
// previous parse with new values: per target, a recording keeps the last
// parse's collect.SlotMap (slot -> family, sample and field, built from
// what the parser reports of each value token it read), and a frame whose
// structure and content type are the mapped frame's is read by copying
// the parse and converting each slot's text, at its offset in the
// rendered body, with the parser's own value function (SlotMap.Apply):
// the same floats, bit for bit, by construction. The body is still
// rendered and checked against its checksum (a codec bug must not pass
// as a wrong number), but into the reader's buffer, not a copy.
//
// Anything else parses: the first frame of a target (of each Fork: a
// recording's map belongs to its own reader), another structure or
// content type, a parser other than collect.ExpfmtParser, a body the fast
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
	slots     *collect.SlotMap
	changed   []bool // scratch: the slots whose number changed
}

// valueFrame is a frame lent to the parse of a recording's snapshot: the
// recording's maps, the frame and the filter it parses with.
type valueFrame struct {
	f      *lentFrame
	filter func(string) bool
	vals   map[string]*valueState
	mapped *int // counts the frames read through a map (the tests')
}

// parse reads the frame as p.Parse would: through the target's map when
// the frame's structure is the mapped one's, else by parsing (and
// mapping the parse for the next frames).
func (v *valueFrame) parse(p collect.ExpfmtParser) ([]model.Family, error) {
	f := v.f
	vs := v.vals[f.Target]
	if vs != nil && vs.ct == f.ContentType && vs.slots.Slots()*2 == len(f.offs) &&
		((f.sameBase && f.base == vs.idx) || bytes.Equal(vs.structure, f.structure)) {
		// Decoded right from the frame read last: only the numbers that
		// changed since are read.
		var changed []bool
		if f.sameBase && f.base == vs.idx && len(f.baseNums) == len(f.nums) && len(f.nums)*2 == len(f.offs) {
			changed = vs.changedSlots(f.nums, f.baseNums)
		}
		if fams, ok := vs.slots.Apply(f.Body, f.offs, changed); ok {
			vs.idx = f.idx
			*v.mapped++
			return fams, nil
		}
	}
	fams, vm, err := p.ParseValues(f.Target, f.Body, f.ContentType, v.filter)
	if err != nil {
		delete(v.vals, f.Target)
		return nil, err
	}
	if sm := vm.Bind(fams, f.offs); sm != nil && !noValueMaps {
		if vs == nil {
			vs = &valueState{}
			v.vals[f.Target] = vs
		}
		vs.idx, vs.ct, vs.slots = f.idx, f.ContentType, sm
		vs.structure = append(vs.structure[:0], f.structure...)
	} else {
		delete(v.vals, f.Target)
	}
	return fams, nil
}

// snapshotValues is Snapshot of a dump: the frame is decoded and lent
// (not copied) to the parse, which reads it through the target's map
// when the recording's parser is collect.ExpfmtParser, or ValueParser
// under a wrapper (a dialect translator's Parsing).
func (d *dumpRecording) snapshotValues(i int) (*model.Snapshot, error) {
	var snap *model.Snapshot
	var scrapeErr error
	err := d.r.frameLent(i, func(f *lentFrame) error {
		v := &valueFrame{f: f, filter: d.filter, vals: d.vals, mapped: &d.mapped}
		var fams []model.Family
		var err error
		if p, ok := d.parser.(collect.ExpfmtParser); ok {
			fams, err = v.parse(p)
		} else {
			fams, err = v.parseThrough(d.parser)
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

// lent holds the frames lent to a parser, by their body's first byte:
// ValueParser finds the frame of the body it is asked to parse there.
var lent sync.Map // *byte -> *valueFrame

// parseThrough has parser parse the frame, with the frame lent to a
// ValueParser parser may call.
func (v *valueFrame) parseThrough(parser collect.Parser) ([]model.Family, error) {
	f := v.f
	if len(f.Body) == 0 {
		return parser.Parse(f.Target, f.Body, f.ContentType, v.filter)
	}
	key := unsafe.SliceData(f.Body)
	lent.Store(key, v)
	defer lent.Delete(key)
	return parser.Parse(f.Target, f.Body, f.ContentType, v.filter)
}

// ValueParser is collect.ExpfmtParser, which reads a dump recording's
// frames through the recording's value maps when it is the parser a
// wrapper calls (a dialect translator's Parsing of ValueParser.Parse as
// OpenOptions.Parser): the wrapper still sees every parse, and its own
// decisions stand. A body that is not the recording's frame being read,
// or is asked with another filter, is parsed.
type ValueParser struct{ collect.ExpfmtParser }

// Parse implements collect.Parser.
func (p ValueParser) Parse(target string, body []byte, contentType string, filter func(string) bool) ([]model.Family, error) {
	if len(body) > 0 {
		if x, ok := lent.Load(unsafe.SliceData(body)); ok {
			v := x.(*valueFrame)
			if f := v.f; f.Target == target && len(f.Body) == len(body) && f.ContentType == contentType && sameFunc(filter, v.filter) {
				return v.parse(p.ExpfmtParser)
			}
		}
	}
	return p.ExpfmtParser.Parse(target, body, contentType, filter)
}

// sameFunc reports whether a and b are the same func value (both nil, or
// the same closure).
func sameFunc(a, b func(string) bool) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
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
