package dialect_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

var t0 = time.Unix(1_700_000_000, 0)

// load parses a fixture with the collector's own parser.
func load(t *testing.T, name string) []model.Family {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	fams, err := expo.ExpfmtParser{}.Parse("fixture", b, "text/plain; version=0.0.4", nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return fams
}

func snapOf(fams []model.Family) *model.Snapshot {
	return &model.Snapshot{Target: "t", Time: t0, Families: fams}
}

// translate runs one fresh dialect over a fixture.
func translate(t *testing.T, name, fixture string) *model.Snapshot {
	t.Helper()
	d, err := dialect.New(name)
	if err != nil {
		t.Fatal(err)
	}
	fams := load(t, fixture)
	if !d.Detect(fams) {
		t.Errorf("%s does not detect %s", name, fixture)
	}
	return d.Translate(snapOf(fams))
}

// family returns the named family of a snapshot, or nil.
func family(s *model.Snapshot, name string) *model.Family {
	for i := range s.Families {
		if s.Families[i].Name == name {
			return &s.Families[i]
		}
	}
	return nil
}

// pairs builds a label matcher from name, value pairs; a value "!" means
// "label absent".
func match(ls model.Labels, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "!" {
			if ls.Has(pairs[i]) {
				return false
			}
			continue
		}
		if ls.Get(pairs[i]) != pairs[i+1] {
			return false
		}
	}
	return true
}

// sum adds the values (counts for histograms) of the series of a family
// that match the label pairs; ok is false when none matches.
func sum(s *model.Snapshot, name string, pairs ...string) (float64, bool) {
	f := family(s, name)
	if f == nil {
		return 0, false
	}
	var total float64
	found := false
	for _, sm := range f.Samples {
		if !match(sm.Labels, pairs) {
			continue
		}
		found = true
		if f.Type == model.Histogram {
			total += sm.Count
		} else {
			total += sm.Value
		}
	}
	return total, found
}

// want checks sum(...) == v.
func want(t *testing.T, s *model.Snapshot, v float64, name string, pairs ...string) {
	t.Helper()
	got, ok := sum(s, name, pairs...)
	if !ok {
		t.Errorf("%s%v: absent, want %v", name, pairs, v)
		return
	}
	if math.Abs(got-v) > 1e-9*math.Max(1, math.Abs(v)) {
		t.Errorf("%s%v = %v, want %v", name, pairs, got, v)
	}
}

// absent checks that no series of name matches.
func absent(t *testing.T, s *model.Snapshot, name string, pairs ...string) {
	t.Helper()
	if got, ok := sum(s, name, pairs...); ok {
		t.Errorf("%s%v = %v, want absent", name, pairs, got)
	}
}

// histogramOf returns the one histogram series of name matching pairs.
func histogramOf(t *testing.T, s *model.Snapshot, name string, pairs ...string) model.Sample {
	t.Helper()
	f := family(s, name)
	if f == nil || f.Type != model.Histogram {
		t.Fatalf("%s: no histogram family", name)
	}
	var out []model.Sample
	for _, sm := range f.Samples {
		if match(sm.Labels, pairs) {
			out = append(out, sm)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, pairs, len(out))
	}
	return out[0]
}

// bucketAt is the cumulative count at upper bound le.
func bucketAt(t *testing.T, sm model.Sample, le float64) float64 {
	t.Helper()
	for _, b := range sm.Buckets {
		if math.Abs(b.UpperBound-le) <= 1e-12*math.Max(1, le) || (math.IsInf(le, 1) && math.IsInf(b.UpperBound, 1)) {
			return b.Count
		}
	}
	t.Fatalf("no bucket le=%v in %v", le, sm.Buckets)
	return 0
}

// contractOnly checks that every family of a translation is a contract,
// server-side or extension family, and every series (except server-side
// ones) carries a dependency.
func contractOnly(t *testing.T, s *model.Snapshot) {
	t.Helper()
	allowed := map[string]bool{}
	for _, n := range []string{model.MetricOriginals, model.MetricAttempts, model.MetricRetries, model.MetricRescued,
		model.MetricBudgetDenied, model.MetricAdmissionRejected, model.MetricResults, model.MetricActiveCalls,
		model.MetricConcurrencyLimit, model.MetricPoolWait, model.MetricRequestDuration, model.MetricAttemptDuration,
		model.MetricBackoff, model.MetricBudgetBalance, model.MetricPolicyMaxAttempts, model.MetricPolicyDeadline,
		model.MetricRetryLimitExceeded, model.MetricRequestTimeouts, model.MetricPendingCalls, model.MetricPoolWaitAverage,
		model.MetricHedges, model.MetricBreakerState, model.MetricSettingOff} {
		allowed[n] = true
	}
	for _, f := range s.Families {
		if strings.HasPrefix(f.Name, "sim_provider_") {
			for _, sm := range f.Samples {
				if sm.Labels.Has(model.LabelDependency) {
					t.Errorf("server-side %s%v has a dependency label", f.Name, sm.Labels)
				}
			}
			continue
		}
		if f.Name == model.MetricTargetInfo {
			// Who the target is: one series, a service name, no dependency.
			if len(f.Samples) != 1 || f.Samples[0].Labels.Get("service_name") == "" || f.Samples[0].Labels.Has(model.LabelDependency) {
				t.Errorf("target_info %+v: want one series naming the service", f.Samples)
			}
			continue
		}
		if !allowed[f.Name] {
			t.Errorf("translation emits %q, not a contract family", f.Name)
			continue
		}
		for _, sm := range f.Samples {
			if sm.Labels.Get(model.LabelDependency) == "" {
				t.Errorf("%s%v has no dependency", f.Name, sm.Labels)
			}
			if f.Type != model.Histogram && (math.IsNaN(sm.Value) || math.IsInf(sm.Value, 0)) {
				t.Errorf("%s%v = %v", f.Name, sm.Labels, sm.Value)
			}
		}
	}
}

func nan() float64 { return math.NaN() }
