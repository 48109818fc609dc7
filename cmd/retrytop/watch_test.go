package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// --theme picks a palette; an unknown one is a usage error naming the
// themes.
func TestDashboardThemeFlag(t *testing.T) {
	for _, tt := range []struct {
		arg     string
		wantErr bool
	}{{"", false}, {"rg-safe", false}, {"light", false}, {"solarized", true}} {
		f := dashboardFlags{interval: time.Second, window: time.Minute, history: time.Minute, theme: tt.arg}
		opts, err := f.options()
		if (err != nil) != tt.wantErr {
			t.Errorf("--theme %q: error %v", tt.arg, err)
			continue
		}
		if tt.wantErr {
			if !strings.Contains(err.Error(), "rg-safe") {
				t.Errorf("--theme %q: %v does not name the themes", tt.arg, err)
			}
			continue
		}
		if (opts.Theme != nil) != (tt.arg != "") {
			t.Errorf("--theme %q: theme set %v", tt.arg, opts.Theme != nil)
		}
	}
}

// ctrl+s in the dashboard writes the screen where the command runs.
func TestDashboardSavesTheScreenInTheWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var f dashboardFlags
	cmd := &cobra.Command{Use: "x"}
	f.register(cmd)
	opts, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := opts.SaveScreen("\x1b[1mOVERVIEW\x1b[0m 3 rows\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 {
		t.Fatalf("paths %v, want .txt, .ansi and .svg", paths)
	}
	for _, p := range paths {
		if filepath.Dir(p) != dir {
			t.Errorf("%s is not in the working directory %s", p, dir)
		}
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(paths[0])
	if err != nil || !strings.Contains(string(b), "OVERVIEW 3 rows") || strings.Contains(string(b), "\x1b") {
		t.Errorf("text file %q (%v), want the screen without escapes", b, err)
	}
}

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
		if opts.SaveScreen == nil || opts.Version == "" {
			t.Errorf("%v: no ctrl+s screen saver (%v) or version %q", args, opts.SaveScreen != nil, opts.Version)
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

// TestDemoRouteFlags: --post and --breaker reach the sim's options, and
// nothing else turns them on.
func TestDemoRouteFlags(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		post, breaker bool
	}{
		{nil, false, false},
		{[]string{"--post"}, true, false},
		{[]string{"--breaker", "--post", "--seed", "7"}, true, true},
	} {
		var f demoFlags
		if err := demoCmdWith(&f).ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		if o := f.simOptions(); o.NonIdempotent != tc.post || o.Breaker != tc.breaker {
			t.Errorf("%v: NonIdempotent %v Breaker %v", tc.args, o.NonIdempotent, o.Breaker)
		}
	}
}
