// Package gcpercent sets the collector's GOGC for a phase of the process
// (a live dashboard, a recorder, a long recording streaming into a
// store), unless the user set GOGC in the environment.
package gcpercent

import (
	"os"
	"runtime/debug"
)

// Set sets GOGC to percent unless the environment sets GOGC, and returns
// what puts the previous setting back: defer gcpercent.Set(50)().
func Set(percent int) (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(prev) }
}
