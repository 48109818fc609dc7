package ui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
)

// KeyMap is every key binding of the dashboard. The help screen (?) and
// the footer are generated from it, so a remapped key is documented where
// it is used. No default uses ctrl+h/j/k/l (tmux pane navigation).
type KeyMap struct {
	Quit       key.Binding
	Help       key.Binding
	Pause      key.Binding
	WindowDown key.Binding
	WindowUp   key.Binding
	// ZoomIn and ZoomOut step the charts' time range (Options.Ranges).
	ZoomIn  key.Binding
	ZoomOut key.Binding
	// Sort sorts the overview by the next column on screen, SortBack by
	// the previous one, worst first.
	Sort       key.Binding
	SortBack   key.Binding
	Filter     key.Binding
	SwitchView key.Binding
	Up         key.Binding
	Down       key.Binding
	PageUp     key.Binding
	PageDown   key.Binding
	Top        key.Binding
	Bottom     key.Binding
	Open       key.Binding
	Back       key.Binding
	// Group folds replicas (targets sharing a layer) into one row per
	// (layer, dependency), and unfolds them.
	Group key.Binding
	// Follow puts the cursor back on the worst row and keeps it there as
	// frames arrive (any cursor move pins the row instead).
	Follow key.Binding
	// Findings opens the findings pane: every finding whole.
	Findings key.Binding
	// Info opens the info pane: targets, source, window, version.
	Info key.Binding
	// Save writes the screen as it is to files (Options.SaveScreen).
	Save key.Binding

	// While the filter input is open every other key types into it:
	// AcceptFilter closes it keeping the text, CancelFilter clears it,
	// ForceQuit quits.
	AcceptFilter key.Binding
	CancelFilter key.Binding
	ForceQuit    key.Binding

	// A replay's player (Options.Player): in a replay, Play takes the
	// place of Pause, and Start and End those of Top and Bottom.
	Play        key.Binding
	StepBack    key.Binding
	StepForward key.Binding
	JumpBack    key.Binding // ReplayJump back
	JumpForward key.Binding
	Slower      key.Binding
	Faster      key.Binding
	Start       key.Binding
	End         key.Binding
	// WhatIf opens and closes the what-if pane (Options.WhatIf: a replay
	// of a recording).
	WhatIf key.Binding
}

// DefaultKeyMap returns the default bindings.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Quit:       key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Help:       key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Pause:      key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "pause/resume")),
		WindowDown: key.NewBinding(key.WithKeys("["), key.WithHelp("[", "shorter window")),
		WindowUp:   key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "longer window")),
		ZoomIn:     key.NewBinding(key.WithKeys("z"), key.WithHelp("z", "charts: shorter range")),
		ZoomOut:    key.NewBinding(key.WithKeys("Z"), key.WithHelp("Z", "charts: longer range")),
		Sort:       key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort by the next column")),
		SortBack:   key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "sort by the previous column")),
		Filter:     key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		SwitchView: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "switch view")),
		Up:         key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:       key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:     key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "page up")),
		PageDown:   key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "page down")),
		Top:        key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "first")),
		Bottom:     key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "last")),
		Open:       key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "detail")),
		Back:       key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		// Not g: it is "first" here and "start" in a replay.
		Group: key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "group by layer")),
		// Not f: it opens the findings.
		Follow:   key.NewBinding(key.WithKeys("F"), key.WithHelp("F", "follow the worst row")),
		Findings: key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "findings")),
		Info:     key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "info")),
		Save:     key.NewBinding(key.WithKeys("ctrl+s"), key.WithHelp("ctrl+s", "save the screen")),

		AcceptFilter: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply the filter")),
		CancelFilter: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear the filter")),
		ForceQuit:    key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit, even in the filter")),

		Play:        key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "play/pause")),
		StepBack:    key.NewBinding(key.WithKeys("left"), key.WithHelp("←", "step back")),
		StepForward: key.NewBinding(key.WithKeys("right"), key.WithHelp("→", "step")),
		JumpBack:    key.NewBinding(key.WithKeys("shift+left"), key.WithHelp("shift+←", "-1m")),
		JumpForward: key.NewBinding(key.WithKeys("shift+right"), key.WithHelp("shift+→", "+1m")),
		Slower:      key.NewBinding(key.WithKeys("-", "_"), key.WithHelp("-", "slower")),
		Faster:      key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "faster")),
		Start:       key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "start")),
		End:         key.NewBinding(key.WithKeys("G"), key.WithHelp("G", "end")),
		WhatIf:      key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "what if: other retry policies")),
	}
}

// KeyActions names the bindings of a KeyMap for Remap (a config file's
// keys: section), in help order.
var KeyActions = []string{"quit", "help", "pause", "window-down", "window-up", "zoom-in", "zoom-out", "sort", "sort-back", "filter", "switch-view",
	"up", "down", "page-up", "page-down", "top", "bottom", "open", "back", "group", "follow", "findings", "info", "save",
	"accept-filter", "cancel-filter", "force-quit",
	"play", "step-back", "step-forward", "jump-back", "jump-forward", "slower", "faster", "start", "end", "what-if"}

// binding returns the binding an action name names.
func (k *KeyMap) binding(action string) *key.Binding {
	return map[string]*key.Binding{"quit": &k.Quit, "help": &k.Help, "pause": &k.Pause, "window-down": &k.WindowDown,
		"window-up": &k.WindowUp, "zoom-in": &k.ZoomIn, "zoom-out": &k.ZoomOut, "sort": &k.Sort, "sort-back": &k.SortBack, "filter": &k.Filter, "switch-view": &k.SwitchView, "up": &k.Up,
		"down": &k.Down, "page-up": &k.PageUp, "page-down": &k.PageDown, "top": &k.Top, "bottom": &k.Bottom,
		"open": &k.Open, "back": &k.Back, "group": &k.Group, "follow": &k.Follow, "findings": &k.Findings,
		"info": &k.Info, "save": &k.Save, "accept-filter": &k.AcceptFilter, "cancel-filter": &k.CancelFilter,
		"force-quit": &k.ForceQuit, "play": &k.Play, "step-back": &k.StepBack, "step-forward": &k.StepForward,
		"jump-back": &k.JumpBack, "jump-forward": &k.JumpForward, "slower": &k.Slower, "faster": &k.Faster,
		"start": &k.Start, "end": &k.End, "what-if": &k.WhatIf}[action]
}

// replaces pairs the player's actions with the live actions whose keys
// they take over in a replay: only such a pair may share a key.
var replaces = map[string]string{"play": "pause", "start": "top", "end": "bottom"}

// filterActions act only while the filter input is open, when no other
// action does: they may share keys with those, not with each other.
var filterActions = map[string]bool{"accept-filter": true, "cancel-filter": true, "force-quit": true}

// Remap binds each named action to the keys given (bubbletea's key names:
// "q", "ctrl+c", "pgdown", " " for space), keeping the action's help text
// and showing its first key in the help. An unknown action, an empty list
// or a key left bound to two actions is an error naming them; ctrl+c
// always quits as well.
func (k *KeyMap) Remap(m map[string][]string) error {
	names := make([]string, 0, len(m))
	for a := range m {
		names = append(names, a)
	}
	slices.Sort(names)
	for _, a := range names {
		b := k.binding(a)
		if b == nil {
			return fmt.Errorf("keys: unknown action %q (actions: %s)", a, strings.Join(KeyActions, ", "))
		}
		keys := m[a]
		if len(keys) == 0 {
			return fmt.Errorf("keys: %s has no key", a)
		}
		if a == "quit" && !slices.Contains(keys, "ctrl+c") {
			keys = append(slices.Clone(keys), "ctrl+c")
		}
		label := keys[0]
		if label == " " {
			label = "space"
		}
		*b = key.NewBinding(key.WithKeys(keys...), key.WithHelp(label, b.Help().Desc))
	}
	return k.conflict()
}

// conflict is the first key bound to two actions that act at the same
// time, as an error: a replay action may share a key only with the live
// action it replaces, a filter action with any but the filter's.
func (k *KeyMap) conflict() error {
	owners := map[string][]string{}
	for _, a := range KeyActions {
		for _, key := range k.binding(a).Keys() {
			for _, o := range owners[key] {
				if replaces[a] != o && replaces[o] != a && filterActions[a] == filterActions[o] {
					return fmt.Errorf("keys: %q is bound to both %s and %s", key, o, a)
				}
			}
			owners[key] = append(owners[key], a)
		}
	}
	return nil
}

// ShortHelp is the footer line.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Quit, k.Help, k.Pause, k.WindowDown, k.WindowUp, k.Sort, k.Filter, k.Open, k.Back, k.SwitchView}
}

// FullHelp is the help screen, one group per column.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.Open, k.Back, k.SwitchView, k.Sort, k.SortBack, k.Filter, k.AcceptFilter, k.CancelFilter, k.Group, k.Follow, k.Findings, k.Info},
		{k.Pause, k.WindowDown, k.WindowUp, k.ZoomIn, k.ZoomOut, k.Save, k.Help, k.Quit, k.ForceQuit},
	}
}

// viewKeys is the KeyMap as seen from one view: bindings that do nothing
// there are left out of the footer.
type viewKeys struct {
	k    *KeyMap
	view viewID
	// groups: the overview has replicas to fold or unfold.
	groups bool
	// paused: the pause key resumes.
	paused bool
}

func (v viewKeys) ShortHelp() []key.Binding {
	k := v.k
	// Short labels so the line fits 80 columns; [ and ] share one entry.
	short := func(b key.Binding, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, desc))
	}
	pause := "pause"
	if v.paused {
		pause = "resume"
	}
	zoom := pairOf(k.ZoomIn, k.ZoomOut, "range")
	common := []key.Binding{short(k.Quit, "quit"), short(k.Help, "help"), short(k.Pause, pause), pairOf(k.WindowDown, k.WindowUp, "window")}
	switch v.view {
	case viewDetail, viewService:
		return append(common, zoom, short(k.Down, "scroll"), short(k.Back, "back"), short(k.SwitchView, "view"))
	case viewGroup:
		return append(common, zoom, short(k.Down, "replica"), short(k.Open, "open"), short(k.Back, "back"), short(k.PageDown, "scroll"), short(k.SwitchView, "view"))
	case viewChains:
		return append(common, short(k.Back, "back"), short(k.SwitchView, "view"))
	case viewFindings, viewInfo, viewWhatIf:
		return append(common, short(k.Down, "scroll"), short(k.Back, "back"))
	}
	out := append(common, pairOf(k.Sort, k.SortBack, "sort"), short(k.Filter, "filter"), short(k.Open, "detail"), short(k.Findings, "findings"), short(k.Info, "info"))
	if v.groups {
		out = append(out, short(k.Group, "group"))
	}
	return append(out, zoom, short(k.SwitchView, "view"))
}

func (v viewKeys) FullHelp() [][]key.Binding { return v.k.FullHelp() }

// ReplayHelp is the help screen's part for a replay: the player's keys,
// and the what-if pane's when whatIf.
func (k KeyMap) ReplayHelp(whatIf bool) [][]key.Binding {
	groups := [][]key.Binding{
		{k.Play, k.StepBack, k.StepForward, k.JumpBack, k.JumpForward},
		{k.Slower, k.Faster, k.Start, k.End},
	}
	if whatIf {
		groups = append(groups, []key.Binding{k.WhatIf})
	}
	return groups
}

// replayShortHelp is a replay's footer: the player's keys, each pair of
// opposites in one entry.
func (k KeyMap) replayShortHelp() []key.Binding {
	return []key.Binding{k.Quit, k.Play,
		pairOf(k.StepBack, k.StepForward, "step"),
		pairOf(k.JumpBack, k.JumpForward, "±1m"),
		pairOf(k.Slower, k.Faster, "speed"),
		pairOf(k.Start, k.End, "start/end"),
		k.Help, k.Open, k.SwitchView,
	}
}

// pairOf is one footer entry for two opposite bindings: "←→", "[]",
// "shift+←→" (a shared prefix said once), "g/G" (two letters would read
// as one word).
func pairOf(a, b key.Binding, desc string) key.Binding {
	la, lb := a.Help().Key, b.Help().Key
	n := 0
	for n < len(la) && n < len(lb) && la[n] == lb[n] {
		n++
	}
	if i := strings.LastIndexByte(la[:n], '+'); i >= 0 {
		lb = lb[i+1:] // "shift+→" after "shift+←"
	}
	sep := ""
	if la != "" && lb != "" && isAlnum(la[len(la)-1]) && isAlnum(lb[0]) {
		sep = "/"
	}
	return key.NewBinding(key.WithKeys(append(a.Keys(), b.Keys()...)...), key.WithHelp(la+sep+lb, desc))
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
