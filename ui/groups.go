package ui

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// Grouping by layer: hundreds of replicas of one service (targets sharing
// a TargetStatus.Layer, the Prometheus job under discovery) would each be
// a row of the overview. With grouping on, the rows of a layer with more
// than one target fold into one row per (layer, dependency), the members'
// signals combined by analysis.Aggregate; enter on it opens the group's
// detail with its REPLICAS, and enter there a replica's own detail.
// Layers of one target, and targets without a layer, stay as they are.
//
// The groups are derived in the build Cmd (deriveGroups), like the
// services: Update only chooses which rows the overview shows.

// groupSet is a frame's rows folded by layer. It is never modified once
// built.
type groupSet struct {
	// frame is the overview's frame with grouping on: group rows and the
	// rows of targets not folded, with their timelines.
	frame model.Frame
	// rows are the raw frame's rows, which groupInfo.members index.
	rows []model.Signals
	info map[model.Key]*groupInfo
	// of maps a member row's key to its group row's key.
	of map[model.Key]model.Key
}

// groupInfo is one group row.
type groupInfo struct {
	layer string
	// members index rows, sorted by amplification, then attempts/s
	// (largest first, absent last), then target.
	members []int
	down    int // members whose target is down
}

// top is the key of the group's first member.
func (gs *groupSet) top(gi *groupInfo) model.Key {
	return gs.rows[gi.members[0]].Key()
}

// deriveGroups folds f's rows by layer; nil when no layer has more than
// one target, so that a frame without replicas looks exactly as before.
func deriveGroups(f *model.Frame) *groupSet {
	layerOf := make(map[string]string, len(f.Targets))
	size := make(map[string]int)
	down := make(map[string]bool)
	for i := range f.Targets {
		t := &f.Targets[i]
		if t.Layer == "" {
			continue
		}
		layerOf[t.Name] = t.Layer
		size[t.Layer]++
		if !t.Up {
			down[t.Name] = true
		}
	}
	fold := false
	for _, n := range size {
		fold = fold || n > 1
	}
	if !fold {
		return nil
	}
	gs := &groupSet{
		rows: f.Rows,
		info: make(map[model.Key]*groupInfo),
		of:   make(map[model.Key]model.Key),
		frame: model.Frame{
			Time: f.Time, Window: f.Window, Bin: f.Bin, Targets: f.Targets,
			Timelines: make(map[model.Key]*model.Timeline),
		},
	}
	// Group keys in order of first appearance, so the result does not
	// depend on map order.
	var keys []model.Key
	for i := range f.Rows {
		r := &f.Rows[i]
		layer := layerOf[r.Target]
		if size[layer] < 2 {
			gs.frame.Rows = append(gs.frame.Rows, *r)
			if tl, ok := f.Timelines[r.Key()]; ok {
				gs.frame.Timelines[r.Key()] = tl
			}
			continue
		}
		k := model.Key{Target: layer, Dependency: r.Dependency}
		gi := gs.info[k]
		if gi == nil {
			gi = &groupInfo{layer: layer}
			gs.info[k] = gi
			keys = append(keys, k)
		}
		gi.members = append(gi.members, i)
		if down[r.Target] {
			gi.down++
		}
	}
	// A target named like a layer it does not belong to would share the
	// group's key: the group then takes a name no target has.
	taken := make(map[model.Key]bool, len(gs.frame.Rows))
	for i := range gs.frame.Rows {
		taken[gs.frame.Rows[i].Key()] = true
	}
	info := make(map[model.Key]*groupInfo, len(keys))
	var buf []model.Signals
	var tls []*model.Timeline
	for _, k := range keys {
		gi := gs.info[k]
		rows := f.Rows
		slices.SortFunc(gi.members, func(a, b int) int { return compareMembers(&rows[a], &rows[b]) })
		name := k.Target
		for taken[model.Key{Target: name, Dependency: k.Dependency}] {
			name += " [layer]"
		}
		gk := model.Key{Target: name, Dependency: k.Dependency}
		buf, tls = buf[:0], tls[:0]
		for _, i := range gi.members {
			buf = append(buf, rows[i])
			if tl, ok := f.Timelines[rows[i].Key()]; ok {
				tls = append(tls, tl)
			}
			gs.of[rows[i].Key()] = gk
		}
		g := analysis.Aggregate(name, buf)
		gs.frame.Rows = append(gs.frame.Rows, g)
		if tl := analysis.AggregateTimeline(model.Key{Target: name}, tls); tl != nil {
			gs.frame.Timelines[gk] = tl
		}
		info[gk] = gi
	}
	gs.info = info
	return gs
}

// compareMembers orders replicas: the largest amplification first, then
// the most attempts/s (absent last in both), then by target.
func compareMembers(a, b *model.Signals) int {
	if c := descAbsentLast(a.Amplification, b.Amplification); c != 0 {
		return c
	}
	if c := descAbsentLast(a.AttemptsPerS, b.AttemptsPerS); c != 0 {
		return c
	}
	return strings.Compare(a.Target, b.Target)
}

func descAbsentLast(a, b model.Value) int {
	okA, okB := a.OK() && !math.IsNaN(a.V()), b.OK() && !math.IsNaN(b.V())
	switch {
	case okA && !okB:
		return -1
	case !okA && okB:
		return 1
	case okA && okB:
		return cmp.Compare(b.V(), a.V())
	}
	return 0
}

// groupDetailModel is the detail of a group row: the usual sections on
// the aggregated row and timeline, and its REPLICAS, one line each, with
// a cursor (up/down) whose replica enter opens. Page keys scroll.
type groupDetailModel struct {
	scroller
	key    model.Key
	cursor int       // position in the group's members
	sel    model.Key // the replica under the cursor, followed across refreshes
	hasSel bool
	// follow asks the next render to scroll the cursor into view (it
	// moved); selLine is the cursor's line in the rendered content.
	follow  bool
	selLine int
}

func (d *groupDetailModel) open(k model.Key) {
	if k != d.key {
		d.scroll, d.cursor, d.hasSel = 0, 0, false
	}
	d.key = k
	d.follow = false
	d.hint = "pgup/pgdn scroll"
	d.cacheKey = [3]uint64{}
}

// sync puts the cursor on its replica in gs (it follows the replica when
// a refresh reorders them; a replica that left leaves the cursor where it
// was) and returns the group, nil when gs does not have it.
func (d *groupDetailModel) sync(gs *groupSet) *groupInfo {
	if gs == nil {
		return nil
	}
	gi := gs.info[d.key]
	if gi == nil || len(gi.members) == 0 {
		return nil
	}
	if d.hasSel {
		for i, idx := range gi.members {
			if gs.rows[idx].Key() == d.sel {
				d.cursor = i
				break
			}
		}
	}
	d.cursor = min(max(d.cursor, 0), len(gi.members)-1)
	d.sel, d.hasSel = gs.rows[gi.members[d.cursor]].Key(), true
	return gi
}

// update moves the cursor (up/down) or scrolls (the other keys).
func (d *groupDetailModel) update(msg tea.KeyMsg, gs *groupSet) {
	k := &d.c.keys
	switch {
	case key.Matches(msg, k.Up):
		d.move(gs, -1)
	case key.Matches(msg, k.Down):
		d.move(gs, +1)
	default:
		d.scroller.update(msg)
	}
}

func (d *groupDetailModel) move(gs *groupSet, by int) {
	gi := d.sync(gs)
	if gi == nil {
		return
	}
	d.cursor = min(max(d.cursor+by, 0), len(gi.members)-1)
	d.sel = gs.rows[gi.members[d.cursor]].Key()
	d.follow = true
	d.cacheKey = [3]uint64{}
}

// selected is the replica under the cursor.
func (d *groupDetailModel) selected(gs *groupSet) (model.Key, bool) {
	if d.sync(gs) == nil {
		return model.Key{}, false
	}
	return d.sel, true
}

func (d *groupDetailModel) view(dst []line, gs *groupSet, f *model.Frame, seq uint64, width, height int) []line {
	if d.stale(seq, width) {
		d.cache = d.render(d.cache[:0], gs, f, width)
	}
	if d.follow {
		d.follow = false
		if d.selLine < d.scroll {
			d.scroll = d.selLine
		}
		if d.selLine >= d.scroll+height-1 {
			d.scroll = d.selLine - height + 2
		}
	}
	return d.show(dst, height)
}

func (d *groupDetailModel) render(dst []line, gs *groupSet, f *model.Frame, width int) []line {
	p := &d.pane
	l, st, g := &p.l, &d.c.st, d.c.g
	var row *model.Signals
	gi := d.sync(gs)
	if gi != nil {
		for i := range gs.frame.Rows {
			if gs.frame.Rows[i].Key() == d.key {
				row = &gs.frame.Rows[i]
				break
			}
		}
	}
	l.text("GROUP", st.title)
	l.pad(2)
	if gi == nil || row == nil {
		l.text(safetext.Terminal(d.key.Target), st.bold)
		l.plain(" " + g.to + " ")
		l.text(safetext.Terminal(d.key.Dependency), st.bold)
		dst = append(dst, l.line())
		l.text("this group is not in the current data (esc: back to the overview)", st.dim)
		return append(dst, l.line())
	}
	l.text(groupName(gi, g), st.bold)
	l.plain(" " + g.to + " ")
	l.text(safetext.Terminal(d.key.Dependency), st.bold)
	l.plain("  layer ")
	l.text(safetext.Terminal(gi.layer), st.text)
	if row.Dialect != "" {
		l.plain("  dialect ")
		l.text(safetext.Terminal(row.Dialect), st.text)
	}
	if gi.down > 0 {
		l.pad(2)
		l.text(g.down+" "+strconv.Itoa(gi.down)+" down", st.down)
	}
	dst = p.endTitle(dst, nil, "", width)

	tl := binsNoHist(gs.frame.Timelines[d.key])
	replicas := func(dst []line) []line {
		return d.replicasSection(dst, gs, gi, f, width)
	}
	return p.detailBody(dst, row, tl, &gs.frame, width, replicas)
}

// groupName is a group row's name: "checkout ×40".
func groupName(gi *groupInfo, g *glyphs) string {
	return safetext.Terminal(gi.layer) + " " + g.times + strconv.Itoa(len(gi.members))
}

// replica columns: header and width.
var replicaCols = [...]struct {
	head  string
	width int
}{{"ORIG/s", 7}, {"ATT/s", 7}, {"AMP", 7}, {"ERR/s", 7}, {"TMO/s", 7}, {"ACTIVE", 7}}

// replicasSection lists the group's members, the cursor's marked by a
// glyph (and reverse video with colours), down targets by theirs.
func (d *groupDetailModel) replicasSection(dst []line, gs *groupSet, gi *groupInfo, f *model.Frame, width int) []line {
	p := &d.pane
	l, st, g := &p.l, &d.c.st, d.c.g
	note := strconv.Itoa(len(gi.members)) + " · by amplification, then attempts/s · ↑↓ select, enter opens"
	if g == &asciiGlyphs {
		note = strconv.Itoa(len(gi.members)) + " - by amplification, then attempts/s - up/down select, enter opens"
	}
	dst = p.title(dst, "REPLICAS", note, width)

	downT := make(map[string]bool)
	if f != nil {
		for i := range f.Targets {
			if !f.Targets[i].Up {
				downT[f.Targets[i].Name] = true
			}
		}
	}
	cols := 0
	for _, c := range replicaCols {
		cols += 1 + c.width
	}
	nameW := len("TARGET")
	for _, idx := range gi.members {
		nameW = max(nameW, textWidth(safetext.Terminal(gs.rows[idx].Target)))
	}
	nameW = max(min(nameW, 40, width-markerW-cols), 8)

	l.pad(markerW)
	l.cell("TARGET", nameW, false, st.bold)
	for _, c := range replicaCols {
		l.pad(1)
		l.cell(c.head, c.width, true, st.bold)
	}
	dst = append(dst, trimSpaceRight(l.line()))
	for i, idx := range gi.members {
		r := &gs.rows[idx]
		if i == d.cursor {
			d.selLine = len(dst)
		}
		ol := l
		hl := p.rowStart(i == d.cursor, downT[r.Target], safetext.Terminal(r.Target), nameW)
		cell := func(b []byte, w int, sp span) {
			ol.pad(1)
			ol.cellBytes(b, w, true, unlessHL(hl, sp))
		}
		ol.num = appendRate(ol.num[:0], r.OriginalsPerS)
		cell(ol.num, 7, rateSpan(st, r.OriginalsPerS, st.text))
		ol.num = appendRate(ol.num[:0], r.AttemptsPerS)
		cell(ol.num, 7, rateSpan(st, r.AttemptsPerS, st.text))
		ol.num = appendAmp(ol.num[:0], r.Amplification)
		cell(ol.num, 7, ampSpan(st, r.Amplification))
		ol.num = appendRate(ol.num[:0], r.ProviderErrorsPerS)
		cell(ol.num, 7, rateSpan(st, r.ProviderErrorsPerS, st.outcome[outProvider]))
		ol.num = appendRate(ol.num[:0], r.TimeoutsPerS)
		cell(ol.num, 7, rateSpan(st, r.TimeoutsPerS, st.outcome[outTimeout]))
		ol.num = appendGauge(ol.num[:0], r.ActiveCalls)
		cell(ol.num, 7, limitSpan(st, r.ActiveCalls, r.ConcurrencyLimit))
		dst = append(dst, p.rowEnd(hl))
	}
	return dst
}
