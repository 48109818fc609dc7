package ui

import (
	"strings"
	"testing"
	"time"
)

// TestRemap: a config's keys: section rebinds actions, the help
// shows the new key, and mistakes are errors naming them.
func TestRemap(t *testing.T) {
	k := DefaultKeyMap()
	if err := k.Remap(map[string][]string{"findings": {"F9"}, "follow": {"ctrl+f"}, "quit": {"x"}}); err != nil {
		t.Fatal(err)
	}
	if got := k.Findings.Keys(); len(got) != 1 || got[0] != "F9" || k.Findings.Help().Key != "F9" || k.Findings.Help().Desc != "findings" {
		t.Errorf("findings: keys %v, help %+v", got, k.Findings.Help())
	}
	if got := strings.Join(k.Quit.Keys(), ","); got != "x,ctrl+c" {
		t.Errorf("quit keys %q: ctrl+c must still quit", got)
	}
	for _, c := range []struct {
		m    map[string][]string
		want string
	}{
		{map[string][]string{"fnd": {"z"}}, `keys: unknown action "fnd"`},
		{map[string][]string{"info": {}}, "keys: info has no key"},
		{map[string][]string{"info": {"s"}}, `keys: "s" is bound to both sort and info`},
		// The charts' zoom and the sort's second key are checked too.
		{map[string][]string{"zoom-in": {"s"}}, `keys: "s" is bound to both zoom-in and sort`},
		{map[string][]string{"sort-back": {"Z"}}, `keys: "Z" is bound to both zoom-out and sort-back`},
		// The player's keys and w are in the key map like the others: a
		// remap onto one of them is refused.
		{map[string][]string{"sort": {"w"}}, `keys: "w" is bound to both sort and what-if`},
		{map[string][]string{"quit": {"left"}}, `keys: "left" is bound to both quit and step-back`},
		{map[string][]string{"info": {"+"}}, `keys: "+" is bound to both info and faster`},
		{map[string][]string{"what-if": {"f"}}, `keys: "f" is bound to both findings and what-if`},
		{map[string][]string{"slower": {"right"}}, `keys: "right" is bound to both step-forward and slower`},
		// A player's key shares keys only with the live key it replaces.
		{map[string][]string{"start": {"G"}}, `keys: "G" is bound to both bottom and start`},
		{map[string][]string{"play": {"g"}}, `keys: "g" is bound to both top and play`},
		// The filter's keys share keys with the others (they act only
		// while the filter is open), not with each other.
		{map[string][]string{"cancel-filter": {"enter"}}, `keys: "enter" is bound to both accept-filter and cancel-filter`},
	} {
		k := DefaultKeyMap()
		if err := k.Remap(c.m); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.m, err, c.want)
		}
	}
	// The player's and the what-if keys remap like the others.
	k = DefaultKeyMap()
	if err := k.Remap(map[string][]string{"what-if": {"W"}, "play": {"p"}, "start": {"home"}}); err != nil {
		t.Fatal(err)
	}
	if got := k.WhatIf.Keys(); len(got) != 1 || got[0] != "W" || k.WhatIf.Help().Key != "W" {
		t.Errorf("what-if: keys %v, help %+v", got, k.WhatIf.Help())
	}
	if got := k.Play.Keys(); len(got) != 1 || got[0] != "p" || k.Play.Help().Desc != "play/pause" {
		t.Errorf("play: keys %v, help %+v", got, k.Play.Help())
	}
	// A remapped zoom steps the charts' range; the help shows it.
	k = DefaultKeyMap()
	if err := k.Remap(map[string][]string{"zoom-in": {"-"}, "slower": {"<"}}); err != nil {
		t.Fatal(err)
	}
	m := goldenModel(t, Options{Keys: &k}, 120, 40)
	keys(m, "-")
	if m.c.chartRange != time.Minute {
		t.Errorf("remapped zoom-in: range %v, want 1m", m.c.chartRange)
	}
	keys(m, "?")
	if v := screen(t, m); !strings.Contains(v, "-      charts: shorter range") {
		t.Errorf("help does not show the remapped zoom key:\n%s", v)
	}
	// The defaults themselves bind no key twice.
	d := DefaultKeyMap()
	if err := d.Remap(nil); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// The filter input's keys come from the key map too: a remapped
// accept-filter closes the filter, keeping its text.
func TestRemappedFilterKeys(t *testing.T) {
	k := DefaultKeyMap()
	if err := k.Remap(map[string][]string{"accept-filter": {"tab"}}); err != nil {
		t.Fatal(err)
	}
	m := goldenModel(t, Options{Keys: &k}, 120, 40)
	keys(m, "/", "pay", "tab")
	if m.overview.filtering || m.overview.filter.Value() != "pay" {
		t.Errorf("tab as accept-filter: filtering %v, text %q", m.overview.filtering, m.overview.filter.Value())
	}
	if m.view != viewOverview {
		t.Errorf("tab switched the view (%v) while the filter was open", m.view)
	}
}
