//go:build !windows

package ui

import (
	"os"
	"os/signal"
	"syscall"

	tea "github.com/charmbracelet/bubbletea"
)

// watchResizes sends the size after every SIGWINCH (even an unchanged
// one: the terminal may have been redrawn, and the view is posted again)
// until done.
func watchResizes(done <-chan struct{}, last termSize, get func() (int, int, error), send func(tea.Msg)) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	defer signal.Stop(ch)
	followSize(done, ch, false, last, get, send)
}
