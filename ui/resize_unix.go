//go:build !windows

package ui

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyResize delivers the terminal's resizes (SIGWINCH) until stop.
func notifyResize() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	return ch, func() { signal.Stop(ch) }
}
