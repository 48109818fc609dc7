package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

func TestTimelineBins(t *testing.T) {
	dep := []string{model.LabelDependency, "db"}
	// Scrapes every second from t0+20 s to t0+60 s: nothing before.
	st := load(t, nil, "svc", every(t0+20000, 1000, 41),
		ts{model.MetricOriginals, dep, "0+2x40"},
		ts{model.MetricActiveCalls, dep, "0+1x40"},
	)
	bins := Timeline(st, model.Key{Target: "svc", Dependency: "db"}, 10*time.Second, t0, t0+65000)
	if len(bins) != 7 {
		t.Fatalf("%d bins, want 7", len(bins))
	}
	for i, b := range bins {
		wantStart, wantEnd := t0+int64(i)*10000, min(t0+int64(i+1)*10000, t0+65000)
		if b.StartMs != wantStart || b.EndMs != wantEnd || b.Target != "svc" || b.Dependency != "db" {
			t.Errorf("bin %d = %s/%s [%d, %d], want [%d, %d]", i, b.Target, b.Dependency, b.StartMs-t0, b.EndMs-t0, wantStart-t0, wantEnd-t0)
		}
	}
	for i, tc := range []struct{ originals, active float64 }{
		{absent, absent}, // before the data
		// The first scrape is on this bin's end edge: one sample is not
		// enough for a rate, but the gauge has its value.
		{absent, 0},
		{2, 10},
		{2, 20},
		{2, 30},
		{2, 40},
		// The last bin, cut at t0+65 s, holds no scrape after the one on
		// its start edge.
		{absent, 40},
	} {
		checkValue(t, fmt.Sprint("originals bin ", i), bins[i].OriginalsPerS, tc.originals)
		checkValue(t, fmt.Sprint("active bin ", i), bins[i].ActiveCalls, tc.active)
	}
	if got := Timeline(st, model.Key{Target: "svc", Dependency: "db"}, 0, t0, t0+1000); got != nil {
		t.Errorf("zero bin: %v", got)
	}
	if got := Timeline(st, model.Key{Target: "svc", Dependency: "db"}, time.Second, t0, t0); got != nil {
		t.Errorf("empty range: %v", got)
	}
}

// The timeline's defining property: rate x sampled span summed over the
// bins is the counter's interpolated increase over the range (its value at
// each end read on the line between the samples around it, reset-corrected),
// whatever the jitter, series gaps, missed scrapes, restarts and bin phase.
// The truth is computed here another way: the reset-corrected cumulative
// count, read at the range's ends.
func TestTimelineAddsUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 30 {
		const n = 300
		var times []int64
		for i := range n {
			if rng.IntN(100) < 3 {
				continue // a missed scrape: the target has no sample there
			}
			times = append(times, t0+int64(i)*1000+int64(rng.IntN(400))-200)
		}
		gen := func() string {
			var b strings.Builder
			v := 0.0
			for range times {
				switch r := rng.IntN(100); {
				case r < 5:
					b.WriteString(" _")
					continue
				case r < 7:
					v = float64(rng.IntN(3)) // restart
				default:
					v += float64(rng.IntN(10))
				}
				b.WriteString(" " + model.FormatFloat(v))
			}
			return b.String()
		}
		dep := []string{model.LabelDependency, "db"}
		st := load(t, nil, "svc", times,
			ts{model.MetricOriginals, append(dep, "priority", "a"), gen()},
			ts{model.MetricOriginals, append(dep, "priority", "b"), gen()},
			ts{model.MetricAttempts, append(dep, "outcome", "timeout"), gen()},
		)
		bin := time.Duration(2000+rng.IntN(20000)) * time.Millisecond
		start := t0 + int64(rng.IntN(30000)) - 10000
		end := start + 10*bin.Milliseconds() + int64(rng.IntN(2000)) // a cut last bin too
		var sum float64
		for _, b := range Timeline(st, model.Key{Target: "svc", Dependency: "db"}, bin, start, end) {
			sum += b.OriginalsPerS.Or(0) * float64(b.SampledToMs-b.SampledFromMs) / 1000
		}
		// From the store's own samples: a series that appears after the
		// target's first scrape starts from a 0 the store puts before it.
		var want float64
		for _, s := range st.SelectSince("svc", model.MetricOriginals, nil, math.MinInt64) {
			want += cumulativeAt(s.Points, end) - cumulativeAt(s.Points, start)
		}
		if !near(sum, want) {
			t.Fatalf("trial %d: bins add up to %v, interpolated range increase %v", trial, sum, want)
		}
	}
}

// cumulativeAt is a counter's reset-corrected count since its first sample
// at t, linear between samples, flat before the first and after the last.
func cumulativeAt(pts []model.Point, t int64) float64 {
	var c float64
	for k := 1; k < len(pts); k++ {
		d := pts[k].V - pts[k-1].V
		if d < 0 {
			d = pts[k].V
		}
		switch {
		case pts[k].T <= t:
			c += d
		case pts[k-1].T < t:
			return c + d*float64(t-pts[k-1].T)/float64(pts[k].T-pts[k-1].T)
		}
	}
	return c
}

// Bins add up to their row: on recordings sampled every 1 to 30 s (each
// target its own interval, with jitter), with series born mid-recording
// and a restart, the counts of a whole recording's bins, the partial first
// and last bins included, sum to the row's count over the same span. A
// bin's count is its rate times the part of it the recording covers (its
// width, clipped to the first and last scrape), as a reader of the bins
// would count.
func TestTimelineBinsAddUpToRow(t *testing.T) {
	// The counts are the same sample increases split by linear weights:
	// only rounding separates them.
	const tolerance = 0.005
	rng := rand.New(rand.NewPCG(34, 1))
	for trial := range 40 {
		interval := int64(1000 + rng.IntN(29001))
		length := int64(300_000 + rng.IntN(600_000))
		var times []int64
		for at := t0 + int64(rng.IntN(5000)); at < t0+length; at += interval + int64(rng.IntN(int(interval/5)+1)) - interval/10 {
			times = append(times, at)
		}
		if len(times) < 4 {
			continue
		}
		restart := rng.IntN(len(times))
		gen := func(bornAt int, rate float64) string {
			var b strings.Builder
			v := 0.0
			for i := range times {
				switch {
				case i < bornAt:
					b.WriteString(" _")
					continue
				case i == restart:
					v = float64(rng.IntN(5))
				default:
					v += float64(rng.IntN(int(rate) + 1))
				}
				b.WriteString(" " + model.FormatFloat(v))
			}
			return b.String()
		}
		dep := []string{model.LabelDependency, "provider"}
		st := load(t, nil, "client", times,
			ts{model.MetricOriginals, append(dep, "priority", "a"), gen(0, 50)},
			ts{model.MetricOriginals, append(dep, "priority", "b"), gen(rng.IntN(len(times)), 400)}, // born mid-recording
			ts{model.MetricAttempts, append(dep, "outcome", "success"), gen(0, 90)},
		)
		bin := time.Duration(1000+rng.IntN(20000)) * time.Millisecond
		// The span: the recording's, from an aligned edge before its first
		// scrape to one after its last, so both end bins are partial.
		binMs := bin.Milliseconds()
		start := floorTo(times[0], binMs)
		end := floorTo(times[len(times)-1], binMs) + binMs
		key := model.Key{Target: "client", Dependency: "provider"}
		var originals, attempts float64
		for _, b := range Timeline(st, key, bin, start, end) {
			secs := float64(max(min(b.EndMs, times[len(times)-1])-max(b.StartMs, times[0]), 0)) / 1000
			if got := sampledSeconds(&b); secs > 0 && (!got.OK() || got.V() != secs) {
				t.Fatalf("trial %d: bin at %d ms sampled %v s, covers %v s", trial, b.StartMs-start, got, secs)
			}
			originals += b.OriginalsPerS.Or(0) * secs
			attempts += b.AttemptsPerS.Or(0) * secs
		}
		row := SignalsFor(st, "client", "provider", start, end)
		secs := float64(row.SampledToMs-row.SampledFromMs) / 1000
		for _, c := range []struct {
			name      string
			bins, row float64
		}{{"originals", originals, row.OriginalsPerS.V() * secs}, {"attempts", attempts, row.AttemptsPerS.V() * secs}} {
			if c.row <= 0 || math.Abs(c.bins-c.row) > tolerance*c.row {
				t.Errorf("trial %d (every %d ms, %v bins): %s bins add up to %.1f, row %.1f", trial, interval, bin, c.name, c.bins, c.row)
			}
		}
	}
}

// A target that misses scrapes (down, or its scrapes failing under load):
// the increase across the gap is spread over it, so every bin the gap
// spans reads the mean rate across it, and none is empty or doubled.
func TestTimelineAcrossMissedScrapes(t *testing.T) {
	dep := []string{model.LabelDependency, "db"}
	for _, tc := range []struct {
		name    string
		missing []int // scrapes (seconds after t0) that did not happen
		want    []float64
	}{
		{
			// Down from 12 s to 15 s: 11 to 16 is spread over [10, 12],
			// [12, 14] and [14, 16].
			name:    "gap from mid-bin",
			missing: []int{12, 13, 14, 15},
			want:    []float64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10},
		},
		{
			// Down from 11 s to 13 s: [10, 12]'s only scrape is its start
			// edge; it holds its share of 10 to 14.
			name:    "gap from a bin's edge",
			missing: []int{11, 12, 13},
			want:    []float64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10},
		},
		{
			// Every other scrape, with bins as wide as a scrape interval:
			// every bin reads the mean over the 2 s around it, none is
			// empty, none reads twice it.
			name:    "bins narrower than the scrape interval",
			missing: []int{1, 3, 5, 7, 9, 11, 13, 15, 17, 19},
			want:    nil, // checked below with 1 s bins
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skip := map[int]bool{}
			for _, m := range tc.missing {
				skip[m] = true
			}
			var times []int64
			var vals strings.Builder
			for i := 0; i <= 20; i++ {
				if !skip[i] {
					times = append(times, t0+int64(i)*1000)
					fmt.Fprintf(&vals, " %d", 10*i) // 10 originals a second throughout
				}
			}
			st := load(t, nil, "svc", times, ts{model.MetricOriginals, dep, vals.String()})
			bin, want := 2*time.Second, tc.want
			if want == nil {
				bin = time.Second
				for range 20 {
					want = append(want, 10)
				}
			}
			bins := Timeline(st, model.Key{Target: "svc", Dependency: "db"}, bin, t0, t0+20000)
			if len(bins) != len(want) {
				t.Fatalf("%d bins, want %d", len(bins), len(want))
			}
			for i, b := range bins {
				checkValue(t, fmt.Sprintf("originals/s in [%d, %d]", (b.StartMs-t0)/1000, (b.EndMs-t0)/1000), b.OriginalsPerS, want[i])
			}
		})
	}
}

// With a scrape on the range's start, the bins add up to exactly what
// SignalsFor and Increase report for the whole range.
func TestTimelineMatchesWindow(t *testing.T) {
	st := fixture(t)
	key := model.Key{Target: "svc", Dependency: "db"}
	bins := Timeline(st, key, 5*time.Second, t0, t0+30000)
	whole := SignalsFor(st, "svc", "db", t0, t0+30000)
	for _, sig := range []struct {
		name string
		get  func(*model.Signals) model.Value
	}{
		{"originals", func(s *model.Signals) model.Value { return s.OriginalsPerS }},
		{"attempts", func(s *model.Signals) model.Value { return s.AttemptsPerS }},
		{"timeouts", func(s *model.Signals) model.Value { return s.TimeoutsPerS }},
		{"admission", func(s *model.Signals) model.Value { return s.AdmissionRejectedPerS }},
		{"successes", func(s *model.Signals) model.Value { return s.SuccessesPerS }},
	} {
		var sum float64
		for i := range bins {
			sum += sig.get(&bins[i]).V() * float64(bins[i].EndMs-bins[i].StartMs) / 1000
		}
		if w := sig.get(&whole).V() * 30; !near(sum, w) {
			t.Errorf("%s: bins add up to %v, window %v", sig.name, sum, w)
		}
	}
	// Histograms per bin: the success class sees 5 s of observations.
	checkHistogram(t, bins[0].LatencyHist.At("success"), model.HistogramWindow{
		Buckets: bk(0.1, 25, 0.5, 40, 1, 40, inf, 40), Count: 40, Sum: 7.5,
	})
}

// A sliver at the end of the range joins the previous bin instead of
// becoming a bin whose rate divides one scrape's increase by milliseconds.
func TestTimelineMergesEndSliver(t *testing.T) {
	times := every(1_000_000, 1000, 22)
	st := load(t, nil, "svc", times, ts{model.MetricOriginals, []string{model.LabelDependency, "db"}, "0+10x21"})
	bins := Timeline(st, model.Key{Target: "svc", Dependency: "db"}, 10*time.Second, times[0], times[0]+20_013)
	if len(bins) != 2 {
		t.Fatalf("bins = %d, want 2 (the 13 ms sliver merged)", len(bins))
	}
	if last := bins[1]; last.EndMs != times[0]+20_013 {
		t.Errorf("last bin ends at %d, want the range end", last.EndMs)
	}
	for i, b := range bins {
		if v := b.OriginalsPerS.Or(0); v > 10.1 || v < 9.9 {
			t.Errorf("bin %d originals/s = %v, want about 10", i, v)
		}
	}
}
