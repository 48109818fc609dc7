package analysis

import (
	"bytes"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/internal/simrec"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/sim"
)

// TestIncidentReportInOnePass: a report with Incident evaluates the
// timeline once and is, byte for byte, the report over IncidentSpan of a
// first report, on the store of every scrape and on the reduced path
// (WholeBuilder); the builder makes no report after it.
func TestIncidentReportInOnePass(t *testing.T) {
	run := simrec.Record(t, "baseline", sim.Options{Seed: 1}, time.Second)
	rec, times := openRecording(t, run.Path)
	opts := ReportOptions{Bin: time.Second, Window: 5 * time.Second}
	asJSON := func(rep Report) []byte {
		t.Helper()
		var b bytes.Buffer
		if err := rep.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}

	full := model.NewStore(model.StoreConfig{History: rec.Len() + 1, MaxSeriesPerTarget: 20000})
	statuses := dump.LoadStore(rec, full, nil)
	first := BuildReport(full, statuses, opts)
	sp := IncidentSpan(&first)
	if sp.Kind != SpanIncident {
		t.Fatalf("span %+v, want an incident", sp)
	}
	twice := opts
	twice.Span = &sp
	once := opts
	once.Incident = true
	want := asJSON(BuildReport(full, statuses, twice))
	if got := asJSON(BuildReport(full, statuses, once)); !bytes.Equal(got, want) {
		t.Errorf("store of every scrape: the one-pass incident report (%d bytes) is not the two-pass one (%d)", len(got), len(want))
	}

	_, streamSpan, streamed := streamIncident(t, rec, times, opts)
	if streamSpan != sp {
		t.Fatalf("reduced span %+v, store %+v", streamSpan, sp)
	}
	st := model.NewStore(model.StoreConfig{History: WholeHistory(times, opts), KeepSeries: true, MaxSeriesPerTarget: 20000})
	wb := NewWholeBuilder(st, opts)
	statuses = dump.LoadStoreRangeWith(rec, 0, rec.Len(), st, dump.Loading{After: wb.Observe})
	rep, err := wb.ReportIncident(statuses)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := asJSON(rep), asJSON(streamed); !bytes.Equal(got, want) {
		t.Errorf("reduced: the one-pass incident report (%d bytes) is not the two-pass one (%d)", len(got), len(want))
	}
	if _, err := wb.Report(statuses); err == nil {
		t.Error("a report after ReportIncident: no error")
	}
}
