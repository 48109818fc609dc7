package whatif

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fitFile fits a recording of testdata/ (README.md there says how each was
// made) at 1 s bins, the recordings' scrape interval.
// Fits are cached: each one replays the recording 40 times to place the
// trigger's edges, and Run never changes the model it is given.
func fitFile(t testing.TB, path string) Fitted {
	t.Helper()
	fitMu.Lock()
	defer fitMu.Unlock()
	if f, ok := fits[path]; ok {
		return f
	}
	f, err := Fit(load(t, path), time.Second)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	fits[path] = f
	return f
}

var (
	fitMu sync.Mutex
	fits  = map[string]Fitted{}
)

func runSpec(t testing.TB, f Fitted, text string) Summary {
	t.Helper()
	specs, err := policy.Parse(text)
	if err != nil || len(specs) != 1 {
		t.Fatalf("%q: %v (%d specs)", text, err, len(specs))
	}
	r, err := Run(f.Model, &specs[0])
	if err != nil {
		t.Fatal(err)
	}
	return Summarize(FromResult(f.Model, r))
}

func val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// The model's goal: it replays a recording of `demo --scenario
// baseline` under its recorded policy within 5 points of success rate, 10 %
// of peak amplification and 20 % of recovery time; from that recording
// alone it predicts the bounded run on identical traffic (a recording of
// `demo --scenario bounded` with the same seed: what `demo --compare`
// runs); and from the bounded recording, the baseline's policy written as a
// spec predicts the baseline run. The recordings are real loopback runs
// (testdata/README.md); the model runs in virtual time with fixed seeds.
//
// Recovery is read inside the bin where success came back
// (Summary.RecoveryS, analysis.Recovery); it is held to 20 %, or a tenth
// of a second for an immediate one.
func TestDoneWhen(t *testing.T) {
	// A recovery read inside a bin (analysis.Recovery) from 1 s bins of
	// 1 s scrapes is known to a tenth of that bin or so: an immediate one
	// reads a few hundredths of a second either way.
	checkPredictions(t, fitFile(t, "testdata/baseline.rtd"), fitFile(t, "testdata/bounded.rtd"), 0.1)
}

// checkPredictions holds the model to the tolerances: each fit
// under its recorded policy against its own recording, the baseline's fit
// under bounded against the bounded recording, and the bounded fit under
// the baseline's policy against the baseline recording. A recovery is
// held to 20 %, or resolution seconds for a short one.
func checkPredictions(t *testing.T, base, bounded Fitted, resolution float64) {
	t.Helper()
	baselineSpec := "attempts=3,budget=none,limiter=none,backoff=none,attempt_timeout=300ms"
	for _, tc := range []struct {
		name  string
		fit   Fitted
		spec  string
		truth Fitted // whose recording the prediction is held to
	}{
		{"fit(baseline) recorded = baseline", base, "recorded", base},
		{"fit(baseline) bounded = bounded run", base, "bounded", bounded},
		{"fit(bounded) baseline's policy = baseline run", bounded, baselineSpec, base},
		{"fit(bounded) recorded = bounded", bounded, "recorded", bounded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runSpec(t, tc.fit, tc.spec)
			want := Summarize(tc.truth.Recording)
			gs, ws := val(got.SuccessRatio), val(want.SuccessRatio)
			ga, wa := val(got.PeakAmplification), val(want.PeakAmplification)
			t.Logf("success %.3f (recording %.3f), peak amplification %.3f (%.3f), recovery %s (%s)",
				gs, ws, ga, wa, secs(got.RecoveryS), secs(want.RecoveryS))
			if !(math.Abs(gs-ws) <= 0.05) {
				t.Errorf("success ratio %.3f, recording %.3f: more than 5 points apart", gs, ws)
			}
			if !(math.Abs(ga-wa) <= 0.10*wa) {
				t.Errorf("peak amplification %.3f, recording %.3f: more than 10 %% apart", ga, wa)
			}
			if (got.RecoveryS == nil) != (want.RecoveryS == nil) || got.Metastable != want.Metastable {
				t.Fatalf("recovery %s metastable %v, recording %s metastable %v", secs(got.RecoveryS), got.Metastable, secs(want.RecoveryS), want.Metastable)
			}
			if got.RecoveryS != nil && !(math.Abs(*got.RecoveryS-*want.RecoveryS) <= max(0.20**want.RecoveryS, resolution)) {
				t.Errorf("recovery %.3fs, recording %.3fs: more than 20 %% (or %.1fs) apart", *got.RecoveryS, *want.RecoveryS, resolution)
			}
		})
	}
}

// The whole report on the baseline recording, every policy, as text and
// JSON: a change in the model, the fit or a policy shows here.
func TestReportGolden(t *testing.T) {
	f := fitFile(t, "testdata/baseline.rtd")
	specs, err := policy.Parse("recorded,envoy,finagle,grpc,sre,aws,bounded,none")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Build("baseline.rtd", f, specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "markdown"} {
		var buf bytes.Buffer
		if err := Write(&buf, rep, format); err != nil {
			t.Fatal(err)
		}
		path := "testdata/baseline." + format + ".golden"
		if *update {
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./whatif -run TestReportGolden -update)", err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s output differs from %s (go test ./whatif -run TestReportGolden -update rewrites it):\n%s", format, path, buf.String())
		}
	}
}

// The JSON: policies[] with the recorded fit first, each with its
// figures (null where unknown, never 0) and a timeline.
func TestReportJSON(t *testing.T) {
	f := fitFile(t, "testdata/baseline.rtd")
	specs, _ := policy.Parse("envoy,bounded")
	rep, err := Build("baseline.rtd", f, specs)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, rep, "json"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Policies  []map[string]any `json:"policies"`
		Recording map[string]any   `json:"recording"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Policies) != 3 || doc.Policies[0]["policy"] != "recorded" || doc.Policies[1]["policy"] != "envoy" || doc.Policies[2]["policy"] != "bounded" {
		t.Fatalf("policies %v, want recorded, envoy, bounded", doc.Policies)
	}
	for _, p := range append(doc.Policies, doc.Recording) {
		for _, k := range []string{"success_ratio", "goodput_per_s", "peak_amplification", "mean_amplification", "peak_provider_load", "recovery_s", "metastable", "timeline"} {
			if _, ok := p[k]; !ok {
				t.Errorf("%v: no %s", p["policy"], k)
			}
		}
		if r, ok := p["success_ratio"].(float64); !ok || r < 0 || r > 1 {
			t.Errorf("%v: success_ratio %v, want 0..1", p["policy"], p["success_ratio"])
		}
		if tl, _ := p["timeline"].([]any); len(tl) != len(f.Model.Arrivals) {
			t.Errorf("%v: %d timeline points, want %d", p["policy"], len(tl), len(f.Model.Arrivals))
		}
	}
	// The recording's first bin has no attempts counter sample before it:
	// its amplification is unknown, null.
	if !strings.Contains(buf.String(), `"amplification": null`) {
		t.Errorf("no null amplification anywhere: absent must be null, not 0")
	}
}

// The same fit and policy give the same run: one event queue, fixed seeds.
func TestDeterministic(t *testing.T) {
	f := fitFile(t, "testdata/baseline.rtd")
	for _, spec := range []string{"bounded", "sre", "aws"} {
		specs, _ := policy.Parse(spec)
		a, err := Run(f.Model, &specs[0])
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Run(f.Model, &specs[0])
		if a.Events != b.Events || len(a.Bins) != len(b.Bins) {
			t.Fatalf("%s: %d vs %d events", spec, a.Events, b.Events)
		}
		for i := range a.Bins {
			if a.Bins[i] != b.Bins[i] {
				t.Fatalf("%s: bin %d differs: %+v vs %+v", spec, i, a.Bins[i], b.Bins[i])
			}
		}
	}
}

// An hour of incident: the baseline recording's 49 s repeated to 3600 s of
// arrivals and service times, every policy. Run with -benchmem; the
// anchor, BenchmarkBaselineRecorded, is the 49 s recording itself, so the
// ratio of the two says how the cost grows with the incident's length.
func BenchmarkHourOfIncident(b *testing.B) {
	f := fitFile(b, "testdata/baseline.rtd")
	m := f.Model
	n := len(m.Arrivals)
	hour := int(time.Hour / m.Bin)
	arr := make([]float64, hour)
	st := make([]time.Duration, hour)
	for i := range hour {
		arr[i] = m.Arrivals[i%n]
		st[i] = m.Provider.ServiceTime[i%n]
	}
	m.Arrivals, m.Provider.ServiceTime, m.Provider.Edges = arr, st, nil
	specs, _ := policy.Parse("recorded")
	b.ResetTimer()
	for b.Loop() {
		if _, err := Run(m, &specs[0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineRecorded is the anchor of BenchmarkHourOfIncident.
func BenchmarkBaselineRecorded(b *testing.B) {
	f := fitFile(b, "testdata/baseline.rtd")
	specs, _ := policy.Parse("recorded")
	b.ResetTimer()
	for b.Loop() {
		if _, err := Run(f.Model, &specs[0]); err != nil {
			b.Fatal(err)
		}
	}
}
