package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set by the linker for releases (-ldflags "-X main.version=v1.2.3").
var version = ""

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
func buildInfo() (ver, commit, goVersion string) {
	ver, commit, goVersion = version, "unknown", "unknown"
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
			commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && commit != "unknown" {
		commit += "-dirty"
	}
	if ver == "" {
		ver = "(devel)"
	}
	return
}
