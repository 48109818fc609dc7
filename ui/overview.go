package ui

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/celltext"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// colID is a numeric column of the overview table, in display order.
type colID int

const (
	colOrig colID = iota
	colAtt
	colAmp
	colEff
	colAttOK
	colRetry
	colHedge
	colRescued
	colBudget
	colAdmission
	colErrors
	colTimeouts
	colActive
	colPool
	colOK99
	colFF99
	numCols
)

// colSpec: header, the index of the glyph that prefixes the header in its
// table's glyph set (outcomes, service responses; -1: none), width, and
// priority (lower survives narrower terminals).
type colSpec struct {
	head  string
	glyph int
	width int
	prio  int
}

// The priorities are the shared columns' (celltext.Column), which
// analyze's text tables follow too: what carries an incident first
// (amplification and the traffic it multiplies), what users get, the
// retries and the timeouts and errors that start them, what protection
// turned away, then latency and capacity. A column that is zero or
// absent in every row goes after every other (celltext.FitRanked): at 80
// columns a storm's non-zero timeouts and retries show before protection
// that did nothing (docs/dashboard.md). The first column that does not
// fit ends the table, so a wider terminal keeps every column a narrower
// one does.
var colSpecs = [numCols]colSpec{
	colOrig:      {"ORIG/s", -1, 6, int(celltext.ColOrig)},
	colAtt:       {"ATT/s", -1, 6, int(celltext.ColAtt)},
	colAmp:       {"AMP", -1, 6, int(celltext.ColAmp)},
	colEff:       {"EFF%", -1, 6, int(celltext.ColEff)},
	colAttOK:     {"ATT%", -1, 6, int(celltext.ColAttOK)},
	colRetry:     {"RETR/s", -1, 6, int(celltext.ColRetry)},
	colHedge:     {"HDG/s", -1, 6, int(celltext.ColHedge)},
	colRescued:   {"RSC/s", int(outRescued), 6, int(celltext.ColRescued)},
	colBudget:    {"BDG/s", int(outBudget), 6, int(celltext.ColBudget)},
	colAdmission: {"ADM/s", int(outAdmission), 6, int(celltext.ColAdmission)},
	colErrors:    {"ERR/s", int(outProvider), 6, int(celltext.ColErrors)},
	colTimeouts:  {"TMO/s", int(outTimeout), 6, int(celltext.ColTimeouts)},
	colActive:    {"ACT/LIM", -1, 9, int(celltext.ColActive)},
	colPool:      {"POOL99", -1, 6, int(celltext.ColPool)},
	colOK99:      {"OK p99", -1, 6, int(celltext.ColOK99)},
	colFF99:      {"FF p99", -1, 6, int(celltext.ColFF99)},
}

// worstLow are the columns whose worst rows have the lowest values (the
// success ratios): sorting by them puts the lowest first.
var worstLow = [numCols]bool{colEff: true, colAttOK: true}

// colValue is the value behind a numeric column: its shared column's
// (celltext.ColumnValue), which analyze's text tables read too.
func colValue(id colID, s *model.Signals) model.Value {
	return celltext.ColumnValue(celltext.Column(colSpecs[id].prio), s)
}

// emptyCols marks the columns that are zero or absent in every row.
func emptyCols(rows []model.Signals) (empty [numCols]bool) {
	byCol := celltext.EmptyColumns(len(rows), func(i int) *model.Signals { return &rows[i] })
	for id := range empty {
		empty[id] = byCol[colSpecs[id].prio]
	}
	return empty
}

// tableLayout is which columns fit a width and how wide the names are.
type tableLayout struct {
	show            [numCols]bool
	targetW, depW   int
	hidden          int
	width, natT, nD int
	empty           [numCols]bool // the columns demoted for being empty
}

const (
	markerW  = 2  // selection and target-down markers
	minNameW = 16 // names identify rows: they give way after most columns
)

func computeLayout(width, natT, natD int, empty [numCols]bool) tableLayout {
	lay := tableLayout{width: width, natT: natT, nD: natD, empty: empty}
	natT = max(natT, len("TARGET"))
	natD = max(natD, len("DEPENDENCY"))
	lay.targetW, lay.depW = min(natT, minNameW), min(natD, minNameW)
	used := markerW + lay.targetW + 1 + lay.depW
	var rank, cost [numCols]int
	for id, sp := range colSpecs {
		rank[id], cost[id] = sp.prio, 1+sp.width
	}
	used, show := celltext.FitRanked(rank[:], cost[:], empty[:], used, width)
	for id := range show {
		lay.show[id] = show[id]
		if !show[id] {
			lay.hidden++
		}
	}
	// Spare columns widen the names, target first, up to 32 each.
	spare := width - used
	grow := min(spare, min(natT, 32)-lay.targetW)
	if grow > 0 {
		lay.targetW += grow
		spare -= grow
	}
	grow = min(spare, min(natD, 32)-lay.depW)
	if grow > 0 {
		lay.depW += grow
	}
	return lay
}

// fitColumns shows columns by priority while they fit width after used
// columns, one space before each; it returns the width used and how many
// columns were left out.
func fitColumns(specs []colSpec, show []bool, used, width int) (int, int) {
	var buf [32]int
	order := buf[:0]
	for i := range specs {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(specs[a].prio, specs[b].prio) })
	hidden := 0
	for _, id := range order {
		if used+1+specs[id].width <= width {
			show[id] = true
			used += 1 + specs[id].width
		} else {
			hidden++
		}
	}
	return used, hidden
}

// rowNames are a row's sanitised names and its lower-case filter text;
// members is the size of a group row (0: a target's row), whose name
// changes with it.
type rowNames struct {
	target, dep, hay string
	members          int
}

// overviewModel is the table of (target, dependency) rows with sorting,
// filtering, a selection that follows its row across refreshes, and a
// preview of the selected row under the table; below it the SERVICES
// section, one row per service target. The cursor runs through the caller
// rows, then the service rows.
type overviewModel struct {
	c     *common
	frame *model.Frame
	order []int // indices into frame.Rows, in display order

	// sortBy is the column the rows are sorted by, worst first (s and S
	// step it through the columns on screen).
	sortBy    colID
	filter    textinput.Model
	filtering bool
	terms     []string

	cursor, offset int
	sel            model.Key // the wanted row; kept while it is absent
	hasSel         bool
	selSvc         bool // sel is a service row (sel.Target names it)
	visible        int  // table rows on screen at the last render

	services  []model.ServiceSignals // of the frame on screen, by target
	svcOrder  []int                  // indices into services passing the filter
	svcNames  map[string]rowNames
	natS      int
	svcLay    svcLayout
	svcOffset int

	names map[model.Key]rowNames
	down  map[string]bool
	// derived marks, per target, the columns a custom mapping derives
	// (Options.Derived); nil when none does.
	derived map[string][numCols]bool
	// shown is the name a target is shown by when it did not name itself
	// for the user: its service (target_info, job), with the address when
	// replicas share it.
	shown map[string]string
	// groups are the frame's groups when it shows them folded (grouping
	// on and some layer has replicas), else nil.
	groups *groupSet
	// groupable: the frame has groups, shown folded or not.
	groupable  bool
	natT, natD int
	empty      [numCols]bool // columns zero or absent in every row

	pane painter
	lay  tableLayout

	// chains and found are the frame's chains and findings, for the tall
	// layout's story.
	chains   []analysis.ChainResult
	found    []analysis.Finding
	storyBuf []line

	// hits are the selectable rows on screen at the last render: the line
	// (from the overview's first) and the cursor position, for the mouse.
	hits []rowHit

	rev      uint64 // bumped on every change that alters the table
	cacheKey [3]uint64
	cache    []line
}

func newOverview(c *common) overviewModel {
	ti := textinput.New()
	ti.Prompt = "/"
	ti.Placeholder = "target, dependency or service"
	ti.CharLimit = 64
	ti.Cursor.SetMode(cursor.CursorStatic) // no blinking: nothing ticks
	r := c.opts.Renderer
	ti.PromptStyle = r.NewStyle()
	ti.TextStyle = r.NewStyle()
	ti.PlaceholderStyle = r.NewStyle()
	ti.Cursor.Style = r.NewStyle()
	ti.Cursor.TextStyle = r.NewStyle()
	if !c.opts.NoColor {
		ti.Cursor.Style = r.NewStyle().Reverse(true)
	}
	return overviewModel{
		c:        c,
		sortBy:   colAmp,
		filter:   ti,
		names:    make(map[model.Key]rowNames),
		svcNames: make(map[string]rowNames),
		down:     make(map[string]bool),
		shown:    make(map[string]string),
		pane:     painter{c: c},
	}
}

func (o *overviewModel) setWidth(w int) {
	o.filter.Width = max(w-40, 10)
	o.rev++
}

// setFrame shows a new frame and its services, keeping the selection on
// its row. gs are its groups when f is the folded frame (nil otherwise).
func (o *overviewModel) setFrame(f *model.Frame, services []model.ServiceSignals, gs *groupSet) {
	o.remapSelection(o.groups, gs)
	o.frame = f
	o.groups = gs
	o.services = services
	if len(o.svcNames) > 4*len(services)+64 {
		clear(o.svcNames)
	}
	o.natS = 0
	for i := range services {
		o.natS = max(o.natS, textWidth(o.svcNamesOf(&services[i]).target))
	}
	clear(o.down)
	o.derived = nil
	for i := range f.Targets {
		if !f.Targets[i].Up {
			o.down[f.Targets[i].Name] = true
		}
		if cols, ok := derivedCols(o.c.opts.Derived, f.Targets[i].Dialect); ok {
			if o.derived == nil {
				o.derived = map[string][numCols]bool{}
			}
			o.derived[f.Targets[i].Name] = cols
		}
	}
	o.setShownNames(f.Targets)
	if len(o.names) > 4*len(f.Rows)+64 {
		clear(o.names)
	}
	o.empty = emptyCols(f.Rows)
	o.natT, o.natD = 0, 0
	for i := range f.Rows {
		n := o.namesOf(&f.Rows[i])
		o.natT = max(o.natT, textWidth(n.target))
		o.natD = max(o.natD, textWidth(n.dep))
	}
	o.refresh()
}

func (o *overviewModel) namesOf(s *model.Signals) rowNames {
	k := s.Key()
	var gi *groupInfo
	if o.groups != nil {
		gi = o.groups.info[k]
	}
	members := 0
	if gi != nil {
		members = len(gi.members)
	}
	n, ok := o.names[k]
	if !ok || n.members != members {
		n.target, n.dep, n.members = safetext.Terminal(s.Target), safetext.Terminal(s.Dependency), members
		if name, ok := o.shown[s.Target]; ok {
			n.target = safetext.Terminal(name)
		}
		if gi != nil {
			n.target = groupName(gi, o.c.g)
		}
		n.hay = strings.ToLower(n.target + " " + n.dep + " " + safetext.Terminal(s.Dialect))
		o.names[k] = n
	}
	return n
}

// setShownNames names the targets that named themselves (target_info)
// or were named by their job after their service; the address stays when
// replicas share the service, so rows stay apart.
func (o *overviewModel) setShownNames(targets []model.TargetStatus) {
	count := make(map[string]int, len(targets))
	for i := range targets {
		count[targets[i].Service]++
	}
	changed := false
	seen := 0
	for i := range targets {
		t := &targets[i]
		if t.Service == "" || t.Service == t.Name || (t.NameSource != "target_info" && t.NameSource != "job") {
			continue
		}
		seen++
		name := t.Service
		if count[t.Service] > 1 {
			name += " " + t.Name
		}
		if o.shown[t.Name] != name {
			o.shown[t.Name] = name
			changed = true
		}
	}
	if changed || len(o.shown) != seen {
		if len(o.shown) != seen {
			clear(o.shown)
			o.setShownNames(targets)
		}
		clear(o.names) // cached row names hold the old ones
	}
}

// isDown: a target row's target is down, or a member of a group row's.
func (o *overviewModel) isDown(s *model.Signals) bool {
	if o.groups != nil {
		if gi := o.groups.info[s.Key()]; gi != nil {
			return gi.down > 0
		}
	}
	return o.down[s.Target]
}

// group is the group row under the cursor, if it is one.
func (o *overviewModel) group() (model.Key, *groupInfo, bool) {
	k, ok := o.selectedKey()
	if !ok || o.groups == nil {
		return k, nil, false
	}
	gi := o.groups.info[k]
	return k, gi, gi != nil
}

// remapSelection carries the wanted row over a change of grouping (the
// toggle, or replicas coming and going): a member's row becomes its
// group's, and a group that is no longer shown becomes its first member.
func (o *overviewModel) remapSelection(old, gs *groupSet) {
	if !o.hasSel || o.selSvc {
		return
	}
	if old != nil && old != gs {
		if gi := old.info[o.sel]; gi != nil && (gs == nil || gs.info[o.sel] == nil) {
			o.sel = old.top(gi)
		}
	}
	if gs != nil {
		if gk, ok := gs.of[o.sel]; ok {
			o.sel = gk
		}
	}
}

// refresh recomputes the visible rows (filter, sort) and puts the cursor
// back on the selected row.
func (o *overviewModel) refresh() {
	o.rev++
	o.order = o.order[:0]
	if o.frame == nil {
		return
	}
	rows := o.frame.Rows
	for i := range rows {
		if o.matches(&rows[i]) {
			o.order = append(o.order, i)
		}
	}
	slices.SortFunc(o.order, func(a, b int) int { return o.compare(&rows[a], &rows[b]) })
	// Services stay in name order whatever the caller sort.
	o.svcOrder = o.svcOrder[:0]
	for i := range o.services {
		if o.matchesSvc(&o.services[i]) {
			o.svcOrder = append(o.svcOrder, i)
		}
	}
	svcs := o.services
	slices.SortFunc(o.svcOrder, func(a, b int) int { return strings.Compare(svcs[a].Target, svcs[b].Target) })
	n := o.total()
	if n == 0 {
		o.cursor = 0
		return
	}
	if o.hasSel {
		if i, ok := o.find(); ok {
			o.cursor = i
			return
		}
		// The selected row is not here (filtered out, gone for now): stay
		// at the same position, remember the row in case it comes back.
		o.cursor = min(max(o.cursor, 0), n-1)
		return
	}
	o.cursor = 0
	// With service rows only (the first scrapes of a fleet can bring a
	// service before its callers) the cursor is on the first but does not
	// hold to it, so the first caller row to come is the selection, as
	// when the callers came first.
	if len(o.order) > 0 {
		o.selectAt(0)
	}
}

// total is the number of selectable rows: callers, then services.
func (o *overviewModel) total() int { return len(o.order) + len(o.svcOrder) }

// onService reports whether the cursor is in the SERVICES section.
func (o *overviewModel) onService() bool {
	return o.cursor >= len(o.order) && o.cursor < o.total()
}

// find is the position of the wanted row among the visible ones.
func (o *overviewModel) find() (int, bool) {
	if o.selSvc {
		for i, idx := range o.svcOrder {
			if o.services[idx].Target == o.sel.Target {
				return len(o.order) + i, true
			}
		}
		return 0, false
	}
	rows := o.frame.Rows
	for i, idx := range o.order {
		if rows[idx].Key() == o.sel {
			return i, true
		}
	}
	return 0, false
}

// selectAt makes the row at position i the wanted one.
func (o *overviewModel) selectAt(i int) {
	if i < len(o.order) {
		o.sel, o.selSvc = o.frame.Rows[o.order[i]].Key(), false
	} else {
		o.sel, o.selSvc = model.Key{Target: o.services[o.svcOrder[i-len(o.order)]].Target}, true
	}
	o.hasSel = true
}

func (o *overviewModel) matches(s *model.Signals) bool {
	if len(o.terms) == 0 {
		return true
	}
	hay := o.namesOf(s).hay
	for _, t := range o.terms {
		if !strings.Contains(hay, t) {
			return false
		}
	}
	return true
}

// compare orders rows by the sort key, largest first, absent values last,
// then by target and dependency so equal rows never swap between frames.
func (o *overviewModel) compare(a, b *model.Signals) int {
	va, vb := colValue(o.sortBy, a), colValue(o.sortBy, b)
	okA, okB := va.OK() && !math.IsNaN(va.V()), vb.OK() && !math.IsNaN(vb.V())
	switch {
	case okA && !okB:
		return -1
	case !okA && okB:
		return 1
	case okA && okB && va.V() != vb.V():
		if (va.V() > vb.V()) != worstLow[o.sortBy] {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.Target, b.Target); c != 0 {
		return c
	}
	return strings.Compare(a.Dependency, b.Dependency)
}

// selectedKey is the caller row under the cursor; false when the cursor
// is on a service row or there is none.
func (o *overviewModel) selectedKey() (model.Key, bool) {
	if o.frame == nil || o.cursor >= len(o.order) {
		return model.Key{}, false
	}
	return o.frame.Rows[o.order[o.cursor]].Key(), true
}

// selectedService is the service row under the cursor.
func (o *overviewModel) selectedService() (*model.ServiceSignals, bool) {
	if o.frame == nil || !o.onService() {
		return nil, false
	}
	return &o.services[o.svcOrder[o.cursor-len(o.order)]], true
}

func (o *overviewModel) moveTo(i int) {
	n := o.total()
	if o.frame == nil || n == 0 {
		return
	}
	o.cursor = min(max(i, 0), n-1)
	o.selectAt(o.cursor)
	o.rev++
}

// rowHit is a row on screen: its line and its cursor position.
type rowHit struct{ y, pos int }

// rowAt is the cursor position of the row on line y of the overview.
func (o *overviewModel) rowAt(y int) (int, bool) {
	for _, h := range o.hits {
		if h.y == y {
			return h.pos, true
		}
	}
	return 0, false
}

// follow makes k (a row of the ungrouped frame) the wanted row, or its
// group's row when replicas are folded; a row filtered out stays wanted
// and the cursor where it was.
func (o *overviewModel) follow(k model.Key) {
	if o.groups != nil {
		if gk, ok := o.groups.of[k]; ok {
			k = gk
		}
	}
	if o.hasSel && !o.selSvc && o.sel == k {
		return
	}
	o.sel, o.selSvc, o.hasSel = k, false, true
	o.refresh()
}

func (o *overviewModel) setFilter(s string) {
	o.terms = strings.Fields(strings.ToLower(s))
	o.refresh()
}

// update handles the overview's keys.
func (o *overviewModel) update(msg tea.KeyMsg) tea.Cmd {
	k := &o.c.keys
	if o.filtering {
		switch {
		case key.Matches(msg, k.AcceptFilter):
			o.filtering = false
			o.filter.Blur()
			o.rev++
			return nil
		case key.Matches(msg, k.CancelFilter):
			o.filtering = false
			o.filter.Blur()
			o.filter.Reset()
			o.setFilter("")
			return nil
		}
		before := o.filter.Value()
		var cmd tea.Cmd
		o.filter, cmd = o.filter.Update(msg)
		if v := o.filter.Value(); v != before {
			o.setFilter(v)
		}
		o.rev++
		return cmd
	}
	page := max(o.visible-1, 1)
	switch {
	case key.Matches(msg, k.Up):
		o.moveTo(o.cursor - 1)
	case key.Matches(msg, k.Down):
		o.moveTo(o.cursor + 1)
	case key.Matches(msg, k.PageUp):
		o.moveTo(o.cursor - page)
	case key.Matches(msg, k.PageDown):
		o.moveTo(o.cursor + page)
	case key.Matches(msg, k.Top):
		o.moveTo(0)
	case key.Matches(msg, k.Bottom):
		o.moveTo(o.total() - 1)
	case key.Matches(msg, k.Sort):
		o.stepSort(+1)
	case key.Matches(msg, k.SortBack):
		o.stepSort(-1)
	case key.Matches(msg, k.Filter):
		o.filtering = true
		o.filter.CursorEnd()
		o.rev++
		return o.filter.Focus()
	case key.Matches(msg, k.Back):
		if o.filter.Value() != "" {
			o.filter.Reset()
			o.setFilter("")
		}
	}
	return nil
}

// knows reports whether msg is one of the overview's own keys.
func (o *overviewModel) knows(msg tea.KeyMsg) bool {
	k := &o.c.keys
	return key.Matches(msg, k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Sort, k.SortBack, k.Filter, k.Back)
}

// stepSort sorts by the next (d > 0) or previous column on screen, in
// display order, wrapping around.
func (o *overviewModel) stepSort(d int) {
	id := o.sortBy
	for range numCols {
		id = (id + colID(d) + numCols) % numCols
		if o.lay.width == 0 || o.lay.show[id] {
			break
		}
	}
	o.sortBy = id
	o.refresh()
}

// tallHeight is the screen height from which the overview also tells the
// story: the chains as one line each and the findings with their advice.
// Below it the compact layout stays (findings in the strip).
const tallHeight = 45

// tall reports whether the overview shows its CHAINS and FINDINGS.
func (o *overviewModel) tall() bool { return o.c.height >= tallHeight }

// view renders the table and, when there is room, the selected row's
// preview under it. The preview takes every line the rows leave: its
// charts grow with the screen.
func (o *overviewModel) view(dst []line, width, height int) []line {
	ck := [3]uint64{o.rev, uint64(width), uint64(height)}
	if o.cache != nil && ck == o.cacheKey {
		return append(dst, o.cache...)
	}
	if o.lay.width != width || o.lay.natT != o.natT || o.lay.nD != o.natD || o.lay.empty != o.empty {
		o.lay = computeLayout(width, o.natT, o.natD, o.empty)
	}
	if len(o.services) > 0 && (o.svcLay.width != width || o.svcLay.natN != o.natS) {
		o.svcLay = computeSvcLayout(width, o.natS)
	}
	out := o.cache[:0]
	o.hits = o.hits[:0]
	wide := width >= wideWidth

	// The story (tall screens): it gives way when the rows need the room.
	var story []line
	if o.tall() {
		story = o.story(o.storyBuf[:0], width)
		o.storyBuf = story
		if len(story) > 0 && height-len(story) < 24 {
			story = story[:0]
		}
	}
	height -= len(story)

	// Height: the caller table first, then the services; a preview when at
	// least a few rows of each and the preview fit. Without room for the
	// preview the callers keep priority, but the SERVICES title and a line
	// saying how many are hidden always show (the selected service row
	// too when the cursor is there).
	n, ns := len(o.order), len(o.svcOrder)
	tableNeed := 2 + max(n, 1)
	svcNeed, svcMin := 0, 0
	if len(o.services) > 0 {
		svcNeed, svcMin = 2+max(ns, 1), 2
		if o.onService() {
			svcMin = 3
		}
	}
	previewMin := 8
	if !wide {
		previewMin = 7
	}
	tableH, svcH := height, 0
	if svcNeed > 0 {
		tableH = min(tableNeed, height-svcMin)
		svcH = min(svcNeed, height-tableH)
	}
	room := 0 // lines for the preview, after its blank line
	sel, hasRow := o.selectedRow()
	svc, hasSvc := o.selectedService()
	tableMin := min(tableNeed, 2+min(n, 5))
	svcFloor := min(svcNeed, 2+min(max(ns, 1), 3))
	if (hasRow || hasSvc) && height-previewMin-1 >= tableMin+svcFloor {
		extra := height - previewMin - 1 - tableMin - svcFloor
		tableH = tableMin + min(tableNeed-tableMin, extra)
		extra -= tableH - tableMin
		svcH = svcFloor + min(svcNeed-svcFloor, extra)
		room = height - tableH - svcH - 1
		if room-5 < 3 && svcNeed > 0 {
			// No preview after all: the rows take the room back.
			room = 0
			tableH = min(tableNeed, height-svcMin)
			svcH = min(svcNeed, height-tableH)
		}
	}
	out = o.table(out, width, tableH)
	if svcNeed > 0 {
		out = o.svcTable(out, width, svcH)
	}
	out = append(out, story...)
	if hasSvc && room-5 >= 3 {
		// The selected service's signals; its charts are in its detail.
		out = append(out, line{})
		out = o.pane.serviceSignalsSection(out, svc, "SERVICE "+o.svcNamesOf(svc).target, width)
	} else if hasRow && room-5 >= 3 {
		out = append(out, line{})
		out = o.preview(out, sel, width, room, wide)
	}
	if len(out) > height+len(story) {
		out = out[:height+len(story)]
	}
	o.cache, o.cacheKey = out, ck
	return append(dst, out...)
}

// preview draws the selected row's charts into room lines: originals vs
// attempts and the outcomes side by side when wide (the latency
// histograms under them when they fit), stacked otherwise.
func (o *overviewModel) preview(out []line, sel *model.Signals, width, room int, wide bool) []line {
	tl := binsNoHist(o.frame.Timelines[sel.Key()])
	p := &o.pane
	names := o.namesOf(sel)
	name := names.target + " " + o.c.g.to + " " + names.dep
	if !wide {
		// Stacked: the outcomes (title and seven rows, after a blank line)
		// only when the traffic chart keeps at least 3 rows.
		const outcomesH = 1 + 1 + int(numOutcomes)
		fixed := trafficFixed(len(tl), width)
		chartH := room - fixed
		withOutcomes := room-fixed-outcomesH >= 3 && o.tall()
		if withOutcomes {
			chartH -= outcomesH
		} else if !o.tall() {
			chartH = min(chartH, 8)
			withOutcomes = room-fixed-chartH >= outcomesH
		}
		out = p.trafficSection(out, sel, tl, o.frame, name, width, chartH)
		if withOutcomes {
			out = append(out, line{})
			out = p.outcomeSection(out, sel, tl, o.frame, width, 1)
		}
		return out
	}
	leftW := (width - 3) / 2
	rightW := width - leftW - 3
	// The latency histograms go under the charts when the charts keep a
	// useful height (8 rows beside the seven outcomes) without them.
	chartsH := room
	fixed := trafficFixed(len(tl), leftW)
	var lat []line
	// The histograms take at least a title, a class line, its quantiles
	// and a bucket: render them only when that much fits.
	const latMin = 4
	if room-fixed-8-1 >= latMin {
		lat = p.latencySection(p.latBuf[:0], sel, width, true)
		p.latBuf = lat
		if room-len(lat)-1-fixed >= 8 {
			chartsH = room - len(lat) - 1
		} else {
			lat = nil
		}
	}
	chartH := chartsH - fixed
	perOutcome := max(1, (chartsH-1)/int(numOutcomes))
	left := p.trafficSection(nil, sel, tl, o.frame, name, leftW, chartH)
	right := p.outcomeSection(nil, sel, tl, o.frame, rightW, perOutcome)
	out = append(out, joinColumns([][]line{left, right}, []int{leftW, 0}, "   ")...)
	if lat != nil {
		out = append(out, line{})
		out = append(out, lat...)
	}
	return out
}

// story is the tall overview's CHAINS (one line per chain: each hop with
// its amplification, then the end-to-end and worst-case figures) and
// FINDINGS (each with its advice), at most a few of each: the findings
// pane has them all.
func (o *overviewModel) story(dst []line, width int) []line {
	st, g := &o.c.st, o.c.g
	l := &o.pane.l
	const maxChains, maxFindings = 3, 4
	if len(o.chains) > 0 {
		note := strconv.Itoa(len(o.chains)) + " chain"
		if len(o.chains) != 1 {
			note += "s"
		}
		note += ", worst case = product of max attempts · tab: the chain view"
		// No blank line before a title: its rule separates, and the
		// screen's lines go to the charts.
		dst = o.pane.title(dst, "CHAINS", note, width)
		for i := range o.chains[:min(len(o.chains), maxChains)] {
			dst = append(dst, o.chainLine(&o.chains[i], width))
		}
	}
	if len(o.found) > 0 {
		note := strconv.Itoa(len(o.found)) + " finding"
		if len(o.found) != 1 {
			note += "s"
		}
		note += ", most severe first"
		if len(o.found) > maxFindings {
			note += " · " + o.c.keys.Findings.Help().Key + ": all of them"
		}
		dst = o.pane.title(dst, "FINDINGS", note, width)
		for i := range o.found[:min(len(o.found), maxFindings)] {
			fd := &o.found[i]
			sp := st.warn
			if fd.Severity == analysis.SeverityCritical {
				sp = st.down
			}
			l.text(g.warn, sp)
			l.pad(1)
			l.text(strings.ToUpper(fd.Severity.String()), sp)
			l.pad(1)
			l.text(safetext.Terminal(fd.Code), st.bold)
			l.pad(1)
			l.cell(findingWhere(fd, g)+": "+findingMessage(fd), width-l.w, false, st.text)
			dst = append(dst, trimSpaceRight(l.line()))
			if a := adviceFor(fd.Code); a != "" {
				l.pad(2)
				l.text(g.to, st.dim)
				l.pad(1)
				l.cell(a, width-l.w, false, st.dim)
				dst = append(dst, trimSpaceRight(l.line()))
			}
		}
	}
	return dst
}

// findingWhere names what a finding is about: "app → client", or
// "chain checkout".
func findingWhere(fd *analysis.Finding, g *glyphs) string {
	if fd.Chain != "" {
		return "chain " + safetext.Terminal(fd.Chain)
	}
	if fd.Dependency == "" {
		return safetext.Terminal(fd.Target) // about the target itself
	}
	return safetext.Terminal(fd.Target) + " " + g.to + " " + safetext.Terminal(fd.Dependency)
}

// appendTimes writes an amplification for the chain line: 2.5×, 27×.
func appendTimes(b []byte, v model.Value, g *glyphs) []byte {
	b = appendAmpShort(b, v)
	if v.OK() {
		b = append(b, g.times...)
	}
	return b
}

// findingMessage is a finding's message without the "target -> dependency: "
// it starts with, which the line already says (sanitised).
func findingMessage(fd *analysis.Finding) string {
	msg := strings.TrimPrefix(fd.Message, fd.Target+" -> "+fd.Dependency+": ")
	return safetext.Terminal(msg)
}

// chainLine is one chain on one line: "browser 1.0× → app 1.0× → client
// 2.5× → provider   end-to-end 2.5×  worst case 27×", cut with "…".
func (o *overviewModel) chainLine(c *analysis.ChainResult, width int) line {
	st, g := &o.c.st, o.c.g
	l := &o.pane.l
	var b []byte
	l.pad(2)
	for i := range c.Hops {
		h := &c.Hops[i]
		l.text(safetext.Terminal(h.Target), st.bold)
		l.pad(1)
		l.bytes(appendTimes(b[:0], h.Amplification, g), ampSpan(st, h.Amplification))
		l.text(" "+g.to+" ", st.dim)
		if i == len(c.Hops)-1 {
			l.text(safetext.Terminal(h.Dependency), st.bold)
		}
	}
	l.text("   end-to-end ", st.dim)
	l.bytes(appendTimes(b[:0], c.EndToEndAmplification, g), ampSpan(st, c.EndToEndAmplification))
	l.text("  worst case ", st.dim)
	l.bytes(appendTimes(b[:0], c.WorstCaseAmplification, g), ampSpan(st, c.WorstCaseAmplification))
	ln := l.line()
	if ln.w > width {
		ln = line{s: ansi.Truncate(ln.s, width, g.ellipsis), w: width}
	}
	return trimSpaceRight(ln)
}

func (o *overviewModel) selectedRow() (*model.Signals, bool) {
	if o.frame == nil || o.cursor >= len(o.order) {
		return nil, false
	}
	return &o.frame.Rows[o.order[o.cursor]], true
}

// table renders the title, the column header and the visible rows.
func (o *overviewModel) table(dst []line, width, height int) []line {
	st, g := &o.c.st, o.c.g
	l := &o.pane.l
	lay := &o.lay

	// Scroll so the cursor is visible (when it is on a caller row).
	o.visible = max(height-2, 1)
	n := len(o.order)
	if o.cursor < n {
		if o.cursor < o.offset {
			o.offset = o.cursor
		}
		if o.cursor >= o.offset+o.visible {
			o.offset = o.cursor - o.visible + 1
		}
	}
	o.offset = min(max(o.offset, 0), max(n-o.visible, 0))

	// Title.
	b := l.num[:0]
	if n > o.visible {
		b = append(b, "rows "...)
		b = strconv.AppendInt(b, int64(o.offset+1), 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(min(o.offset+o.visible, n)), 10)
		b = append(b, " of "...)
	}
	b = strconv.AppendInt(b, int64(n), 10)
	if n == 1 {
		b = append(b, " row"...)
	} else {
		b = append(b, " rows"...)
	}
	// Whether replicas are folded (a toggles it), when there are any.
	switch {
	case o.groups != nil:
		b = append(b, " by layer"...)
	case o.groupable:
		b = append(b, " by target"...)
	}
	b = append(b, " · sort "...)
	b = append(b, colSpecs[o.sortBy].head...)
	b = append(b, ' ')
	if worstLow[o.sortBy] {
		b = append(b, g.arrowUp...)
	} else {
		b = append(b, g.arrowDown...)
	}
	if v := o.filter.Value(); v != "" && !o.filtering {
		b = append(b, " · filter \""...)
		b = append(b, v...)
		b = append(b, '"')
	}
	if lay.hidden > 0 {
		b = append(b, " · +"...)
		b = strconv.AppendInt(b, int64(lay.hidden), 10)
		b = append(b, " cols: widen or enter"...)
	}
	l.num = b
	dst = o.pane.title(dst, "OVERVIEW", string(b), width)

	// Column header.
	l.pad(markerW)
	l.cell("TARGET", lay.targetW, false, st.bold)
	l.pad(1)
	l.cell("DEPENDENCY", lay.depW, false, st.bold)
	o.headCells(colSpecs[:], lay.show[:], g.outcome[:], st.outcome[:])
	dst = append(dst, trimSpaceRight(l.line()))

	if n == 0 {
		return o.noRows(dst, height-2)
	}

	rows := o.frame.Rows
	end := min(o.offset+o.visible, n)
	for i := o.offset; i < end; i++ {
		o.hits = append(o.hits, rowHit{y: len(dst), pos: i})
		dst = append(dst, o.row(&rows[o.order[i]], i == o.cursor))
	}
	return dst
}

// noRows says why the table has no row, in at most room lines: the
// filter hides them, the targets are still connecting (each with its
// URL), every target is down (each with its error), or the targets
// answer without retry metrics.
func (o *overviewModel) noRows(dst []line, room int) []line {
	st, g := &o.c.st, o.c.g
	l := &o.pane.l
	var ts []model.TargetStatus
	if o.frame != nil {
		ts = o.frame.Targets
	}
	waiting, down := 0, 0
	for i := range ts {
		switch {
		case ts[i].Up:
		case !tried(&ts[i]) && o.c.opts.Mode == ModeLive:
			waiting++
		default:
			down++
		}
	}
	msg, list := "waiting for the first scrape…", false
	switch {
	case o.frame != nil && len(o.frame.Rows) > 0:
		msg = "no row matches the filter (esc clears it)"
	case len(ts) > 0 && waiting == len(ts):
		msg, list = "connecting to "+strconv.Itoa(len(ts))+" targets, the first scrapes are under way:", true
	case len(ts) > 0 && down == len(ts):
		msg, list = "every target is down, no data:", true
	case waiting > 0:
		msg, list = strconv.Itoa(waiting)+" of "+strconv.Itoa(len(ts))+" targets still connecting, no retry metrics yet:", true
	case o.frame != nil && !o.frame.Time.IsZero():
		msg = "no retry metrics found on any target yet"
	}
	l.pad(markerW)
	l.text(msg, st.dim)
	dst = append(dst, l.line())
	if !list {
		return dst
	}
	nameW := 4
	for i := range ts {
		nameW = max(nameW, textWidth(safetext.Terminal(ts[i].Name)))
	}
	nameW = min(nameW, 24)
	width := o.c.width
	for i := range ts[:min(len(ts), max(room-1, 0))] {
		t := &ts[i]
		state, sp, what := "up", st.text, safetext.Terminal(t.URL)
		switch {
		case t.Up:
		case !tried(t) && o.c.opts.Mode == ModeLive:
			state, sp = "...", st.dim
		default:
			state, sp = g.down+" down", st.down
			if e := safetext.Terminal(t.LastError); e != "" {
				what += "  " + e
			}
		}
		l.pad(markerW + 2)
		l.cell(safetext.Terminal(t.Name), nameW, false, st.bold)
		l.pad(1)
		l.cell(state, 6, false, sp)
		l.pad(1)
		l.cell(what, max(width-l.w, 1), false, st.text)
		dst = append(dst, trimSpaceRight(l.line()))
	}
	return dst
}

// headCells writes the column headers that are shown, each prefixed by
// its glyph (not in ASCII, where headers stay words).
func (o *overviewModel) headCells(specs []colSpec, show []bool, glyphs []string, spans []span) {
	st, g := &o.c.st, o.c.g
	l := &o.pane.l
	for id := range specs {
		if !show[id] {
			continue
		}
		cs := &specs[id]
		l.pad(1)
		if cs.glyph >= 0 && g != &asciiGlyphs {
			l.pad(cs.width - len(cs.head) - 1)
			l.text(glyphs[cs.glyph], spans[cs.glyph])
			l.text(cs.head, st.bold)
		} else {
			l.cell(cs.head, cs.width, true, st.bold)
		}
	}
}

// row renders one table row. The selected row is marked by a glyph (and
// reverse video when colours are on), so it reads without colour too.
func (o *overviewModel) row(s *model.Signals, selected bool) line {
	st := &o.c.st
	l := &o.pane.l
	lay := &o.lay
	names := o.namesOf(s)
	hl := o.pane.rowStart(selected, o.isDown(s), names.target, lay.targetW)
	l.pad(1)
	l.cell(names.dep, lay.depW, false, unlessHL(hl, st.text))
	derived := o.derived[s.Target]
	for id := colID(0); id < numCols; id++ {
		if !lay.show[id] {
			continue
		}
		l.pad(1)
		var vs span
		l.num, vs = o.cellValue(id, s, l.num[:0])
		if derived[id] && string(l.num) != absentText {
			l.num = append(l.num, derivedMark...) // a custom mapping's derived value (docs/dialects.md)
		}
		l.cellBytes(l.num, colSpecs[id].width, true, unlessHL(hl, vs))
	}
	return o.pane.rowEnd(hl)
}

// rowStart writes a row's selection and down markers and its name; hl
// says the row is drawn in reverse video, its cells without their own
// spans.
func (p *painter) rowStart(selected, down bool, name string, nameW int) (hl bool) {
	st, g := &p.c.st, p.c.g
	l := &p.l
	hl = selected && st.selected.pre != ""
	if hl {
		l.buf = append(l.buf, st.selected.pre...)
	}
	if selected {
		l.text(g.selected, unlessHL(hl, st.accent))
	} else {
		l.pad(1)
	}
	tsp := st.text
	if down {
		l.text(g.down, unlessHL(hl, st.down))
		tsp = st.down
	} else {
		l.pad(1)
	}
	l.cell(name, nameW, false, unlessHL(hl, tsp))
	return hl
}

func (p *painter) rowEnd(hl bool) line {
	l := &p.l
	if hl {
		l.buf = append(l.buf, p.c.st.selected.post...)
		return l.line()
	}
	return trimSpaceRight(l.line())
}

// unlessHL drops a cell's span inside a reverse-video row.
func unlessHL(hl bool, sp span) span {
	if hl {
		return span{}
	}
	return sp
}

// cellValue formats one numeric cell and picks its span: protection
// (admission, budget) and provider failures keep their own colours.
func (o *overviewModel) cellValue(id colID, s *model.Signals, b []byte) ([]byte, span) {
	st, g := &o.c.st, o.c.g
	rate := func(v model.Value, hot span) ([]byte, span) {
		return appendRate(b, v), rateSpan(st, v, hot)
	}
	switch id {
	case colOrig:
		return rate(s.OriginalsPerS, st.text)
	case colAtt:
		return rate(s.AttemptsPerS, st.text)
	case colAmp:
		return appendAmp(b, s.Amplification), ampSpan(st, s.Amplification)
	case colEff:
		return appendPct(b, s.EffectiveSuccess), pctSpan(st, s.EffectiveSuccess)
	case colAttOK:
		return appendPct(b, s.AttemptSuccess), pctSpan(st, s.AttemptSuccess)
	case colRetry:
		return rate(s.RetriesPerS, st.text)
	case colHedge:
		return rate(s.HedgesPerS, st.text)
	case colRescued:
		return rate(s.RescuedPerS, st.outcome[outRescued])
	case colBudget:
		return rate(s.BudgetDeniedPerS, st.outcome[outBudget])
	case colAdmission:
		return rate(s.AdmissionRejectedPerS, st.outcome[outAdmission])
	case colErrors:
		return rate(s.ProviderErrorsPerS, st.outcome[outProvider])
	case colTimeouts:
		return rate(s.TimeoutsPerS, st.outcome[outTimeout])
	case colActive:
		return appendActive(b, s.ActiveCalls, s.ConcurrencyLimit), limitSpan(st, s.ActiveCalls, s.ConcurrencyLimit)
	case colPool:
		return secondsCell(b, s.PoolWaitP99, g, st)
	case colOK99:
		return secondsCell(b, s.Latency.At(model.ClassSuccess).P99, g, st)
	case colFF99:
		return secondsCell(b, s.Latency.At(model.ClassFastFailure).P99, g, st)
	}
	return append(b, absentText...), st.dim
}

// limitSpan: dim when absent, a warning from 90% of the limit.
func limitSpan(st *styles, v, limit model.Value) span {
	switch {
	case !v.OK():
		return st.dim
	case nearLimit(v, limit):
		return st.warn
	}
	return st.text
}

func secondsCell(b []byte, v model.Value, g *glyphs, st *styles) ([]byte, span) {
	if !v.OK() {
		return append(b, absentText...), st.dim
	}
	return appendSeconds(b, v, g.micro), st.text
}

func pctSpan(st *styles, v model.Value) span {
	switch {
	case !v.OK():
		return st.dim
	case v.V() < 0.99:
		return st.warn
	}
	return st.text
}
