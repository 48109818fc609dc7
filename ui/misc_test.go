package ui

import (
	"github.com/mattn/go-runewidth"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/retrytop/retrytop/model"
)

func TestCharsetFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want Charset
	}{
		{map[string]string{"LANG": "en_US.UTF-8", "TERM": "xterm-256color"}, CharsetBlock},
		{map[string]string{"LANG": "de_DE.utf8"}, CharsetBlock},
		{map[string]string{"LC_ALL": "C", "LANG": "en_US.UTF-8"}, CharsetASCII}, // LC_ALL wins
		{map[string]string{"LC_CTYPE": "en_US.UTF-8", "LANG": "C"}, CharsetBlock},
		{map[string]string{"LANG": "en_US.UTF-8", "TERM": "linux"}, CharsetASCII},
		{map[string]string{"LANG": "en_US.ISO-8859-1"}, CharsetASCII},
		{map[string]string{}, CharsetASCII}, // POSIX locale
	} {
		got := CharsetFromEnv(func(k string) string { return c.env[k] })
		if got != c.want {
			t.Errorf("%v: %v, want %v", c.env, got, c.want)
		}
	}
	for _, s := range []string{"braille", "block", "ascii", " ASCII "} {
		c, err := ParseCharset(s)
		if err != nil || !strings.EqualFold(c.String(), strings.TrimSpace(s)) {
			t.Errorf("ParseCharset(%q) = %v, %v", s, c, err)
		}
	}
	if _, err := ParseCharset("emoji"); err == nil {
		t.Error("ParseCharset accepted emoji")
	}
	if !NoColorFromEnv(func(k string) string { return map[string]string{"NO_COLOR": "1"}[k] }) ||
		NoColorFromEnv(func(string) string { return "" }) {
		t.Error("NoColorFromEnv")
	}
}

func TestGlyphsAreOneColumn(t *testing.T) {
	for _, g := range []*glyphs{&blockGlyphs, &asciiGlyphs} {
		all := append([]string{g.zero, g.gap, g.above, g.bar, g.barEmpty, g.selected, g.down, g.warn, g.live, g.replay, g.rule, g.arrowDown, g.mark},
			g.fill...)
		all = append(all, g.outcome[:]...)
		all = append(all, g.levels[:]...)
		all = append(all, g.classBar[:]...)
		all = append(all, g.classGlyph[:]...)
		for _, s := range all {
			if textWidth(s) != 1 {
				t.Errorf("glyph %q is %d columns", s, textWidth(s))
			}
		}
		seen := map[string]bool{}
		for _, s := range g.outcome {
			if seen[s] {
				t.Errorf("outcome glyph %q used twice", s)
			}
			seen[s] = true
		}
	}
	for _, s := range asciiGlyphs.outcome {
		for _, r := range s {
			if r > 0x7e {
				t.Errorf("ascii glyph %q", s)
			}
		}
	}
}

func TestFormat(t *testing.T) {
	abs := model.Absent
	for _, c := range []struct {
		got, want string
	}{
		{string(appendRate(nil, abs)), "-"},
		{string(appendRate(nil, model.Some(0))), "0"},
		{string(appendRate(nil, model.Some(0.004))), "<.01"},
		{string(appendRate(nil, model.Some(4.567))), "4.57"},
		{string(appendRate(nil, model.Some(45.67))), "45.7"},
		{string(appendRate(nil, model.Some(456.7))), "457"},
		{string(appendRate(nil, model.Some(4567))), "4.57k"},
		{string(appendRate(nil, model.Some(45678))), "45.7k"},
		{string(appendRate(nil, model.Some(4.5e6))), "4.50M"},
		{string(appendPct(nil, abs)), "-"},
		{string(appendPct(nil, model.Some(1))), "100%"},
		{string(appendPct(nil, model.Some(0.99999))), "99.9%"},
		{string(appendPct(nil, model.Some(0))), "0%"},
		{string(appendPct(nil, model.Some(0.0004))), "<0.1%"},
		{string(appendAmp(nil, model.Some(1.683))), "1.68x"},
		{string(appendAmp(nil, model.Some(12.34))), "12.3x"},
		{string(appendAmp(nil, abs)), "-"},
		{string(appendAmpShort(nil, model.Some(2.41))), "2.4"},
		{string(appendAmpShort(nil, model.Some(250))), "99+"},
		{string(appendSeconds(nil, model.Some(0.00085), "µs")), "850µs"},
		{string(appendSeconds(nil, model.Some(0.0012), "us")), "1.2ms"},
		{string(appendSeconds(nil, model.Some(0.045), "us")), "45ms"},
		{string(appendSeconds(nil, model.Some(1.234), "us")), "1.23s"},
		{string(appendSeconds(nil, model.Some(0), "us")), "0"},
		{string(appendSeconds(nil, abs, "us")), "-"},
		{string(appendBound(nil, 0.0025, "us")), "2.5ms"},
		{string(appendBound(nil, 1, "us")), "1s"},
		{string(appendBound(nil, math.Inf(1), "us")), "+Inf"},
		{string(appendGauge(nil, model.Some(64))), "64"},
		{string(appendGauge(nil, model.Some(0.5))), "0.50"},
		{string(appendActive(nil, model.Some(12), abs)), "12/-"},
		{string(appendActive(nil, abs, abs)), "-"},
		{string(appendAge(nil, 500*time.Millisecond)), "<1s"},
		{string(appendAge(nil, 75*time.Second)), "1m15s"},
		{string(appendAge(nil, 2*time.Hour+3*time.Minute)), "2h03m"},
		{windowLabel(10 * time.Second), "10s"},
		{windowLabel(15 * time.Minute), "15m"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestTruncateAndJoin(t *testing.T) {
	if s, w := truncate("支払いサービス", 7); w > 7 || !strings.HasSuffix(s, "…") {
		t.Errorf("wide truncate: %q %d", s, w)
	}
	got := joinColumns([][]line{{{"ab", 2}, {"c", 1}}, {{"x", 1}}}, []int{4, 0}, "|")
	if got[0].s != "ab  |x" || got[1].s != "c   |" || got[0].w != 6 {
		t.Errorf("join: %+v", got)
	}
}

func TestMixedWarning(t *testing.T) {
	r := row("a", "b", 100, 2, 0.34)
	if w := mixedWarning(&r); !w.show || w.fastShare < 0.5 {
		t.Errorf("fast failures dominate and mixed p99 is far below success p99: %+v", w)
	}
	r = row("a", "b", 100, 1, 0.01)
	if w := mixedWarning(&r); w.show {
		t.Errorf("no warning expected: %+v", w)
	}
	var empty model.Signals
	if w := mixedWarning(&empty); w.show {
		t.Error("warning without data")
	}
}

// TestRenderRobustness renders odd data at odd sizes: absent, zero, NaN,
// infinite, negative and huge values, empty timelines, long names.
func TestRenderRobustness(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	odd := []float64{0, math.NaN(), math.Inf(1), -3, 1e12, 1e-9, 0.5, 42}
	val := func() model.Value {
		if rng.IntN(4) == 0 {
			return model.Absent
		}
		return model.Some(odd[rng.IntN(len(odd))])
	}
	for iter := 0; iter < 40; iter++ {
		f := fixtureFrame(dataTime, time.Minute, iter%2)
		for i := range f.Rows {
			r := &f.Rows[i]
			for _, p := range []*model.Value{&r.OriginalsPerS, &r.AttemptsPerS, &r.Amplification, &r.ProviderErrorsPerS,
				&r.EffectiveSuccess, &r.ActiveCalls, &r.ConcurrencyLimit, &r.PoolWaitP99, &r.SuccessesPerS, &r.MixedLatency.P99} {
				*p = val()
			}
			if iter%3 == 0 {
				r.LatencyHist = nil
				r.Target = strings.Repeat("very-long-target-name-", 4)
			}
			tl := f.Timelines[r.Key()].Bins()
			for j := range tl {
				tl[j].OriginalsPerS, tl[j].AttemptsPerS, tl[j].Amplification, tl[j].ActiveCalls = val(), val(), val(), val()
			}
			f.Timelines[r.Key()] = model.NewTimeline(tl)
			if iter%4 == 0 {
				delete(f.Timelines, r.Key())
			}
		}
		w, h := 80+rng.IntN(180), 24+rng.IntN(50)
		m := newTestModel(t, Options{Charset: Charset(iter % 3)}, nil)
		send(m, tea.WindowSizeMsg{Width: w, Height: h}, liveFrame(f))
		screen(t, m)
		keys(m, "j", "enter")
		screen(t, m)
		keys(m, "G")
		screen(t, m)
	}
}

// textWidth's fast ranges agree with runewidth, rune by rune.
func TestTextWidthFastRanges(t *testing.T) {
	for _, rg := range [][2]rune{{0x20, 0x7e}, {0xa0, 0x2ff}, {0x2010, 0x2027}, {0x2030, 0x205e}, {0x2190, 0x22ff}, {0x2500, 0x25fc}} {
		for r := rg[0]; r <= rg[1]; r++ {
			if got, want := textWidth("a"+string(r)), 1+runewidth.StringWidth(string(r)); got != want {
				t.Errorf("U+%04X: width %d, runewidth %d", r, got, want)
			}
		}
	}
	for _, s := range []string{"日本", "a→b", "checkout ×40", "⌚x", "e\u0301"} {
		if got, want := textWidth(s), runewidth.StringWidth(s); got != want {
			t.Errorf("%q: width %d, runewidth %d", s, got, want)
		}
	}
}
