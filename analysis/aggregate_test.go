package analysis

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/model"
)

func sv(v float64) model.Value { return model.Some(v) }

// cum builds cumulative buckets over bounds from per-bucket counts.
func cum(bounds []float64, counts ...float64) model.HistogramWindow {
	var h model.HistogramWindow
	c := 0.0
	for i, b := range bounds {
		c += counts[i]
		h.Buckets = append(h.Buckets, model.Bucket{UpperBound: b, Count: c})
	}
	h.Count = c
	return h
}

var (
	bA = []float64{0.1, 0.5, math.Inf(1)}
	bB = []float64{0.1, 1, math.Inf(1)} // differs from bA
)

// member is a replica row with every signal present; numbers are exact
// in binary so sums and ratios compare with ==. Half of its originals
// completed after reaching the provider: amplification is attempts over
// them.
func member(target string, orig, att, asucc float64) model.Signals {
	return model.Signals{
		Target: target, Dependency: "payments", Dialect: "native", StartMs: 1000, EndMs: 31000,
		OriginalsPerS: sv(orig), AttemptsPerS: sv(att), Amplification: sv(att / (orig / 2)),
		AmplificationBasis: model.AmplificationAdmitted, AttemptsPerOriginal: sv(att / orig),
		CompletedPerS: sv(orig), AdmittedPerS: sv(orig / 2),
		RetriesPerS: sv(att - orig), RescuedPerS: sv(1), BudgetDeniedPerS: sv(0.5),
		AdmissionRejectedPerS: sv(2), ProviderErrorsPerS: sv(2), TemporaryErrorsPerS: sv(1.5),
		PermanentErrorsPerS: sv(0.5), TimeoutsPerS: sv(1), SuccessesPerS: sv(orig / 2),
		DeadlineExhaustedPerS: sv(0.25), EffectiveSuccess: sv(0.5), AttemptSuccess: sv(asucc),
		ActiveCalls: sv(3), ConcurrencyLimit: sv(10), BudgetBalance: sv(5),
		PoolWaitP50: sv(0.001), PoolWaitP99: sv(0.004), BackoffP50: sv(0.02), BackoffP99: sv(0.1),
		MaxAttempts: sv(3), DeadlineSeconds: sv(2),
		DependencyReceivedPerS: sv(64), DependencyServiceTimeP50: sv(0.125), DependencyWorkAfterCancelPerS: sv(4),
		AdmissionRejectedBy: []model.Breakdown{{Key: "queue/critical", PerS: 1.5}, {Key: "concurrency/batch", PerS: 0.5}},
		ResultsPerS:         map[string]model.Value{model.ResultSuccess: sv(orig / 2), model.ResultDeadlineExhausted: sv(0.25)},
		Latency: model.ClassesOf(map[string]model.Quantiles{
			model.ClassSuccess: Quantiles(cum(bA, 2, 2, 0).Buckets),
		}),
		LatencyHist:  model.ClassesOf(map[string]model.HistogramWindow{model.ClassSuccess: cum(bA, 2, 2, 0)}),
		MixedLatency: Quantiles(cum(bA, 2, 2, 0).Buckets),
	}
}

// bare is a replica whose emitter exposes only originals and attempts,
// not split by outcome.
func bare(target string, orig, att float64) model.Signals {
	return model.Signals{Target: target, Dependency: "payments",
		OriginalsPerS: sv(orig), AttemptsPerS: sv(att), Amplification: sv(att / orig),
		AmplificationBasis: model.AmplificationStarted, AttemptsPerOriginal: sv(att / orig)}
}

func TestAggregate(t *testing.T) {
	full := func() model.Signals {
		// Two members as by member(): 4+4 originals, 8+12 attempts,
		// successful attempts 0.75*8 + 0.5*12 = 12.
		return model.Signals{
			Target: "checkout", Dependency: "payments", Dialect: "native", StartMs: 1000, EndMs: 31000,
			OriginalsPerS: sv(8), AttemptsPerS: sv(20), Amplification: sv(5),
			AmplificationBasis: model.AmplificationAdmitted, AttemptsPerOriginal: sv(2.5),
			CompletedPerS: sv(8), AdmittedPerS: sv(4),
			RetriesPerS: sv(12), RescuedPerS: sv(2), BudgetDeniedPerS: sv(1),
			AdmissionRejectedPerS: sv(4), ProviderErrorsPerS: sv(4), TemporaryErrorsPerS: sv(3),
			PermanentErrorsPerS: sv(1), TimeoutsPerS: sv(2), SuccessesPerS: sv(4),
			DeadlineExhaustedPerS: sv(0.5), EffectiveSuccess: sv(0.5), AttemptSuccess: sv(0.6),
			ActiveCalls: sv(6), ConcurrencyLimit: sv(20), BudgetBalance: sv(10),
			PoolWaitP50: sv(0.001), PoolWaitP99: sv(0.008), BackoffP50: sv(0.02), BackoffP99: sv(0.1),
			MaxAttempts: sv(5), DeadlineSeconds: sv(2),
			// The provider's own view, once: never 128/s.
			DependencyReceivedPerS: sv(64), DependencyServiceTimeP50: sv(0.125), DependencyWorkAfterCancelPerS: sv(4),
			AdmissionRejectedBy: []model.Breakdown{{Key: "concurrency/batch", PerS: 1}, {Key: "queue/critical", PerS: 3}},
			ResultsPerS:         map[string]model.Value{model.ResultSuccess: sv(4), model.ResultDeadlineExhausted: sv(0.5)},
			Latency:             model.ClassesOf(map[string]model.Quantiles{model.ClassSuccess: Quantiles(cum(bA, 4, 4, 0).Buckets)}),
			LatencyHist:         model.ClassesOf(map[string]model.HistogramWindow{model.ClassSuccess: cum(bA, 4, 4, 0)}),
			MixedLatency:        Quantiles(cum(bA, 4, 4, 0).Buckets),
		}
	}
	two := func() []model.Signals {
		a, b := member("10.0.0.1:80", 4, 8, 0.75), member("10.0.0.2:80", 4, 12, 0.5)
		b.PoolWaitP99, b.MaxAttempts = sv(0.008), sv(5)
		return []model.Signals{a, b}
	}
	for _, tc := range []struct {
		name    string
		members []model.Signals
		want    model.Signals
	}{
		{"none: every signal absent", nil, model.Signals{Target: "checkout"}},
		{
			"differing dialects are mixed",
			[]model.Signals{{Target: "a", Dialect: "envoy"}, {Target: "b"}, {Target: "c", Dialect: "native"}},
			model.Signals{Target: "g", Dialect: "mixed"},
		},
		{"two full members", two(), full()},
		{
			"differing latency buckets: the worst member's quantiles, no merged histogram",
			func() []model.Signals {
				ms := two()
				h := cum(bB, 1, 3, 0) // slower: p99 0.988 s against 0.492 s
				ms[1].LatencyHist = model.ClassesOf(map[string]model.HistogramWindow{model.ClassSuccess: h})
				ms[1].Latency = model.ClassesOf(map[string]model.Quantiles{model.ClassSuccess: Quantiles(h.Buckets)})
				ms[1].MixedLatency = Quantiles(h.Buckets)
				return ms
			}(),
			func() model.Signals {
				w := full()
				q := Quantiles(cum(bB, 1, 3, 0).Buckets)
				w.Latency = model.ClassesOf(map[string]model.Quantiles{model.ClassSuccess: q})
				w.LatencyHist = nil
				w.MixedLatency = q
				return w
			}(),
		},
		{
			"absent in one member is not absent; absent in all is",
			[]model.Signals{
				{Target: "a", Dependency: "payments", OriginalsPerS: sv(0), ActiveCalls: sv(0)},
				{Target: "b", Dependency: "payments", AttemptsPerS: sv(3)},
			},
			model.Signals{Target: "checkout", Dependency: "payments", Dialect: "",
				// 0 originals is a present zero: amplification is then
				// absent (0 denominator), never 0 or infinite.
				OriginalsPerS: sv(0), AttemptsPerS: sv(3), ActiveCalls: sv(0)},
		},
		{
			"attempt success counts only members that split attempts by outcome",
			[]model.Signals{member("a", 4, 8, 0.75), bare("b", 4, 8)},
			func() model.Signals {
				// Every rate of a alone except originals and attempts;
				// 6 successful attempts of 16.
				w := member("", 4, 8, 0.75)
				w.Target = "checkout" // b has no dialect: a's is the group's
				w.StartMs, w.EndMs = 0, 31000
				w.OriginalsPerS, w.AttemptsPerS, w.AttemptsPerOriginal = sv(8), sv(16), sv(2)
				// b has no completion counts: the started basis for both,
				// less a's admission rejections (b cannot know its own).
				w.Amplification, w.AmplificationBasis = sv(16.0/6), model.AmplificationStarted
				w.CompletedPerS, w.AdmittedPerS = model.Absent, model.Absent
				w.RetriesPerS = sv(4)
				w.EffectiveSuccess = sv(0.25)
				w.AttemptSuccess = sv(0.375)
				w.AdmissionRejectedBy = []model.Breakdown{{Key: "concurrency/batch", PerS: 0.5}, {Key: "queue/critical", PerS: 1.5}}
				return w
			}(),
		},
		{
			"a split member without attempts adds zero successful attempts",
			[]model.Signals{
				{Target: "a", Dependency: "d", AttemptsPerS: sv(0), TimeoutsPerS: sv(0), ProviderErrorsPerS: sv(0)},
				{Target: "b", Dependency: "d", AttemptsPerS: sv(4)},
			},
			model.Signals{Target: "g", Dependency: "d", AttemptsPerS: sv(4), TimeoutsPerS: sv(0), ProviderErrorsPerS: sv(0),
				AttemptSuccess: sv(0)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.want.Target
			got := Aggregate(name, tc.members)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Aggregate:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestAggregateIsOneRow: two replicas aggregated read exactly as one
// process holding both replicas' series would (a row sums its series the
// same way), except pool wait and backoff, which are the worst replica's.
func TestAggregateIsOneRow(t *testing.T) {
	series := func(replica string, k float64, split bool) []ts {
		l := func(rest ...string) []string {
			return append([]string{model.LabelDependency, "db", "replica", replica}, rest...)
		}
		step := func(v float64) string { return "0+" + strconv.FormatFloat(v*k, 'g', -1, 64) + "x30" }
		hist := func(le string, v float64, class string) ts {
			return ts{model.MetricRequestDuration + "_bucket", l("le", le, "result_class", class), step(v)}
		}
		out := []ts{
			{model.MetricOriginals, l("priority", "critical"), step(6)},
			{model.MetricRetries, l(), step(5)},
			{model.MetricRescued, l(), step(2)},
			{model.MetricBudgetDenied, l(), step(1)},
			{model.MetricAdmissionRejected, l("reason", "queue", "priority", "critical"), step(1)},
			{model.MetricResults, l("result", "success", "priority", "critical"), step(5)},
			{model.MetricResults, l("result", "provider_error", "priority", "critical"), step(1)},
			{model.MetricActiveCalls, l(), strconv.FormatFloat(2*k, 'g', -1, 64) + "x30"},
			{model.MetricConcurrencyLimit, l(), "20x30"},
			{model.MetricBudgetBalance, l(), "200-1x30"},
			{model.MetricPolicyMaxAttempts, l(), strconv.FormatFloat(k+2, 'g', -1, 64) + "x30"},
			hist("0.1", 5, "success"), hist("0.5", 8, "success"), hist("+Inf", 8, "success"),
			hist("0.1", 2, "fast_failure"), hist("0.5", 2, "fast_failure"), hist("+Inf", 2, "fast_failure"),
		}
		if split {
			return append(out,
				ts{model.MetricAttempts, l("outcome", "success"), step(9)},
				ts{model.MetricAttempts, l("outcome", "temporary_error"), step(2)},
				ts{model.MetricAttempts, l("outcome", "timeout"), step(3)})
		}
		return append(out, ts{model.MetricAttempts, l(), step(14)})
	}
	times := every(t0, 1000, 31)
	a, b := series("a", 1, true), series("b", 3, false)
	st := load(t, nil, "a", times, a...)
	load(t, st, "b", times, b...)
	load(t, st, "ab", times, append(a, b...)...)
	end := times[len(times)-1]
	got := Aggregate("ab", []model.Signals{
		SignalsFor(st, "a", "db", end-20000, end),
		SignalsFor(st, "b", "db", end-20000, end),
	})
	want := SignalsFor(st, "ab", "db", end-20000, end)
	gv, wv := signalValues(&got), signalValues(&want)
	// One row holding a's outcome-labelled attempts beside b's unlabelled
	// ones cannot know its errors (b's are unknown): absent there. The
	// fleet aggregate keeps what the replicas that know say (a's), as the
	// "attempt success counts only members that split" case of
	// TestAggregate pins down.
	partial := map[string]bool{"temporary_errors": true, "permanent_errors": true, "provider_errors": true, "attempt_success": true}
	for k := range partial {
		if wv[k].OK() {
			t.Errorf("%s of the mixed row = %v, want absent", k, wv[k])
		}
		if !gv[k].OK() {
			t.Errorf("%s of the aggregate absent, want a's", k)
		}
	}
	for k := range wv {
		if strings.HasPrefix(k, "pool_wait") || strings.HasPrefix(k, "backoff") || partial[k] {
			continue
		}
		if gv[k].OK() != wv[k].OK() || !near(gv[k].V(), wv[k].V()) {
			t.Errorf("%s: aggregated %+v, one row %+v", k, gv[k], wv[k])
		}
	}
	if !wv["timeouts"].OK() || !wv["max_attempts"].OK() || wv["max_attempts"].V() != 5 {
		t.Fatalf("fixture lost its point: %+v", wv)
	}
	for _, class := range model.LatencyClasses {
		g, w := got.Latency.At(class), want.Latency.At(class)
		for i, p := range [3][2]model.Value{{g.P50, w.P50}, {g.P90, w.P90}, {g.P99, w.P99}} {
			if p[0].OK() != p[1].OK() || !near(p[0].V(), p[1].V()) {
				t.Errorf("%s q%d: aggregated %+v, one row %+v", class, i, p[0], p[1])
			}
		}
	}
	if !reflect.DeepEqual(got.ResultsPerS, want.ResultsPerS) {
		t.Errorf("results: aggregated %v, one row %v", got.ResultsPerS, want.ResultsPerS)
	}
	if len(got.AdmissionRejectedBy) != 1 || !near(got.AdmissionRejectedBy[0].PerS, want.AdmissionRejectedBy[0].PerS) ||
		!got.AdmissionRejectedBy[0].Labels.Equal(want.AdmissionRejectedBy[0].Labels) {
		t.Errorf("admission by: aggregated %+v, one row %+v", got.AdmissionRejectedBy, want.AdmissionRejectedBy)
	}
}

// bin is a timeline bin over [start, end] seconds.
func bin(target string, start, end int64, orig, att float64) model.Signals {
	return model.Signals{Target: target, Dependency: "payments", StartMs: start * 1000, EndMs: end * 1000,
		OriginalsPerS: sv(orig), AttemptsPerS: sv(att), Amplification: sv(att / orig),
		AmplificationBasis: model.AmplificationStarted, AttemptsPerOriginal: sv(att / orig)}
}

func TestAggregateTimeline(t *testing.T) {
	type b = model.Signals
	gap := func(start, end int64) b {
		return b{Target: "a", Dependency: "payments", StartMs: start * 1000, EndMs: end * 1000}
	}
	for _, tc := range []struct {
		name    string
		members [][]model.Signals
		want    []model.Signals
	}{
		{"no members", nil, nil},
		{"members without bins", [][]model.Signals{nil, {}}, nil},
		{
			"same edges: bin by bin, a gap adds nothing",
			[][]model.Signals{
				{bin("a", 0, 10, 1, 2), gap(10, 20), bin("a", 20, 30, 2, 2)},
				{bin("b", 0, 10, 3, 6), bin("b", 10, 20, 4, 8), bin("b", 20, 30, 2, 6)},
			},
			[]model.Signals{bin("g", 0, 10, 4, 8), bin("g", 10, 20, 4, 8), bin("g", 20, 30, 4, 8)},
		},
		{
			"differing bins: the longest member's edges; others add where theirs match",
			[][]model.Signals{
				// b started later: its first bin is the group's second.
				{bin("b", 10, 20, 4, 8), bin("b", 20, 30, 2, 6)},
				{bin("a", 0, 10, 1, 2), bin("a", 10, 20, 2, 2), bin("a", 20, 30, 2, 2)},
				// c's edges are off by 5 s: nowhere to add it.
				{bin("c", 5, 15, 100, 100), bin("c", 15, 25, 100, 100)},
			},
			[]model.Signals{bin("g", 0, 10, 1, 2), bin("g", 10, 20, 6, 10), bin("g", 20, 30, 4, 8)},
		},
		{
			"every member absent in a bin: absent, not zero",
			[][]model.Signals{{gap(0, 10)}, {gap(0, 10)}},
			[]model.Signals{{Target: "g", Dependency: "payments", StartMs: 0, EndMs: 10000}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var members []*model.Timeline
			for _, m := range tc.members {
				members = append(members, model.NewTimeline(m))
			}
			got := AggregateTimeline(model.Key{Target: "g"}, members).Bins()
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("AggregateTimeline:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// fleet is n replicas with every signal, full latency histograms and
// bins bins each, as a frame holds them.
func fleet(n, bins int) (rows []model.Signals, tls []*model.Timeline) {
	bounds := []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, math.Inf(1)}
	counts := []float64{0, 2, 10, 40, 120, 300, 180, 60, 20, 8, 2, 0}
	mk := func(i int, start int64) model.Signals {
		s := member("replica-"+strconv.Itoa(i), float64(4+i%7), float64(8+i%11), 0.75)
		s.StartMs, s.EndMs = start, start+10000
		s.ResultsPerS = map[string]model.Value{}
		for _, r := range contractResults {
			s.ResultsPerS[r] = sv(float64(i % 3))
		}
		s.LatencyHist = model.ClassesOf(map[string]model.HistogramWindow{})
		s.Latency = model.ClassesOf(map[string]model.Quantiles{})
		for _, c := range model.LatencyClasses {
			h := cum(bounds, counts...)
			s.LatencyHist.Set(c, h)
			s.Latency.Set(c, Quantiles(h.Buckets))
		}
		return s
	}
	for i := range n {
		rows = append(rows, mk(i, 0))
		tl := make([]model.Signals, bins)
		for j := range tl {
			tl[j] = mk(i, int64(j)*10000)
		}
		tls = append(tls, model.NewTimeline(tl))
	}
	return rows, tls
}

func TestAggregateFleetSums(t *testing.T) {
	rows, tls := fleet(200, 30)
	g := Aggregate("checkout", rows)
	want := 0.0
	for i := range rows {
		want += rows[i].OriginalsPerS.V()
	}
	if g.OriginalsPerS != sv(want) || g.ConcurrencyLimit != sv(2000) || g.LatencyHist.At(model.ClassFailure).Count != 200*742 {
		t.Errorf("200 members: originals %v (want %v), limit %v (want 2000), failure n %v (want %v)",
			g.OriginalsPerS, want, g.ConcurrencyLimit, g.LatencyHist.At(model.ClassFailure).Count, 200*742)
	}
	tl := AggregateTimeline(model.Key{Target: "checkout"}, tls).Bins()
	if len(tl) != 30 || tl[29].StartMs != 290000 || tl[29].OriginalsPerS != sv(want) {
		t.Errorf("timeline: %d bins, last from %d with originals %v", len(tl), tl[len(tl)-1].StartMs, tl[len(tl)-1].OriginalsPerS)
	}
}

// BenchmarkAggregate200x30: one group of 200 replicas, its window row and
// 30 timeline bins, as the dashboard's build does for every group.
func BenchmarkAggregate200x30(b *testing.B) {
	rows, tls := fleet(200, 30)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Aggregate("checkout", rows)
		if tl := AggregateTimeline(model.Key{Target: "checkout"}, tls); tl.Len() != 30 {
			b.Fatalf("%d bins", tl.Len())
		}
	}
}

// A group's timeline merges its members' histograms bin by bin, read from
// timelines held by field.
func TestAggregateTimelineHistograms(t *testing.T) {
	bounds := []float64{0.1, 1, math.Inf(1)}
	mk := func(start int64, counts ...float64) model.Signals {
		s := bin("m", start, start+10, 1, 1)
		s.LatencyHist.Set(model.ClassSuccess, cum(bounds, counts...))
		return s
	}
	a := model.NewTimeline([]model.Signals{mk(0, 1, 2, 0), mk(10, 4, 0, 0)})
	b := model.NewTimeline([]model.Signals{mk(0, 0, 3, 1), mk(10, 1, 1, 1)})
	got := AggregateTimeline(model.Key{Target: "g"}, []*model.Timeline{a, b}).Bins()
	for i, want := range []float64{7, 7} {
		if len(got) != 2 || got[i].LatencyHist.At(model.ClassSuccess).Count != want {
			t.Fatalf("bin %d: group histogram %+v, want %v observations", i, got[i].LatencyHist, want)
		}
	}
	if h := got[0].LatencyHist.At(model.ClassSuccess); h.Buckets[0].Count != 1 || h.Buckets[1].Count != 6 {
		t.Errorf("bin 0 buckets %+v, want 1 and 6 cumulative in the first two", h.Buckets)
	}
}
