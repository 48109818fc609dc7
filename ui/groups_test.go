package ui

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// fleetLayers are the grouped fixture's layers: each has replicas
// 10.0.<n>.<i>:8080 calling the dependencies listed.
var fleetLayers = []struct {
	layer string
	deps  []string
}{
	{"checkout", []string{"payments", "inventory"}},
	{"payments", []string{"bank-api"}},
	{"gateway", []string{"checkout"}},
}

// withEdges gives a fixture timeline aligned bin edges ending at end, as
// frames built with aligned bins have (groups match bins by their edges).
func withEdges(tl []model.Signals, end time.Time, bin time.Duration) []model.Signals {
	endMs := end.UnixMilli()
	for i := range tl {
		tl[i].StartMs = endMs - int64(len(tl)-i)*bin.Milliseconds()
		tl[i].EndMs = tl[i].StartMs + bin.Milliseconds()
	}
	return tl
}

// fleetFrame is a frame of layers x replicas targets (the first layers of
// fleetLayers, cycled with a numeric suffix past three), plus the target
// "legacy" without a layer. In the first layer, replica 3 is down and its
// name hostile, and replica 5 exposes only originals and attempts.
// variant shifts the numbers so that refreshes reorder replicas.
func fleetFrame(t time.Time, layers, replicas, variant int) model.Frame {
	f := model.Frame{Time: t, Window: time.Minute, Bin: 10 * time.Second, Timelines: map[model.Key]*model.Timeline{}}
	for li := range layers {
		spec := fleetLayers[li%len(fleetLayers)]
		layer := spec.layer
		if li >= len(fleetLayers) {
			layer += "-" + strconv.Itoa(li/len(fleetLayers))
		}
		for i := range replicas {
			name := fmt.Sprintf("10.0.%d.%d:8080", li+1, i+1)
			st := model.TargetStatus{Name: name, Layer: layer, Up: true, LastScrape: t, LastSuccess: t}
			if li == 0 && i == 3 {
				name += "\x1b[31m\u202e"
				st.Name, st.Up, st.LastError = name, false, "connection refused"
			}
			f.Targets = append(f.Targets, st)
			for di, dep := range spec.deps {
				k := (i*7 + variant*5 + di*3 + li) % replicas
				var r model.Signals
				if li == 0 && i == 5 {
					r = bareRow(name, dep)
				} else {
					r = row(name, dep, 40+float64(li*30+k*13%50), 1+float64(k+li*2)/(8+float64(li)), float64((k+li)%4)/20)
				}
				f.Rows = append(f.Rows, r)
				if !(li == 0 && i == 3) {
					f.Timelines[r.Key()] = model.NewTimeline(withEdges(timeline(r, 30, i+variant), t, f.Bin))
				}
			}
		}
	}
	legacy := row("legacy", "mainframe", 12, 1.2, 0.01)
	f.Rows = append(f.Rows, legacy)
	f.Timelines[legacy.Key()] = model.NewTimeline(withEdges(timeline(legacy, 30, 0), t, f.Bin))
	f.Targets = append(f.Targets, model.TargetStatus{Name: "legacy", Up: true, LastScrape: t, LastSuccess: t})
	return f
}

// fleetMsg is the frame message the build Cmd would send for fleetFrame.
func fleetMsg(t time.Time, layers, replicas, variant int) frameMsg {
	msg := liveFrame(fleetFrame(t, layers, replicas, variant))
	msg.groups = deriveGroups(&msg.frame)
	return msg
}

// fleetModel is a model showing the 3 layers x 12 replicas fixture.
func fleetModel(t *testing.T, opts Options, w, h int) *Model {
	m := newTestModel(t, opts, nil)
	m.build = func(_ Source, req frameRequest) (model.Frame, derived) {
		f := fleetFrame(dataTime, 3, 12, 0)
		return f, derived{groups: deriveGroups(&f)}
	}
	send(m, tea.WindowSizeMsg{Width: w, Height: h}, fleetMsg(dataTime, 3, 12, 0))
	return m
}

func gkey(t, d string) model.Key { return model.Key{Target: t, Dependency: d} }

func TestDeriveGroups(t *testing.T) {
	f := fleetFrame(dataTime, 3, 12, 0)
	gs := deriveGroups(&f)
	if gs == nil {
		t.Fatal("no groups for 3 layers of 12")
	}
	var got []string
	for _, r := range gs.frame.Rows {
		n := 0
		if gi := gs.info[r.Key()]; gi != nil {
			n = len(gi.members)
		}
		got = append(got, r.Target+"/"+r.Dependency+"="+strconv.Itoa(n))
	}
	want := "legacy/mainframe=0 checkout/payments=12 checkout/inventory=12 payments/bank-api=12 gateway/checkout=12"
	if strings.Join(got, " ") != want {
		t.Fatalf("rows %v, want %s", got, want)
	}
	gi := gs.info[gkey("checkout", "payments")]
	var sum float64
	prev := 1e9
	for i, idx := range gi.members {
		r := &gs.rows[idx]
		if r.Dependency != "payments" || gs.of[r.Key()] != gkey("checkout", "payments") {
			t.Errorf("member %d is %s/%s mapped to %v", i, r.Target, r.Dependency, gs.of[r.Key()])
		}
		if a := r.Amplification.V(); a > prev {
			t.Errorf("member %d amplification %v after %v: not sorted", i, a, prev)
		}
		prev = r.Amplification.V()
		sum += r.OriginalsPerS.V()
	}
	g := &gs.frame.Rows[1]
	if !g.OriginalsPerS.OK() || g.OriginalsPerS.V() != sum || gi.down != 1 {
		t.Errorf("group originals %v, want %v; %d down, want 1", g.OriginalsPerS, sum, gi.down)
	}
	// A limit of 64 per replica admits 12 x 64; the bare replica has none.
	if g.ConcurrencyLimit != some(11*64) {
		t.Errorf("group limit %v, want %v", g.ConcurrencyLimit, 11*64)
	}
	tl := gs.frame.Timelines[gkey("checkout", "payments")].Bins()
	if len(tl) != 30 || tl[29].EndMs != dataTime.UnixMilli() || !tl[29].OriginalsPerS.OK() {
		t.Errorf("group timeline: %d bins, last %+v", len(tl), tl[len(tl)-1])
	}
	if tl[3].OriginalsPerS.OK() {
		t.Errorf("bin 3 is a gap in every member: %v, want absent", tl[3].OriginalsPerS)
	}
	if _, ok := gs.frame.Timelines[gkey("legacy", "mainframe")]; !ok {
		t.Error("an unfolded row lost its timeline")
	}

	// Layers of one target each (the demo's) and no layers: nothing folds.
	one := fixtureFrame(dataTime, time.Minute, 0)
	for i := range one.Targets {
		one.Targets[i].Layer = one.Targets[i].Name
	}
	if gs := deriveGroups(&one); gs != nil {
		t.Errorf("layers of one target folded: %+v", gs.frame.Rows)
	}

	// A target named like a layer it is not in keeps its row; the group
	// takes another name.
	f = fleetFrame(dataTime, 2, 2, 0)
	f.Targets = append(f.Targets, model.TargetStatus{Name: "checkout", Up: true})
	f.Rows = append(f.Rows, row("checkout", "payments", 1, 1, 0))
	gs = deriveGroups(&f)
	if gs.info[gkey("checkout", "payments")] != nil || gs.info[gkey("checkout [layer]", "payments")] == nil {
		t.Errorf("name clash: groups %v", gs.info)
	}
}

func TestGroupingToggle(t *testing.T) {
	m := fleetModel(t, Options{}, 120, 40)
	if got := len(order(m)); got != 5 {
		t.Fatalf("grouped by default: %d rows, want 5: %v", got, order(m))
	}
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "5 rows by layer") || !strings.Contains(v, "checkout ×12") {
		t.Errorf("grouped overview does not say so:\n%s", v)
	}
	if !strings.Contains(lastLine(v), "a group") {
		t.Errorf("footer lacks the group key: %s", lastLine(v))
	}
	// Sort and filter act on group rows.
	keys(m, "S", "S") // ORIG/s, two columns before AMP
	if o := order(m); m.overview.sortBy != colOrig || o[0] != "gateway/checkout" || o[len(o)-1] != "legacy/mainframe" {
		t.Errorf("grouped by %s: %v", colSpecs[m.overview.sortBy].head, o)
	}
	keys(m, "/", "p", "a", "y", "enter")
	if o := order(m); strings.Join(o, " ") != "payments/bank-api checkout/payments" {
		t.Errorf("grouped, filter pay: %v", o)
	}
	keys(m, "esc")
	keys(m, "a")
	if got := len(order(m)); got != 49 {
		t.Fatalf("ungrouped: %d rows, want 49", got)
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "rows by target") || strings.Contains(v, "×12") {
		t.Errorf("ungrouped title:\n%s", firstLines(v, 3))
	}
	keys(m, "a")
	if got := len(order(m)); got != 5 {
		t.Errorf("grouped again: %d rows", got)
	}
}

func firstLines(s string, n int) string {
	ls := strings.SplitN(s, "\n", n+1)
	return strings.Join(ls[:min(n, len(ls))], "\n")
}

// selectRow moves the overview cursor to the row target/dependency.
func selectRow(t *testing.T, m *Model, want string) {
	t.Helper()
	keys(m, "g")
	for range m.overview.total() {
		if selected(m) == want {
			return
		}
		keys(m, "j")
	}
	t.Fatalf("no row %q in %v", want, order(m))
}

func TestGroupSelectionStable(t *testing.T) {
	m := fleetModel(t, Options{}, 120, 40)
	selectRow(t, m, "checkout/inventory")
	// A refresh whose numbers reorder the rows: the selection follows
	// its group.
	send(m, fleetMsg(dataTime.Add(time.Second), 3, 12, 3))
	if selected(m) != "checkout/inventory" {
		t.Fatalf("after a refresh: %q selected", selected(m))
	}
	gs := m.shownDerived.groups
	top := gs.top(gs.info[gkey("checkout", "inventory")])

	// Ungrouping selects the group's first replica, regrouping its group.
	keys(m, "a")
	if got := selected(m); got != top.Target+"/inventory" {
		t.Errorf("ungrouped: %q selected, want the top replica %q", got, top.Target)
	}
	keys(m, "j")
	member, _ := m.overview.selectedKey()
	keys(m, "a")
	want, ok := m.shownDerived.groups.of[member]
	if !ok || selected(m) != want.Target+"/"+want.Dependency {
		t.Errorf("regrouped from %v: %q selected, want %v", member, selected(m), want)
	}

	// Grouping that goes away (every layer down to one replica) selects
	// the group's first member.
	selectRow(t, m, "payments/bank-api")
	gi := m.shownDerived.groups.info[gkey("payments", "bank-api")]
	first := m.shownDerived.groups.top(gi)
	f := fleetFrame(dataTime.Add(2*time.Second), 3, 12, 0)
	for i := range f.Targets {
		f.Targets[i].Layer = ""
	}
	send(m, liveFrame(f))
	if selected(m) != first.Target+"/bank-api" {
		t.Errorf("groups gone: %q selected, want %q", selected(m), first.Target+"/bank-api")
	}
}

func TestGroupDrillDown(t *testing.T) {
	m := fleetModel(t, Options{}, 120, 40)
	selectRow(t, m, "checkout/payments")
	keys(m, "enter")
	if m.view != viewGroup || m.grpDetail.key != gkey("checkout", "payments") {
		t.Fatalf("enter on a group: view %v key %v", m.view, m.grpDetail.key)
	}
	v := ansi.Strip(m.View())
	gs := m.shownDerived.groups
	gi := gs.info[gkey("checkout", "payments")]
	for _, s := range []string{"GROUP  checkout ×12 → payments", "layer checkout", "1 down", "REPLICAS", "ORIGINALS vs ATTEMPTS", "► " + safetext.Terminal(gs.rows[gi.members[0]].Target)} {
		if !strings.Contains(v, s) {
			t.Errorf("group detail lacks %q:\n%s", s, v)
		}
	}
	// The cursor moves over replicas; enter opens the one under it.
	keys(m, "j", "j")
	second := gs.rows[gi.members[2]].Key()
	if k, _ := m.grpDetail.selected(m.shownDerived.groups); k != second {
		t.Fatalf("cursor on %v, want %v", k, second)
	}
	keys(m, "enter")
	if m.view != viewDetail || m.detail.key != second {
		t.Fatalf("enter on a replica: view %v key %v", m.view, m.detail.key)
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "DETAIL  "+safetext.Terminal(second.Target)) || !strings.Contains(v, "replica of checkout ×12") {
		t.Errorf("replica detail title:\n%s", firstLines(v, 2))
	}
	// A refresh reorders the replicas: the cursor stays on its replica.
	send(m, fleetMsg(dataTime.Add(time.Second), 3, 12, 2))
	keys(m, "esc")
	if m.view != viewGroup {
		t.Fatalf("esc from a replica: view %v, want the group", m.view)
	}
	m.View()
	if k, _ := m.grpDetail.selected(m.shownDerived.groups); k != second || m.grpDetail.cursor == 2 {
		t.Errorf("after a reordering refresh the cursor is on %v at %d, want %v elsewhere", k, m.grpDetail.cursor, second)
	}
	keys(m, "esc")
	if m.view != viewOverview || selected(m) != "checkout/payments" {
		t.Errorf("esc from the group: view %v, selected %q", m.view, selected(m))
	}
	// tab on a group row opens its detail too.
	keys(m, "tab")
	if m.view != viewGroup {
		t.Errorf("tab on a group row: view %v", m.view)
	}
}

// TestGroupCursorScrolls: moving down the replicas of a group taller
// than the screen keeps the cursor's line on screen.
func TestGroupCursorScrolls(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 80, Height: 24}, fleetMsg(dataTime, 1, 40, 0))
	selectRow(t, m, "checkout/payments")
	keys(m, "enter")
	for i := range 39 {
		keys(m, "down")
		v := ansi.Strip(m.View())
		k, _ := m.grpDetail.selected(m.shownDerived.groups)
		if !strings.Contains(v, "► "+safetext.Terminal(k.Target)) && !strings.Contains(v, "►!"+safetext.Terminal(k.Target)) {
			t.Fatalf("down x%d: cursor row %q not on screen:\n%s", i+1, k.Target, v)
		}
	}
	if m.grpDetail.cursor != 39 {
		t.Errorf("cursor %d after 39 downs", m.grpDetail.cursor)
	}
}

func TestGroupReplicasAbsentSanitisedNoColour(t *testing.T) {
	m := fleetModel(t, Options{NoColor: true}, 120, 40)
	selectRow(t, m, "checkout/payments")
	keys(m, "enter")
	raw := m.View()
	if strings.Contains(raw, "\x1b") || strings.Contains(raw, "\u202e") {
		t.Errorf("escape or override reached the screen: %q", raw)
	}
	v := ansi.Strip(raw)
	// The down replica is marked by a glyph, its escapes shown, not
	// obeyed; the bare one reads "-".
	if !strings.Contains(v, "\n !10.0.1.4:8080\\x1b[31m\\u202e ") {
		t.Errorf("down replica not marked:\n%s", v)
	}
	// Its errors are a present zero, timeouts and active calls absent.
	bare := lineWith(v, "10.0.1.6:8080 ")
	if f := strings.Fields(bare); len(f) != 7 || f[4] != "0" || f[5] != "-" || f[6] != "-" {
		t.Errorf("bare replica: %q, want 0 errors, - timeouts and active", bare)
	}
	if !strings.Contains(v, "► ") {
		t.Error("no cursor glyph without colour")
	}
}

func TestGoldenGrouped(t *testing.T) {
	for _, sz := range goldenSizes[:2] {
		t.Run("overview_grouped_"+sizeName(sz.w, sz.h), func(t *testing.T) {
			m := fleetModel(t, Options{}, sz.w, sz.h)
			golden(t, "overview_grouped_"+sizeName(sz.w, sz.h), screen(t, m))
		})
	}
	t.Run("group_detail_120x40", func(t *testing.T) {
		m := fleetModel(t, Options{}, 120, 40)
		selectRow(t, m, "checkout/payments")
		keys(m, "enter", "j")
		golden(t, "group_detail_120x40", screen(t, m))
	})
	t.Run("group_detail_ascii_80x24", func(t *testing.T) {
		m := fleetModel(t, Options{Charset: CharsetASCII}, 80, 24)
		selectRow(t, m, "checkout/payments")
		keys(m, "enter")
		golden(t, "group_detail_ascii_80x24", screen(t, m))
	})
}
