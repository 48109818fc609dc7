package reportcmp

import (
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// t0 is a multiple of 2 s: the 2 s bins and the 1 s bins share edges.
const t0 = 1796186340

// bin is a timeline bin of [start, start+width] s after t0 sampled over
// its width, with originals, attempts and retries per second and the
// amplification attempts/originals; nil rates for a hole.
func bin(start, width, orig, att, retries float64) analysis.BinReport {
	b := analysis.BinReport{StartUnix: t0 + start, EndUnix: t0 + start + width, SampledSeconds: model.Some(width)}
	if orig > 0 {
		b.OriginalsPerS, b.AttemptsPerS, b.RetriesPerS = model.Some(orig), model.Some(att), model.Some(retries)
		b.Amplification = model.Some(att / orig)
	}
	return b
}

func report(bins ...analysis.BinReport) analysis.Report {
	return analysis.Report{Dependencies: []analysis.DependencyReport{{Signals: model.Signals{Target: "app", Dependency: "client"}, Timeline: bins}}}
}

// amp is a finding of RETRY_AMPLIFICATION app -> client held over
// [from, to] s after t0.
func amp(from, to float64) analysis.Finding {
	return analysis.Finding{Code: analysis.CodeRetryAmplification, Target: "app", Dependency: "client",
		Start: time.UnixMilli(int64((t0 + from) * 1000)), End: time.UnixMilli(int64((t0 + to) * 1000))}
}

func TestHoleUnder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     analysis.Finding
		other analysis.Report
		want  string // a part of the answer, "" for none
	}{
		{"a hole inside the span", amp(2, 6), report(bin(0, 2, 20, 20, 0), bin(2, 2, 0, 0, 0), bin(4, 2, 20, 30, 10)), "no data in the bin"},
		{"a hole outside the span", amp(2, 6), report(bin(0, 2, 0, 0, 0), bin(2, 2, 20, 30, 10), bin(4, 2, 20, 30, 10), bin(6, 2, 0, 0, 0)), ""},
		{"no hole", amp(2, 6), report(bin(2, 2, 20, 30, 10), bin(4, 2, 20, 30, 10)), ""},
		{"a chain's finding", analysis.Finding{Code: analysis.CodeMultipleRetryLayers, Target: "app", Dependency: "client", Chain: "a -> b",
			Start: time.UnixMilli(t0 * 1000), End: time.UnixMilli((t0 + 6) * 1000)}, report(bin(2, 2, 0, 0, 0)), ""},
		{"another row's hole", amp(2, 6), analysis.Report{Dependencies: []analysis.DependencyReport{{Signals: model.Signals{Target: "app", Dependency: "db"},
			Timeline: []analysis.BinReport{bin(2, 2, 0, 0, 0)}}}}, ""},
	} {
		got := HoleUnder(tc.f, tc.other)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestAtCrossing: a RETRY_AMPLIFICATION of one reader over the 2 s bins
// [4, 8] s is explained where the other reader's amplification of a bin
// crosses the threshold (1.2) when the bin moves by one scrape interval
// (1 s), and not where it stays on one side at every shift.
func TestAtCrossing(t *testing.T) {
	th := analysis.DefaultThresholds()
	// has: the finding's reader, amplification 1.5 in [4, 6] and [6, 8].
	has := report(bin(2, 2, 20, 20, 0), bin(4, 2, 20, 30, 10), bin(6, 2, 20, 30, 10), bin(8, 2, 20, 30, 10))
	// fine: one reader in 1 s bins. Rising at 5 s: amplification 1 until
	// 5 s, 2 after; the 2 s bin [4, 6] reads 1.5 unshifted, 1 shifted back
	// by 1 s ([3, 5]) and 2 shifted on ([5, 7]).
	rising := report(bin(2, 1, 20, 20, 0), bin(3, 1, 20, 20, 0), bin(4, 1, 20, 20, 0), bin(5, 1, 20, 40, 20), bin(6, 1, 20, 40, 20),
		bin(7, 1, 20, 40, 20), bin(8, 1, 20, 40, 20))
	// Steady at 1.5 everywhere: no shift crosses.
	steady := report(bin(2, 1, 20, 30, 10), bin(3, 1, 20, 30, 10), bin(4, 1, 20, 30, 10), bin(5, 1, 20, 30, 10), bin(6, 1, 20, 30, 10),
		bin(7, 1, 20, 30, 10), bin(8, 1, 20, 30, 10))
	for _, tc := range []struct {
		name        string
		f           analysis.Finding
		other, fine analysis.Report
		want        bool
	}{
		// The other reader's [4, 6] at 1.1 (under the threshold) and [6, 8]
		// at 1.5: the first bin is at the crossing, the second agrees.
		{"crossing in the bin the other misses", amp(4, 8), report(bin(4, 2, 20, 22, 2), bin(6, 2, 20, 30, 10)), rising, true},
		// The same readers, but the traffic steady at 1.5: the other's 1.1
		// is no crossing, the finding is not explained.
		{"steady above the threshold", amp(4, 8), report(bin(4, 2, 20, 22, 2), bin(6, 2, 20, 30, 10)), steady, false},
		// The other reader meets the conditions in every bin where the
		// finding held, yet did not fire it: no crossing explains that.
		{"the other meets the conditions everywhere", amp(4, 8), report(bin(4, 2, 20, 30, 10), bin(6, 2, 20, 30, 10)), steady, false},
		{"the same, the traffic rising", amp(4, 8), report(bin(4, 2, 20, 30, 10), bin(6, 2, 20, 30, 10)), rising, false},
		// fine lacks a second: the shifts cannot be summed, nothing explained.
		{"fine has a hole", amp(4, 8), report(bin(4, 2, 20, 22, 2), bin(6, 2, 20, 30, 10)),
			report(bin(3, 1, 20, 20, 0), bin(5, 1, 20, 40, 20), bin(6, 1, 20, 40, 20), bin(7, 1, 20, 40, 20)), false},
		// A code whose conditions read gauges or quantiles: not rebuilt.
		{"another code", analysis.Finding{Code: analysis.CodePoolSaturation, Target: "app", Dependency: "client", Start: amp(4, 8).Start, End: amp(4, 8).End},
			report(bin(4, 2, 20, 22, 2), bin(6, 2, 20, 30, 10)), rising, false},
	} {
		got := AtCrossing(tc.f, has, tc.other, tc.fine, th, time.Second)
		if (got != "") != tc.want {
			t.Errorf("%s: %q, want explained %v", tc.name, got, tc.want)
		}
		t.Logf("%s: %s", tc.name, got)
	}
}
