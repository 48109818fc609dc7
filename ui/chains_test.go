package ui

import (
	"io"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

func chainFixture() analysis.ChainResult {
	hop := func(t, d string, orig, att, max float64) analysis.HopResult {
		return analysis.HopResult{Target: t, Dependency: d, Found: true,
			OriginalsPerS: model.Some(orig), AttemptsPerS: model.Some(att), Amplification: model.Some(att / orig), MaxAttempts: model.Some(max)}
	}
	return analysis.ChainResult{
		Name: "browser",
		Hops: []analysis.HopResult{
			hop("browser", "app", 50, 50, 3),
			hop("app", "client", 98, 110, 3),
			hop("client", "provider", 110, 290, 3),
		},
		EndToEndAmplification:  model.Some(5.8),
		ProductAmplification:   model.Some(2.91),
		WorstCaseAmplification: model.Some(27),
		Gaps: []analysis.Gap{{Code: analysis.CodeHiddenRetries, From: analysis.Hop{Target: "browser", Dependency: "app"}, To: "app",
			SentPerS: 50, ArrivedPerS: 98, GapPerS: 48, Factor: model.Some(1.96)}},
	}
}

func renderChains(t *testing.T, cs Charset, chains []analysis.ChainResult, w, h int) string {
	t.Helper()
	c := &common{opts: Options{Charset: cs}.withDefaults(), g: glyphsFor(cs), st: newStyles(DefaultTheme(), lipgloss.NewRenderer(io.Discard), true)}
	v := chainsView{c: c}
	var b strings.Builder
	for _, ln := range v.view(nil, chains, w, h) {
		if ln.w > w {
			t.Errorf("line wider than %d: %q", w, ln.s)
		}
		b.WriteString(ansi.Strip(ln.s))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestGoldenChains(t *testing.T) {
	golden(t, "chains_block_120x20", renderChains(t, CharsetBlock, []analysis.ChainResult{chainFixture()}, 120, 20))
	golden(t, "chains_ascii_80x20", renderChains(t, CharsetASCII, []analysis.ChainResult{chainFixture()}, 80, 20))
	golden(t, "chains_none_80x5", renderChains(t, CharsetBlock, nil, 80, 5))
}

func TestChainsViewShowsWorstCaseAndGap(t *testing.T) {
	out := renderChains(t, CharsetBlock, []analysis.ChainResult{chainFixture()}, 120, 20)
	for _, want := range []string{"worst case 27.0x", "end-to-end 5.80x", "HIDDEN_RETRIES browser sent 50.0/s to app, 98.0/s arrived (x1.96)", "max attempts 3", "provider"} {
		if !strings.Contains(out, want) {
			t.Errorf("chain view lacks %q:\n%s", want, out)
		}
	}
}

// The provider's side of the chain: what arrived against what was sent,
// its queue, and the work it finished after the caller gave up.
func TestChainsViewShowsProvider(t *testing.T) {
	c := chainFixture()
	c.Provider = &analysis.ChainProvider{Target: "provider", SentPerS: model.Some(290), ArrivedPerS: model.Some(288),
		CallerTimeoutsPerS: model.Some(74.6), WorkAfterCancelPerS: model.Some(61.2),
		QueueDepth: model.Some(41), QueueOldestAge: model.Some(1.84), QueueWaitP99: model.Some(1.52),
		InFlight: model.Some(4), Slots: model.Some(4)}
	out := renderChains(t, CharsetBlock, []analysis.ChainResult{c}, 120, 20)
	golden(t, "chains_provider_120x20", out)
	for _, want := range []string{"sent    290/s", "arrived 288/s", "queue age 1.84s",
		"provider: caller gave up on 74.6/s, provider still finished 61.2/s · queue 41, oldest 1.84s · in flight 4/4"} {
		if !strings.Contains(out, want) {
			t.Errorf("chain view lacks %q:\n%s", want, out)
		}
	}
	// A provider reporting nothing of its own keeps the plain box.
	c.Provider = &analysis.ChainProvider{Target: "provider", SentPerS: model.Some(290)}
	out = renderChains(t, CharsetBlock, []analysis.ChainResult{c}, 120, 20)
	if strings.Contains(out, "sent    ") || strings.Contains(out, "provider: caller") || !strings.Contains(out, "in  290/s") {
		t.Errorf("provider without service signals:\n%s", out)
	}
}

// A chain header too long for the screen ends in "…", never cut silently.
func TestChainHeaderCutSaysSo(t *testing.T) {
	c := chainFixture()
	c.Name = "browser-with-a-very-long-chain-name-that-goes-on-and-on"
	out := renderChains(t, CharsetBlock, []analysis.ChainResult{c}, 80, 20)
	head := strings.Split(out, "\n")[1]
	if !strings.HasSuffix(head, "…") || ansi.StringWidth(head) != 80 {
		t.Errorf("cut chain header %q (%d columns), want 80 ending in …", head, ansi.StringWidth(head))
	}
}
