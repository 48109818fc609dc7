package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are set by the linker where the toolchain stamps no
// VCS information (a build from a tarball, a container without .git):
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.commit=$(git rev-parse HEAD)" ./cmd/retrytop
var (
	version = ""
	commit  = ""
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, commit, goVersion := buildInfo()
			fmt.Fprintf(cmd.OutOrStdout(), "retrytop %s\ncommit: %s\ngo: %s\n", v, commit, goVersion)
			return nil
		},
	}
}

// buildInfo reads what the Go toolchain stamped into the binary.
func buildInfo() (ver, rev, goVersion string) {
	ver, rev, goVersion = version, "unknown", "unknown"
	if commit != "" {
		rev = commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if ver == "" {
			ver = "(devel)"
		}
		return
	}
	goVersion = bi.GoVersion
	if ver == "" {
		ver = bi.Main.Version
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if commit == "" {
				rev = s.Value
			}
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && commit == "" && rev != "unknown" {
		rev += "-dirty"
	}
	if ver == "" {
		ver = "(devel)"
	}
	return
}
