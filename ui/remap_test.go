package ui

import (
	"strings"
	"testing"
)

// TestRemap (issue 17): a config's keys: section rebinds actions, the help
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
	} {
		k := DefaultKeyMap()
		if err := k.Remap(c.m); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.m, err, c.want)
		}
	}
	// The defaults themselves bind no key twice.
	d := DefaultKeyMap()
	if err := d.Remap(nil); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
