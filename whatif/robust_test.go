package whatif

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/policy"
)

// Fit over recordings of other shapes (other packages' fixtures, their
// headers say where they come from) fails with an error saying why,
// naming the file and line where the recording itself is bad.
func TestFitOtherRecordings(t *testing.T) {
	for _, tc := range []struct {
		path, openErr, fitErr string
	}{
		{path: "../dump/testdata/import/metrics.om", fitErr: `whatif: "app" has 2 scrapes, too few to fit`},
		{path: "../dump/testdata/import/snapshots.prom", fitErr: `whatif: "app" has 2 scrapes, too few to fit`},
		{path: "../promapi/testdata/fleet.prom", openErr: `fleet.prom:11: sample of "retry_originals_total" has no timestamp`},
	} {
		rec, err := dump.OpenRecording(tc.path, dump.OpenOptions{})
		if tc.openErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.openErr) {
				t.Errorf("%s: open: %v, want %q", tc.path, err, tc.openErr)
			}
			if err == nil {
				rec.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: open: %v", tc.path, err)
			continue
		}
		st := model.NewStore(model.StoreConfig{History: rec.Len() + 2})
		dump.LoadStore(rec, st, nil)
		rec.Close()
		if _, err := Fit(st, time.Second); err == nil || err.Error() != tc.fitErr {
			t.Errorf("%s: fit: %v, want %q", tc.path, err, tc.fitErr)
		}
	}
}

// A model with odd parts says why it cannot run, or runs to the counts
// its parts imply.
func TestRunOddModels(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Model
		err  string
		bins []Bin
	}{
		{name: "empty", err: "whatif: model needs a bin width and at least one hop"},
		{name: "no slot", m: Model{Bin: time.Second, Hops: []Hop{{}}}, err: "whatif: provider needs at least one slot"},
		{
			// Three originals, one attempt each, served at once.
			name: "zero hop", m: Model{Bin: time.Second, Hops: []Hop{{}}, Provider: Provider{Slots: 1}, Arrivals: []float64{3}},
			bins: []Bin{{Offered: 3, Ended: 3, Succeeded: 3, Attempts: 3, Received: 3}},
		},
		{
			// An hour's service: nothing ends within the run, every
			// arrival is held by the one slot or its queue.
			name: "hour-long service", m: Model{Bin: time.Second, Hops: []Hop{{Base: policy.Base{MaxAttempts: 5}}},
				Provider: Provider{Slots: 1, ServiceTime: []time.Duration{time.Hour}}, Arrivals: []float64{3, 2.5, 0.5}},
			bins: []Bin{{Offered: 3, Received: 3, Held: 3}, {Offered: 2, Received: 2, Held: 5}, {Offered: 1, Received: 1, Held: 6}},
		},
	} {
		r, err := Run(tc.m, nil)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || len(r.Bins) != len(tc.bins) {
			t.Errorf("%s: %v, %d bins, want %d", tc.name, err, len(r.Bins), len(tc.bins))
			continue
		}
		for i, b := range r.Bins {
			if b != tc.bins[i] {
				t.Errorf("%s: bin %d %+v, want %+v", tc.name, i, b, tc.bins[i])
			}
		}
	}
}

// Without the provider's side the fit falls back on the caller's view
// (Little's law), says so, and the model still replays the recording
// within the tolerances TestDoneWhen holds it to (5 points of success,
// 10 % of peak amplification).
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
		}
	}
	if !said || f.Recording.Slots > 0 {
		t.Errorf("assumptions %v, recorded slots %v: want slots from the caller's active calls and none recorded", f.Assumptions, f.Recording.Slots)
	}
	got := runSpec(t, f, "recorded")
	want := Summarize(f.Recording)
	gs, ws := val(got.SuccessRatio), val(want.SuccessRatio)
	ga, wa := val(got.PeakAmplification), val(want.PeakAmplification)
	if !(math.Abs(gs-ws) <= 0.05) || !(math.Abs(ga-wa) <= 0.10*wa) {
		t.Errorf("without the provider side: success %.3f (recording %.3f), peak amplification %.2f (%.2f)", gs, ws, ga, wa)
	}
	if want.PeakProviderLoad != nil {
		t.Errorf("provider load %v from no recorded slots", *want.PeakProviderLoad)
	}
}
