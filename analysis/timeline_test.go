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
// bins is the increase over the whole range, whatever the jitter, series
// gaps, missed scrapes, restarts and bin phase.
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
			inc, _ := increase(lookback(s.Points, start, end))
			want += inc
		}
		if !near(sum, want) {
			t.Fatalf("trial %d: bins add up to %v, range increase %v", trial, sum, want)
		}
	}
}

// A bin's rate is the counter's mean over the time its samples span, so a
// target that misses scrapes (down, or its scrapes failing under load) reads
// its true rate on both sides of the gap and nothing inside it. Dividing by
// the bin's width read the bin before the gap low (its last scrape early in
// the bin) and the bin after it high (the gap's increase in one bin).
func TestTimelineAcrossMissedScrapes(t *testing.T) {
	dep := []string{model.LabelDependency, "db"}
	for _, tc := range []struct {
		name    string
		missing []int // scrapes (seconds after t0) that did not happen
		want    []float64
	}{
		{
			// Down from 12 s to 15 s: [10, 12] ends with the scrape at 11,
			// [12, 14] has none, [14, 16] runs from 11 to 16.
			name:    "gap from mid-bin",
			missing: []int{12, 13, 14, 15},
			want:    []float64{10, 10, 10, 10, 10, 10, absent, 10, 10, 10},
		},
		{
			// Down from 11 s to 13 s: [10, 12]'s only scrape is its start
			// edge, its look-back sample: no increase, so absent, not 0;
			// [12, 14] runs from 10 to 14.
			name:    "gap from a bin's edge",
			missing: []int{11, 12, 13},
			want:    []float64{10, 10, 10, 10, 10, absent, 10, 10, 10, 10},
		},
		{
			// Every other scrape, with bins as wide as a scrape interval:
			// every other bin has no scrape and the ones between read the
			// mean over 2 s, not twice it.
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
				for i := range 20 {
					if i%2 == 0 {
						want = append(want, absent) // [i, i+1]: only its start edge
					} else {
						want = append(want, 10)
					}
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
			sum += sig.get(&bins[i]).V * float64(bins[i].EndMs-bins[i].StartMs) / 1000
		}
		if w := sig.get(&whole).V * 30; !near(sum, w) {
			t.Errorf("%s: bins add up to %v, window %v", sig.name, sum, w)
		}
	}
	// Histograms per bin: the success class sees 5 s of observations.
	checkHistogram(t, bins[0].LatencyHist["success"], model.HistogramWindow{
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
