package analysis

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// TestBinJSONFieldsMatchSignals: appendBinJSON knows every field a bin
// encodes, in order; a field added to model.Signals fails here (and turns
// the direct path off) until signalsValueFields has it.
func TestBinJSONFieldsMatchSignals(t *testing.T) {
	if !binFieldsMatch {
		t.Fatalf("BinReport encodes %v\nappendBinJSON writes %v", encodedFields(reflect.TypeFor[BinReport]()), binJSONLayout())
	}
}

// randomBin draws a bin from values and strings that encoding/json writes
// in every way it can: absent, zero, integral, the float cutoffs of its
// 'e' format (1e-6, 1e21), non-finite values (strings in a Value, an error
// in start_unix), keys to sort, strings it escapes (HTML, quotes,
// controls, invalid UTF-8, U+2028) and breakdown lists.
func randomBin(rng *rand.Rand) BinReport {
	floats := []float64{0, 1, -1, 0.5, 1e-6, 9.99e-7, 1e-7, 1.5e-300, 1e20, 1e21, 123456789012345678901234, -2.5e-9, 3.0000000000000004, 1.0 / 3,
		math.NaN(), math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64, math.MaxFloat64}
	num := func() float64 {
		if rng.IntN(3) == 0 {
			return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		}
		return floats[rng.IntN(len(floats))]
	}
	val := func() model.Value {
		if rng.IntN(4) == 0 {
			return model.Absent
		}
		return model.Some(num())
	}
	strs := []string{"", "svc_0", "envoy-a", "a b/c:d.e", "a<b", "x&y", "q\"uote", "back\\slash", "tab\there", "del\x7f", "caf\u00e9",
		"zw\u200bsp", "line\u2028sep", "bad\xffutf8", "c1\u009b", "~!@#$%^*()_+{}|:?[];',./`"}
	str := func() string { return strs[rng.IntN(len(strs))] }
	plain := func() string {
		if rng.IntN(8) == 0 {
			return str()
		}
		return strs[1+rng.IntN(3)]
	}
	var s model.Signals
	s.Target, s.Dependency = plain(), plain()
	if rng.IntN(2) == 0 {
		s.Dialect = plain()
	}
	if rng.IntN(2) == 0 {
		s.AmplificationBasis = plain()
	}
	vs := []*model.Value{&s.OriginalsPerS, &s.AttemptsPerS, &s.Amplification, &s.AttemptsPerOriginal, &s.CompletedPerS, &s.AdmittedPerS,
		&s.OperationAttemptsPerS, &s.RetriesPerS, &s.RescuedPerS, &s.BudgetDeniedPerS, &s.AdmissionRejectedPerS, &s.ProviderErrorsPerS,
		&s.TemporaryErrorsPerS, &s.PermanentErrorsPerS, &s.TimeoutsPerS, &s.SuccessesPerS, &s.DeadlineExhaustedPerS,
		&s.CancelledAttemptsPerS, &s.AbandonedAttemptsPerS, &s.LateSuccessesPerS, &s.HedgesPerS, &s.HedgesWonPerS, &s.HedgesAbandonedPerS, &s.NestedPerS, &s.EffectiveSuccess,
		&s.AttemptSuccess, &s.ActiveCalls, &s.ConcurrencyLimit, &s.PoolWaitP50, &s.PoolWaitP99, &s.PoolWaitMean, &s.QueueDepth,
		&s.BackoffP50, &s.BackoffP99, &s.BudgetBalance, &s.MaxAttempts, &s.DeadlineSeconds, &s.DependencyReceivedPerS,
		&s.DependencyServiceTimeP50, &s.DependencyWorkAfterCancelPerS, &s.DependencyDeadlinePropagatedPerS, &s.DependencyDeadlineMissingPerS,
		&s.MixedLatency.P50, &s.MixedLatency.P90, &s.MixedLatency.P99}
	for _, v := range vs {
		*v = val()
	}
	q := func() model.Quantiles { return model.Quantiles{P50: val(), P90: val(), P99: val()} }
	switch rng.IntN(3) {
	case 1:
		s.ResultsPerS = map[string]model.Value{}
		s.Latency = model.ClassesOf(map[string]model.Quantiles{})
	case 2:
		s.ResultsPerS = map[string]model.Value{}
		for range 1 + rng.IntN(4) {
			s.ResultsPerS[plain()+plain()] = val()
		}
		s.Latency = model.ClassesOf(map[string]model.Quantiles{"": q(), "success": q(), "fast_failure": q(), "failure": q()})
		if rng.IntN(4) == 0 {
			s.Latency.Set(str(), q())
		}
	}
	if rng.IntN(10) == 0 {
		s.NestedIn = []model.Breakdown{{Key: plain(), PerS: num()}}
	}
	if rng.IntN(10) == 0 {
		s.AdmissionRejectedBy = []model.Breakdown{{Key: plain(), PerS: num()}, {Key: str(), PerS: 1}}
	}
	start := 1.7e9 + float64(rng.IntN(1e6))/1000
	if rng.IntN(50) == 0 {
		start = floats[rng.IntN(len(floats))]
	}
	return BinReport{StartUnix: start, EndUnix: start + 10, SampledSeconds: val(), Signals: s}
}

// TestAppendBinJSONEqualsMarshalIndent: every bin appendBinJSON writes is
// json.MarshalIndent's bytes at the same prefix, and it declines only bins
// with a breakdown, a string encoding/json escapes or a non-finite time.
func TestAppendBinJSONEqualsMarshalIndent(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 4))
	direct, declined := 0, 0
	for i := range 5000 {
		b := randomBin(rng)
		prefix := []string{"", "        ", "\t"}[i%3]
		got, ok := appendBinJSON([]byte("keep"), &b, prefix)
		want, err := json.MarshalIndent(&b, prefix, "  ")
		plain := len(b.NestedIn) == 0 && len(b.AdmissionRejectedBy) == 0 && plainJSONString(b.Target) && plainJSONString(b.Dependency) &&
			plainJSONString(b.Dialect) && plainJSONString(b.AmplificationBasis) && finite(b.StartUnix) && finite(b.EndUnix)
		for k := range b.ResultsPerS {
			plain = plain && plainJSONString(k)
		}
		for _, e := range b.Latency {
			k := e.Class
			plain = plain && plainJSONString(k)
		}
		if ok != plain {
			t.Fatalf("bin %d: written directly %v, want %v: %+v", i, ok, plain, b)
		}
		if !ok {
			declined++
			if string(got) != "keep" {
				t.Fatalf("bin %d: declined but wrote %q", i, got)
			}
			continue
		}
		direct++
		if err != nil {
			t.Fatalf("bin %d: written directly, but encoding/json fails: %v", i, err)
		}
		if !bytes.Equal(got[4:], want) || string(got[:4]) != "keep" {
			t.Fatalf("bin %d, prefix %q:\n got %s\nwant %s", i, prefix, got, want)
		}
	}
	if direct < 2000 || declined < 500 {
		t.Errorf("%d bins written directly, %d declined: both paths should be exercised", direct, declined)
	}
}

// TestWriteJSONEqualsEncoder: Report.WriteJSON writes what the indented
// encoder writes for the whole report with safetext.JSON over it,
// rows with direct and declined bins, an
// empty and a nil timeline, and hidden characters in a dependency's name.
func TestWriteJSONEqualsEncoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 19))
	var rep Report
	for i := range 40 { // more than two of WriteJSON's batches of rows
		var d DependencyReport
		d.Target, d.Dependency = "app", []string{"db", "cache\u200b", "x<y", "svc_9"}[i%4]
		d.OriginalsPerS = model.Some(float64(i))
		d.LatencyP99 = map[string]model.Value{"success": model.Some(0.25), "failure": model.Absent}
		d.Phases = []Phase{}
		switch i % 3 {
		case 1:
			d.Timeline = []BinReport{}
		case 2:
			for range 1 + rng.IntN(20) {
				b := randomBin(rng)
				if !finite(b.StartUnix) {
					b.StartUnix = 1
				}
				if _, err := json.Marshal(&b); err != nil {
					continue // a non-finite breakdown rate, which the encoder refuses
				}
				d.Timeline = append(d.Timeline, b)
			}
		}
		rep.Dependencies = append(rep.Dependencies, d)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		t.Fatal(err)
	}
	want := safetext.JSON(buf.Bytes())
	var got bytes.Buffer
	if err := rep.WriteJSON(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		i := 0
		for i < min(got.Len(), len(want)) && got.Bytes()[i] == want[i] {
			i++
		}
		t.Fatalf("WriteJSON differs from the encoder at byte %d of %d/%d:\n got ...%s\nwant ...%s", i, got.Len(), len(want),
			got.Bytes()[max(0, i-200):min(got.Len(), i+100)], want[max(0, i-200):min(len(want), i+100)])
	}
	if !bytes.Contains(want, []byte(`\u200b`)) {
		t.Error("the hidden character was not escaped: nothing compared there")
	}
}

func TestAsciiOnly(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{{"", true}, {"abc", true}, {"0123456789abcdef", true}, {"0123456789abcdef\x80", false}, {"\xff", false}, {"01234567\u200b89", false}, {"é", false}} {
		if got := asciiOnly([]byte(c.s)); got != c.want {
			t.Errorf("asciiOnly(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

// TestCompactTimelinesWriteTheSameJSON: with CompactTimelines the rows
// hold no BinReport (each row's bins, 680 bytes each, were made at once
// for every row), and WriteJSON writes what it writes for the report with
// them, as TimelineBins makes them.
func TestCompactTimelinesWriteTheSameJSON(t *testing.T) {
	const n = 120
	times := every(1000, 1000, n)
	dep := func(d string, more ...string) []string { return append([]string{model.LabelDependency, d}, more...) }
	svc := snapshots(t, "svc", times,
		ts{model.MetricOriginals, dep("db"), "0+5x119"},
		ts{model.MetricAttempts, dep("db", model.LabelOutcome, "success"), "0+6x119"},
		ts{model.MetricResults, dep("db", model.LabelResult, "success"), "0+4x119"},
		ts{model.MetricAttempts, dep("cache"), "0+1x50"},
		ts{model.MetricRequestDuration + "_bucket", dep("db", model.LabelResultClass, "success", "le", "0.1"), "0+2x119"},
		ts{model.MetricRequestDuration + "_bucket", dep("db", model.LabelResultClass, "success", "le", "+Inf"), "0+5x119"},
		ts{model.MetricRequestDuration + "_sum", dep("db", model.LabelResultClass, "success"), "0+0.25x119"},
	)
	st := model.NewStore(model.StoreConfig{History: n + 1, MaxSeries: 1000})
	for i := range svc {
		st.Append(&svc[i])
	}
	targets := []model.TargetStatus{{Name: "svc", Up: true}}
	opts := ReportOptions{Bin: 5 * time.Second, Window: 30 * time.Second}
	full := BuildReport(st, targets, opts)
	opts.CompactTimelines = true
	compact := BuildReport(st, targets, opts)
	if len(full.Dependencies) != 2 || len(full.Dependencies[0].Timeline) < n/5-1 {
		t.Fatalf("%d rows: nothing to compare", len(full.Dependencies))
	}
	for i := range compact.Dependencies {
		d := &compact.Dependencies[i]
		if len(d.Timeline) != 0 || cap(d.Timeline) != 0 {
			t.Errorf("row %d holds %d BinReports (room for %d), want none", i, len(d.Timeline), cap(d.Timeline))
		}
		if got, want := d.TimelineBins(), full.Dependencies[i].Timeline; !reflect.DeepEqual(got, want) {
			t.Errorf("row %d: TimelineBins\n got %+v\nwant %+v", i, got, want)
		}
	}
	var got, want bytes.Buffer
	if err := full.WriteJSON(&want); err != nil {
		t.Fatal(err)
	}
	if err := compact.WriteJSON(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		i := 0
		for i < min(got.Len(), want.Len()) && got.Bytes()[i] == want.Bytes()[i] {
			i++
		}
		t.Fatalf("compact timelines' JSON differs at byte %d:\n got ...%s\nwant ...%s", i,
			got.Bytes()[max(0, i-200):min(got.Len(), i+100)], want.Bytes()[max(0, i-200):min(want.Len(), i+100)])
	}
	if !bytes.Contains(want.Bytes(), []byte(`"latency": {`)) {
		t.Error("no bin has latency: the histograms were not compared")
	}
}
