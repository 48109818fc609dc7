package ui

import (
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/model"
)

// fakePlayer records the controls it receives.
type fakePlayer struct {
	playing    bool
	speed      float64
	pos        time.Time
	start, end time.Time
	spikes     []uint8
	calls      []string
	seeking    bool
}

func newFakePlayer() *fakePlayer {
	start := dataTime.Add(-10 * time.Minute)
	sp := make([]uint8, 120)
	for i := range sp {
		switch {
		case i >= 40 && i < 46:
			sp[i] = 1
		case i >= 46 && i < 60:
			sp[i] = 2
		case i >= 100:
			sp[i] = 3
		}
	}
	return &fakePlayer{speed: 1, pos: start.Add(4*time.Minute + 7*time.Second), start: start, end: dataTime, spikes: sp}
}

func (f *fakePlayer) Playing() bool { return f.playing }
func (f *fakePlayer) Toggle()       { f.playing = !f.playing; f.calls = append(f.calls, "toggle") }
func (f *fakePlayer) Step(n int)    { f.calls = append(f.calls, "step "+strconv.Itoa(n)) }
func (f *fakePlayer) Jump(d time.Duration) {
	f.calls = append(f.calls, "jump "+d.String())
}
func (f *fakePlayer) Speed() float64     { return f.speed }
func (f *fakePlayer) SetSpeed(x float64) { f.speed = x; f.calls = append(f.calls, "speed") }
func (f *fakePlayer) SeekStart()         { f.calls = append(f.calls, "start") }
func (f *fakePlayer) SeekEnd()           { f.calls = append(f.calls, "end") }
func (f *fakePlayer) Position() (time.Time, time.Time, time.Time) {
	return f.pos, f.start, f.end
}
func (f *fakePlayer) Spikes() []uint8 { return f.spikes }
func (f *fakePlayer) Seeking() bool   { return f.seeking }

func replayModel(t *testing.T, cs Charset, w, h int) (*Model, *fakePlayer) {
	p := newFakePlayer()
	m := goldenModel(t, Options{Mode: ModeReplay, Player: p, Charset: cs}, w, h)
	return m, p
}

func TestGoldenReplay(t *testing.T) {
	for _, sz := range goldenSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			m, _ := replayModel(t, CharsetBlock, sz.w, sz.h)
			golden(t, "replay_"+sizeName(sz.w, sz.h), screen(t, m))
		})
	}
	t.Run("ascii_playing_4x_80x24", func(t *testing.T) {
		m, p := replayModel(t, CharsetASCII, 80, 24)
		send(m, keyMsg("space"), keyMsg("+"), keyMsg("+"))
		if !p.playing || p.speed != 4 {
			t.Fatalf("playing %v speed %v", p.playing, p.speed)
		}
		golden(t, "replay_ascii_playing_4x_80x24", screen(t, m))
	})
}

func TestReplayKeys(t *testing.T) {
	m, p := replayModel(t, CharsetBlock, 120, 40)
	send(m,
		keyMsg("space"),
		tea.KeyMsg{Type: tea.KeyRight}, tea.KeyMsg{Type: tea.KeyLeft},
		tea.KeyMsg{Type: tea.KeyShiftRight}, tea.KeyMsg{Type: tea.KeyShiftLeft},
		keyMsg("-"), keyMsg("-"), keyMsg("-"), keyMsg("+"),
		keyMsg("g"), keyMsg("G"),
	)
	want := "toggle,step 1,step -1,jump 1m0s,jump -1m0s,speed,speed,speed,speed,start,end"
	if got := strings.Join(p.calls, ","); got != want {
		t.Fatalf("calls\n got %s\nwant %s", got, want)
	}
	if p.speed != 0.5 {
		t.Errorf("speed %v after - - - +, want 0.5", p.speed)
	}
	if m.Paused() {
		t.Error("space paused the view instead of the player")
	}
	// The speed stays within the ladder.
	for i := 0; i < 20; i++ {
		send(m, keyMsg("+"))
	}
	if p.speed != 64 {
		t.Errorf("speed %v, want 64 at most", p.speed)
	}
	for i := 0; i < 20; i++ {
		send(m, keyMsg("-"))
	}
	if p.speed != 0.25 {
		t.Errorf("speed %v, want 0.25 at least", p.speed)
	}
	// Keys typed together arrive as one message; each counts.
	send(m, keyMsg("++"))
	if p.speed != 1 {
		t.Errorf("speed %v after ++ from 0.25x, want 1", p.speed)
	}
}

// TestReplaySeekingBadge: the header says "seeking…" while the player
// loads the store for a seek, and until a frame asked for after that
// is shown: the rows of the frame before are of the moment before.
func TestReplaySeekingBadge(t *testing.T) {
	m, p := replayModel(t, CharsetBlock, 160, 48)
	header := func() string {
		m.dirty = true // as the key or the update that follows a change does
		return strings.SplitN(screen(t, m), "\n", 2)[0]
	}
	if h := header(); strings.Contains(h, "seeking") {
		t.Fatalf("seeking before any seek: %q", h)
	}
	p.seeking = true
	if h := header(); !strings.Contains(h, "seeking…") {
		t.Fatalf("the player seeking, the header does not say so: %q", h)
	}
	// Loaded, but the frame on screen was asked for while seeking.
	stale := liveFrame(fixtureFrame(dataTime, time.Minute, 0))
	stale.req.Seeking = true
	send(m, stale)
	p.seeking = false
	if h := header(); !strings.Contains(h, "seeking…") {
		t.Fatalf("a frame of the moment before on screen, the header does not say so: %q", h)
	}
	send(m, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	if h := header(); strings.Contains(h, "seeking") {
		t.Fatalf("seeking after the frame of the new moment: %q", h)
	}
	// The request says what the player said when it was made.
	p.seeking = true
	if req := m.request(0); !req.Seeking {
		t.Error("a frame asked for while seeking is not marked")
	}
}

// TestSeekEndNotHeldBackByTheGap: a live frame holds the next back for
// MinFrameGap, unless it showed a seek in progress: the frame of the
// seek's end is built at the update that says it is loaded.
func TestSeekEndNotHeldBackByTheGap(t *testing.T) {
	m, _ := replayModel(t, CharsetBlock, 160, 48)
	for _, seeking := range []bool{false, true} {
		m.gapClosed, m.pending, m.settled = false, false, false
		f := liveFrame(fixtureFrame(dataTime, time.Minute, 0))
		f.kind, f.req.Seeking = frameLive, seeking
		send(m, f)
		if cmd := m.onUpdate(); (cmd != nil) != seeking {
			t.Errorf("after a live frame (seeking %v), an update builds at once: %v, want %v", seeking, cmd != nil, seeking)
		}
	}
}

// TestReplayFramesShareACache: a replay's frames go through a
// FrameCache as watch's do (its workers' selection buffers kept, the
// server series brought up to date while playing); a seek's new store
// starts the cache over (analysis.TestFrameCacheNewStore). The frames
// of a paused moment, built for another end, do not.
func TestReplayFramesShareACache(t *testing.T) {
	m, _ := replayModel(t, CharsetBlock, 160, 48)
	live := m.request(0)
	if live.Cache == nil || live.Cache != m.request(0).Cache {
		t.Fatalf("a replay's live frames: cache %p then %p, want one cache", live.Cache, m.request(0).Cache)
	}
	if c := m.request(dataTime.UnixMilli()).Cache; c != nil {
		t.Errorf("a frozen frame's request has the cache %p", c)
	}
}

func TestLiveModeIgnoresPlayer(t *testing.T) {
	p := newFakePlayer()
	m := goldenModel(t, Options{Mode: ModeLive, Player: p}, 80, 24)
	send(m, keyMsg("space"), keyMsg("g"))
	if len(p.calls) != 0 || !m.Paused() {
		t.Fatalf("live mode: calls %v, paused %v", p.calls, m.Paused())
	}
	if s := screen(t, m); strings.Contains(s, "/ 10:00") {
		t.Errorf("live mode shows the replay bar:\n%s", s)
	}
}

func TestAppendClock(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0:00", 59 * time.Second: "0:59", 61 * time.Second: "1:01",
		time.Hour + 2*time.Minute + 3*time.Second: "1:02:03", -time.Second: "0:00"} {
		if got := string(appendClock(nil, d)); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}

func TestBarCells(t *testing.T) {
	got := barCells([]uint8{0, 1, 2, 3, 0, 0}, 3)
	if string([]byte{got[0] + '0', got[1] + '0', got[2] + '0'}) != "120" {
		t.Errorf("barCells = %v", got)
	}
	if got := barCells(nil, 2); got[0] != 3 {
		t.Errorf("no spikes: %v", got)
	}
}

// The header says PAUSED when the player is paused, REPLAY when it plays.
func TestReplayHeaderSaysPaused(t *testing.T) {
	m, p := replayModel(t, CharsetBlock, 120, 40)
	if h := firstLine(ansi.Strip(m.View())); !strings.Contains(h, "REPLAY PAUSED") {
		t.Errorf("paused player: header %q", h)
	}
	send(m, keyMsg("space"))
	if h := firstLine(ansi.Strip(m.View())); strings.Contains(h, "PAUSED") || !strings.Contains(h, "REPLAY") || !p.playing {
		t.Errorf("playing: header %q", h)
	}
}

// A target the replay has not reached yet is not down: no alarm at the
// first frame of a recording.
func TestReplayTargetsNotYetReadAreNotDown(t *testing.T) {
	m, _ := replayModel(t, CharsetBlock, 120, 40)
	f := fixtureFrame(dataTime, time.Minute, 0)
	f.Targets = append(f.Targets, model.TargetStatus{Name: "app"}) // in the recording, not reached yet
	send(m, liveFrame(f))
	h := firstLine(ansi.Strip(m.View()))
	if strings.Contains(h, "app down") || !strings.Contains(h, "targets 3/4 up") || !strings.Contains(h, "legacy down") {
		t.Errorf("header %q: want legacy (it failed) down, app not counted", h)
	}
	// Live, the same status stays visible: the collector reports it.
	l := goldenModel(t, Options{}, 120, 40)
	send(l, liveFrame(f))
	if h := firstLine(ansi.Strip(l.View())); !strings.Contains(h, "targets 3/5 up") {
		t.Errorf("live header %q: want every target counted", h)
	}
}

// ? lists the replay's keys in a replay.
func TestReplayKeysInHelp(t *testing.T) {
	m, _ := replayModel(t, CharsetBlock, 120, 40)
	send(m, keyMsg("?"))
	scr := ansi.Strip(m.View())
	for _, want := range []string{"REPLAY", "play/pause", "step back", "slower", "faster", "start", "end"} {
		if !strings.Contains(scr, want) {
			t.Errorf("replay help lacks %q:\n%s", want, scr)
		}
	}
	l := goldenModel(t, Options{}, 120, 40)
	send(l, keyMsg("?"))
	if strings.Contains(ansi.Strip(l.View()), "play/pause") {
		t.Error("live help lists the replay's keys")
	}
}
