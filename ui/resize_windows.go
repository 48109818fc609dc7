package ui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// resizePoll is how often the size is read on Windows, which has no
// SIGWINCH: a resize shows within a quarter of a second, and a read
// (GetConsoleScreenBufferInfo) four times a second costs nothing an idle
// dashboard would notice.
const resizePoll = 250 * time.Millisecond

// watchResizes polls the size and sends it when it changed, until done.
func watchResizes(done <-chan struct{}, last termSize, get func() (int, int, error), send func(tea.Msg)) {
	t := time.NewTicker(resizePoll)
	defer t.Stop()
	followSize(done, t.C, true, last, get, send)
}
