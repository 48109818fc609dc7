package analyze

import (
	"math"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/sim"
	"github.com/retrytop/retrytop/sources"
)

// TestRecordingDefaultsToTheIncident: analyze FILE covers the incident
// its phases tell unless a window is asked for, the same through the
// streaming path and the store of every scrape; the span says which.
func TestRecordingDefaultsToTheIncident(t *testing.T) {
	rs, err := (&sources.Spec{}).ForRecordings()
	if err != nil {
		t.Fatal(err)
	}
	read := func(incident bool, sequential bool) analysis.Report {
		tr, translate := rs.Translator()
		rec, err := dump.OpenRecording("../whatif/testdata/baseline.rtd", dump.OpenOptions{Filter: tr.Filter, Wrap: sources.UnreadWrap(tr)})
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Close()
		opts := RecordingOptions{Window: 30 * time.Second, Bin: 10 * time.Second, Spans: [][2]int{{0, rec.Len()}}, Incident: incident}
		if sequential {
			opts.sequential = loadSequential
		}
		rep, err := Recordings([]dump.Recording{rec}, rs, tr, translate, opts)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	win := read(false, false)
	if win.Span.Kind != analysis.SpanWindow || win.WindowSeconds != 30 {
		t.Errorf("--window: span %+v, %v s", win.Span, win.WindowSeconds)
	}
	for _, sequential := range []bool{false, true} {
		inc := read(true, sequential)
		if inc.Span.Kind != analysis.SpanIncident || inc.Span.StartUnix < inc.StartUnix || inc.Span.EndUnix > inc.EndUnix || inc.WindowSeconds <= 30 {
			t.Errorf("sequential %v: span %+v over a recording of %v..%v, %v s", sequential, inc.Span, inc.StartUnix, inc.EndUnix, inc.WindowSeconds)
		}
		// Times are whole milliseconds: the two may differ by the float
		// rounding of one.
		if got, want := inc.WindowSeconds, inc.Span.EndUnix-inc.Span.StartUnix; math.Abs(got-want) > 0.001 {
			t.Errorf("sequential %v: window_seconds %v, span %v s", sequential, got, want)
		}
		// The sim's originals arrive on a fixed schedule of
		// sim.DefaultRate a second (sim.Arrivals): over the span, the
		// entry row counts them to one arrival at each edge, where the
		// counter is interpolated between two scrapes.
		for _, d := range inc.Dependencies {
			if d.Target != "browser" || d.Dependency != "app" {
				continue
			}
			if got := d.OriginalsPerS.Or(math.NaN()); !(math.Abs(got-sim.DefaultRate) <= 2/inc.WindowSeconds) {
				t.Errorf("sequential %v: browser -> app %v originals/s over %v s, want %v within %.3f", sequential, got, inc.WindowSeconds, sim.DefaultRate, 2/inc.WindowSeconds)
			}
		}
	}
}
