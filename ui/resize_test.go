package ui

import (
	"errors"
	"reflect"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// TestFollowSize: the resize follower with an injected size and clock
// (ticks the test sends). Polling (Windows) sends a size only when it
// differs from the last one sent; following SIGWINCH sends every one;
// neither sends a size it could not read, and both return once done is
// closed while ticks stay open.
func TestFollowSize(t *testing.T) {
	type read struct {
		w, h int
		err  error
	}
	bad := errors.New("no console")
	reads := []read{{80, 24, nil}, {100, 30, nil}, {100, 30, nil}, {0, 0, bad}, {100, 30, nil}, {90, 30, nil}, {80, 24, nil}}
	for _, tc := range []struct {
		name        string
		onlyChanged bool
		want        []tea.WindowSizeMsg
	}{
		{"poll", true, []tea.WindowSizeMsg{{Width: 100, Height: 30}, {Width: 90, Height: 30}, {Width: 80, Height: 24}}},
		{"signal", false, []tea.WindowSizeMsg{{Width: 80, Height: 24}, {Width: 100, Height: 30}, {Width: 100, Height: 30}, {Width: 100, Height: 30}, {Width: 90, Height: 30}, {Width: 80, Height: 24}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ticks := make(chan struct{}) // unbuffered: each send waits for the follower
			done := make(chan struct{})
			returned := make(chan struct{})
			var got []tea.WindowSizeMsg
			k := 0
			get := func() (int, int, error) {
				r := reads[k]
				k++
				return r.w, r.h, r.err
			}
			send := func(m tea.Msg) { got = append(got, m.(tea.WindowSizeMsg)) }
			go func() {
				defer close(returned)
				followSize(done, ticks, tc.onlyChanged, termSize{80, 24}, get, send)
			}()
			for range reads {
				ticks <- struct{}{}
			}
			close(done)
			<-returned // the follower stopped although ticks is still open
			if k != len(reads) {
				t.Fatalf("%d sizes read for %d ticks", k, len(reads))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("sent %v, want %v", got, tc.want)
			}
		})
	}
}
