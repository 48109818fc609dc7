package ui

import "os"

// notifyResize: Windows has no SIGWINCH; the size is read once at start.
func notifyResize() (<-chan os.Signal, func()) {
	return nil, func() {}
}
