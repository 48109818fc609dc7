package analysis

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/internal/simrec"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/sim"
)

// demoRecording is a recording of a sim scenario made in virtual time,
// every target at 1 s as `retrytop record --interval 1s` does, loaded
// into a store, with the sim's counters at the moment of every scrape and
// its truth at the end.
type demoRecording struct {
	store    *model.Store
	targets  []model.TargetStatus
	truth    sim.Truth
	counters []sim.Counters // at each scrape, start + i s
	startMs  int64
}

func recordDemo(t *testing.T, name string) *demoRecording {
	t.Helper()
	run := simrec.Record(t, name, sim.Options{Seed: 1}, time.Second)
	rec := &demoRecording{truth: run.Truth, counters: run.Counters, startMs: run.Start.UnixMilli()}
	r, err := dump.OpenRecording(run.Path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec.store = model.NewStore(model.StoreConfig{History: r.Len() + 1, MaxSeriesPerTarget: 20000})
	rec.targets = dump.LoadStore(r, rec.store, nil)
	return rec
}

// countersAt is the sim's counters at the scrape at ms.
func (d *demoRecording) countersAt(t *testing.T, ms int64) sim.Counters {
	t.Helper()
	i := int((ms - d.startMs) / 1000)
	if (ms-d.startMs)%1000 != 0 || i < 0 || i >= len(d.counters) {
		t.Fatalf("no scrape at %d ms (start %d, %d scrapes)", ms, d.startMs, len(d.counters))
	}
	return d.counters[i]
}

// hopTruth is a hop's amplification (operation attempts over admitted
// operations, both counted when they end, as the row's is) and effective
// success (successes over completed operations) between two scrapes.
func (d *demoRecording) hopTruth(t *testing.T, hop string, fromMs, toMs int64) (amp, eff float64) {
	t.Helper()
	a, b := d.countersAt(t, fromMs), d.countersAt(t, toMs)
	for i := range b.Hops {
		if b.Hops[i].Name != hop {
			continue
		}
		x, y := a.Hops[i], b.Hops[i]
		amp = float64(y.OperationAttempts-x.OperationAttempts) / float64(y.Admitted-x.Admitted)
		eff = float64(y.Results["success"]-x.Results["success"]) / float64(y.Completed-x.Completed)
		return amp, eff
	}
	t.Fatalf("no hop %q", hop)
	return 0, 0
}

// On recordings of the demo's scenarios, the report tells the incident:
// its default span is the incident the phases find, the client ->
// provider row over that span is the sim's truth over the same span, the
// recovery is the sim's, and the rules would have shown the storm within
// a bin of its trigger.
func TestStoryOnDemoRecordings(t *testing.T) {
	// The row and the truth count the same operations between the same
	// scrapes (each at a whole second of virtual time, on the bins'
	// edges): only operations counted at a scrape's own instant differ.
	const rowTolerance = 0.03
	// Recovery: both date it alike, goodput (successes counted when
	// they end) against offered load, from the trigger's end
	// (docs/findings.md, "Recovery"), to recoveryTolerance.
	for _, tc := range []struct {
		name      string
		recovered bool
	}{
		{"baseline", true},
		{"chain", true},
		{"ignore-cancel", false}, // the provider's backlog outlives the trigger: metastable
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := recordDemo(t, tc.name)
			at := func(ms int64) time.Duration { return time.Duration(ms-d.startMs) * time.Millisecond }
			whole := BuildReport(d.store, d.targets, ReportOptions{})
			sp := IncidentSpan(&whole)
			var slow sim.PhaseTruth
			for _, p := range d.truth.Phases {
				if p.Name == sim.PhaseSlow {
					slow = p
				}
			}
			binMs := int64(whole.BinSeconds * 1000)
			t.Logf("span %s %v..%v, slow phase %v..%v", sp.Kind, at(sp.StartMs()), at(sp.EndMs()), slow.Start, slow.End)
			// The incident holds the slow phase, and begins a bin before
			// the storm's first bin at most.
			if sp.Kind != SpanIncident || at(sp.StartMs()) > slow.Start || at(sp.EndMs()) < slow.End ||
				at(sp.StartMs()) < slow.Start-time.Duration(binMs)*time.Millisecond {
				t.Fatalf("span %s %v..%v, want an incident holding the slow phase %v..%v", sp.Kind, at(sp.StartMs()), at(sp.EndMs()), slow.Start, slow.End)
			}

			rep := BuildReport(d.store, d.targets, ReportOptions{Span: &sp})
			if rep.Span != sp || rep.WindowSeconds != sp.EndUnix-sp.StartUnix {
				t.Errorf("report span %+v (%v s), want %+v", rep.Span, rep.WindowSeconds, sp)
			}
			row := findRow(t, rep.Dependencies, sim.NameClient, sim.NameProvider)
			amp, eff := d.hopTruth(t, sim.NameClient, sp.StartMs(), sp.EndMs())
			t.Logf("client -> provider over the span: %v x %v, truth %.3f x %.3f (slow phase alone %.3f)", row.Amplification, row.EffectiveSuccess, amp, eff, slow.Hops[len(slow.Hops)-1].Amplification)
			within(t, "amplification", row.Amplification, amp, rowTolerance)
			within(t, "effective success", row.EffectiveSuccess, eff, rowTolerance)

			rec := clientRecovery(t, &rep)
			t.Logf("recovery %v, truth %+v", rec, d.truth.Recovery)
			if d.truth.Recovery.Recovered != tc.recovered {
				t.Fatalf("the sim recovered %v, want %v", d.truth.Recovery.Recovered, tc.recovered)
			}
			checkRecovery(t, "incident span", rec, d.truth.Recovery)

			// The trigger is on from the slow phase's first bin; the storm
			// shows critical by the end of that bin.
			det := rep.Detection
			t.Logf("detection %+v", det)
			trig := float64(d.startMs)/1000 + slow.Start.Seconds()
			checkValue(t, "trigger start", det.TriggerStartUnix, trig)
			checkValue(t, "first critical", det.FirstCriticalUnix, trig+whole.BinSeconds)
			checkValue(t, "critical after the trigger", det.CriticalAfterTriggerS, whole.BinSeconds)
			if !det.FirstWarningUnix.OK() || det.FirstWarningUnix.V() > det.FirstCriticalUnix.V() {
				t.Errorf("first warning %v after the first critical %v", det.FirstWarningUnix, det.FirstCriticalUnix)
			}
		})
	}
}

// openRecording opens the recording at path (closed when the test ends)
// with every target's scrape times in it, oldest first.
func openRecording(t *testing.T, path string) (dump.Recording, [][]int64) {
	t.Helper()
	rec, err := dump.OpenRecording(path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	byTarget := map[string][]int64{}
	for i := 0; i < rec.Len(); i++ {
		byTarget[rec.Target(i)] = append(byTarget[rec.Target(i)], rec.Time(i).UnixMilli())
	}
	var times [][]int64
	for _, ts := range byTarget {
		times = append(times, ts)
	}
	return rec, times
}

// streamIncident is analyze FILE's report of rec (every target's scrape
// times in times) with opts: streamed through a store of WholeHistory
// scrapes (WholeBuilder), over the incident span sp of its first report
// of the whole recording; st is that store.
func streamIncident(t *testing.T, rec dump.Recording, times [][]int64, opts ReportOptions) (st *model.Store, sp Span, rep Report) {
	t.Helper()
	st = model.NewStore(model.StoreConfig{History: WholeHistory(times, opts), KeepSeries: true, MaxSeriesPerTarget: 20000})
	wb := NewWholeBuilder(st, opts)
	statuses := dump.LoadStoreRangeWith(rec, 0, rec.Len(), st, dump.Loading{After: wb.Observe})
	whole, err := wb.Report(statuses)
	if err != nil {
		t.Fatal(err)
	}
	sp = IncidentSpan(&whole)
	if rep, err = wb.ReportSpan(statuses, sp); err != nil {
		t.Fatal(err)
	}
	return st, sp, rep
}

func findRow(t *testing.T, deps []DependencyReport, target, dep string) *DependencyReport {
	t.Helper()
	for i := range deps {
		if deps[i].Target == target && deps[i].Dependency == dep {
			return &deps[i]
		}
	}
	t.Fatalf("no row %s -> %s", target, dep)
	return nil
}

// within checks got against want to a relative tolerance.
func within(t *testing.T, name string, got model.Value, want, tol float64) {
	t.Helper()
	if !got.OK() || math.Abs(got.V()-want) > tol*math.Abs(want) {
		t.Errorf("%s %v, want %.4f within %.0f %%", name, got, want, tol*100)
	}
}

// analyze FILE's path: a whole recording reduced while it loads into a
// store that keeps only its end (WholeBuilder), its report over the
// incident span read from the reduced bins, gives the rows and services
// the store of every scrape gives over the same span.
func TestWholeSpanMatchesStore(t *testing.T) {
	// The same increases, summed bin by bin or over the span at once:
	// only rounding apart.
	const tol = 1e-9
	run := simrec.Record(t, "baseline", sim.Options{Seed: 1}, time.Second)
	rec, times := openRecording(t, run.Path)
	// 1 s bins and a 5 s window: the store keeps the last 36 s or so of
	// the 51 s recording, not the incident's start.
	opts := ReportOptions{Bin: time.Second, Window: 5 * time.Second}
	hist := WholeHistory(times, opts)
	if hist >= len(times[0]) {
		t.Fatalf("the store keeps %d scrapes of %d: all of them", hist, len(times[0]))
	}
	st, sp, got := streamIncident(t, rec, times, opts)
	if sp.Kind != SpanIncident {
		t.Fatalf("span %+v", sp)
	}

	full := model.NewStore(model.StoreConfig{History: rec.Len() + 1, MaxSeriesPerTarget: 20000})
	opts.Span = &sp
	want := BuildReport(full, dump.LoadStore(rec, full, nil), opts)
	if oldest := st.Times(sim.NameClient)[0]; oldest <= sp.StartMs() {
		t.Fatalf("the bounded store holds the span's start (%d <= %d)", oldest, sp.StartMs())
	}
	if got.Span != want.Span || len(got.Dependencies) != len(want.Dependencies) || len(got.Services) != len(want.Services) || len(want.Services) == 0 {
		t.Fatalf("span %+v, %d rows, %d services; want %+v, %d, %d", got.Span, len(got.Dependencies), len(got.Services),
			want.Span, len(want.Dependencies), len(want.Services))
	}
	same := func(name string, a, b model.Value) {
		t.Helper()
		if a.OK() != b.OK() || math.Abs(a.V()-b.V()) > tol*math.Max(1, math.Abs(b.V())) {
			t.Errorf("%s: reduced %v, store %v", name, a, b)
		}
	}
	for i := range got.Dependencies {
		g, w := &got.Dependencies[i].Signals, &want.Dependencies[i].Signals
		k := g.Target + " -> " + g.Dependency
		same(k+" originals", g.OriginalsPerS, w.OriginalsPerS)
		same(k+" attempts", g.AttemptsPerS, w.AttemptsPerS)
		same(k+" amplification", g.Amplification, w.Amplification)
		same(k+" effective success", g.EffectiveSuccess, w.EffectiveSuccess)
		same(k+" timeouts", g.TimeoutsPerS, w.TimeoutsPerS)
		same(k+" success p50", g.Latency.At(model.ClassSuccess).P50, w.Latency.At(model.ClassSuccess).P50)
		same(k+" provider received", g.DependencyReceivedPerS, w.DependencyReceivedPerS)
		same(k+" active calls", g.ActiveCalls, w.ActiveCalls)
	}
	for i := range got.Services {
		g, w := &got.Services[i], &want.Services[i]
		same(g.Target+" received", g.ReceivedPerS, w.ReceivedPerS)
		same(g.Target+" queue depth", g.QueueDepth, w.QueueDepth)
		same(g.Target+" queue wait mean", g.QueueWaitMean, w.QueueWaitMean)
		same(g.Target+" in flight", g.InFlight, w.InFlight)
	}
	if len(got.ServicePeaks) != len(want.ServicePeaks) || len(want.ServicePeaks) == 0 {
		t.Fatalf("peaks %+v, store %+v", got.ServicePeaks, want.ServicePeaks)
	}
	for i := range got.ServicePeaks {
		g, w := &got.ServicePeaks[i], &want.ServicePeaks[i]
		same(g.Target+" peak queue", g.QueueDepth, w.QueueDepth)
		same(g.Target+" peak queue at", g.QueueDepthUnix, w.QueueDepthUnix)
		same(g.Target+" peak queue age", g.QueueOldestAge, w.QueueOldestAge)
		if !w.QueueDepth.OK() || w.QueueDepth.V() == 0 {
			t.Errorf("%s: no storm in the peak queue %v", w.Target, w.QueueDepth)
		}
	}
	if fmt.Sprint(codes(got.Findings)) != fmt.Sprint(codes(want.Findings)) {
		t.Errorf("findings %v, store %v", codes(got.Findings), codes(want.Findings))
	}
}

func codes(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Severity.String()+" "+f.Code+" "+f.Target+" "+f.Dependency)
	}
	return out
}
