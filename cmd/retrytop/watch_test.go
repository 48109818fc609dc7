package main

import (
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// --utc and --no-mouse reach the dashboard's options, on every verb that
// opens it.
func TestDashboardFlagsUTCAndMouse(t *testing.T) {
	for _, args := range [][]string{nil, {"--utc"}, {"--no-mouse"}, {"--utc", "--no-mouse"}} {
		var f dashboardFlags
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		f.register(cmd)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		opts, err := f.options()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		wantUTC, wantNoMouse := false, false
		for _, a := range args {
			wantUTC = wantUTC || a == "--utc"
			wantNoMouse = wantNoMouse || a == "--no-mouse"
		}
		if gotUTC := opts.Location == time.UTC; gotUTC != wantUTC {
			t.Errorf("%v: location %v", args, opts.Location)
		}
		if !wantUTC && opts.Location != nil {
			t.Errorf("%v: location %v, want nil (the dashboard's default, local time)", args, opts.Location)
		}
		if opts.NoMouse != wantNoMouse {
			t.Errorf("%v: NoMouse %v", args, opts.NoMouse)
		}
	}
	for _, verb := range []*cobra.Command{newWatchCmd(), newReplayCmd(), newDemoCmd()} {
		for _, name := range []string{"utc", "no-mouse"} {
			if verb.Flags().Lookup(name) == nil {
				t.Errorf("%s has no --%s", verb.Name(), name)
			}
		}
	}
}
