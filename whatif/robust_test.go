package whatif

import (
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/policy"
)

// Fit and every policy over recordings of other shapes: an error, never a
// panic. The files are other packages' fixtures (their headers say where
// they come from).
func TestFitOtherRecordings(t *testing.T) {
	specs, _ := policy.Parse("recorded,envoy,finagle,grpc,sre,aws,bounded,none")
	for _, path := range []string{
		"../dump/testdata/import/metrics.om",
		"../dump/testdata/import/snapshots.prom",
		"../promapi/testdata/fleet.prom",
	} {
		rec, err := dump.OpenRecording(path, dump.OpenOptions{})
		if err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		st := model.NewStore(model.StoreConfig{History: rec.Len() + 2})
		dump.LoadStore(rec, st, nil)
		rec.Close()
		f, err := Fit(st, time.Second)
		if err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		if _, err := Build(path, f, specs); err != nil {
			t.Logf("%s: %v", path, err)
		}
	}
}

// A model with odd parts runs or says why, never panics.
func TestRunOddModels(t *testing.T) {
	for _, m := range []Model{
		{},
		{Bin: time.Second, Hops: []Hop{{}}},
		{Bin: time.Second, Hops: []Hop{{}}, Provider: Provider{Slots: 1}, Arrivals: []float64{3}},
		{Bin: time.Second, Hops: []Hop{{Base: policy.Base{MaxAttempts: 5}}}, Provider: Provider{Slots: 1, ServiceTime: []time.Duration{time.Hour}}, Arrivals: []float64{3, 2.5, 0.5}},
	} {
		if r, err := Run(m, nil); err == nil && len(r.Bins) != len(m.Arrivals) {
			t.Errorf("%+v: %d bins", m, len(r.Bins))
		}
	}
}

// Without the provider's side the fit falls back on the caller's view
// (Little's law) and says so.
func TestFitWithoutProviderSide(t *testing.T) {
	st := load(t, "testdata/baseline.rtd")
	st.Forget("provider")
	f, err := Fit(st, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	said := false
	for _, a := range f.Assumptions {
		if a.What == "provider slots" {
			said = strings.Contains(a.Value, "Little's law")
			t.Logf("%s = %s [%s]", a.What, a.Value, a.Source)
		}
	}
	if !said {
		t.Errorf("assumptions %v: want slots from the caller's active calls", f.Assumptions)
	}
	got := runSpec(t, f, "recorded")
	want := Summarize(f.Recording)
	t.Logf("without the provider side: success %.3f (recording %.3f), peak amplification %.2f (%.2f)",
		val(got.SuccessRatio), val(want.SuccessRatio), val(got.PeakAmplification), val(want.PeakAmplification))
	if want.PeakProviderLoad != nil && f.Recording.Slots <= 0 {
		t.Errorf("provider load from no slots")
	}
}
