package ui

import (
	"io"
	"math"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// storeSource is a Source over a real store, as scrape.Scraper is.
type storeSource struct {
	st       *model.Store
	statuses []model.TargetStatus
	updates  chan struct{}
}

func (s *storeSource) Store() *model.Store            { return s.st }
func (s *storeSource) Statuses() []model.TargetStatus { return s.statuses }
func (s *storeSource) Updates() <-chan struct{}       { return s.updates }

// contractSnapshot is one scrape of a target exposing the metric contract
// for dependency db after i seconds: 10 originals/s, 15 attempts/s (12 ok,
// 3 temporary errors), 1 admission rejection/s, 0.5 budget denials/s.
func contractSnapshot(t0 time.Time, i int) *model.Snapshot {
	n := float64(i)
	dep := model.LabelsFromPairs(model.LabelDependency, "db")
	c := func(name string, v float64, extra ...string) model.Family {
		return model.Family{Name: name, Type: model.Counter, Samples: []model.Sample{{Labels: model.LabelsFromPairs(append([]string{model.LabelDependency, "db"}, extra...)...), Value: v}}}
	}
	att := c(model.MetricAttempts, 12*n, model.LabelOutcome, model.OutcomeSuccess)
	att.Samples = append(att.Samples, model.Sample{Labels: model.LabelsFromPairs(model.LabelDependency, "db", model.LabelOutcome, model.OutcomeTemporaryError), Value: 3 * n})
	res := c(model.MetricResults, 9*n, model.LabelResult, model.ResultSuccess)
	res.Samples = append(res.Samples, model.Sample{Labels: model.LabelsFromPairs(model.LabelDependency, "db", model.LabelResult, model.ResultCapacityRejected), Value: n})
	hist := model.Family{Name: model.MetricRequestDuration, Type: model.Histogram}
	// Consistent with the results: 9 successes and 1 capacity rejection (a
	// fast failure) a second, no failure; every latency in the first
	// bucket.
	perS := map[string]float64{model.ClassSuccess: 9, model.ClassFastFailure: 1, model.ClassFailure: 0}
	for _, class := range model.LatencyClasses {
		per := []float64{perS[class], 0, 0, 0}
		var bs []model.Bucket
		cum := 0.0
		for j, ub := range []float64{0.005, 0.05, 0.5, math.Inf(1)} {
			cum += per[j] * n
			bs = append(bs, model.Bucket{UpperBound: ub, Count: cum})
		}
		hist.Samples = append(hist.Samples, model.Sample{Labels: dep.With(model.LabelResultClass, class), Buckets: bs, Count: cum, Sum: cum * 0.01})
	}
	return &model.Snapshot{Target: "app", Time: t0.Add(time.Duration(i) * time.Second), Families: []model.Family{
		c(model.MetricOriginals, 10*n),
		att,
		c(model.MetricRetries, 5*n),
		c(model.MetricBudgetDenied, 0.5*n),
		c(model.MetricAdmissionRejected, n, model.LabelReason, "concurrency", model.LabelPriority, "critical"),
		res,
		{Name: model.MetricActiveCalls, Type: model.Gauge, Samples: []model.Sample{{Labels: dep, Value: 7}}},
		{Name: model.MetricConcurrencyLimit, Type: model.Gauge, Samples: []model.Sample{{Labels: dep, Value: 32}}},
		hist,
	}}
}

// TestRealFrames runs the model's own commands against a real store: the
// first frame is built by Init, the next one after an update.
func TestRealFrames(t *testing.T) {
	st := model.NewStore(model.StoreConfig{})
	t0 := time.Date(2025, 3, 4, 3, 0, 0, 0, time.UTC)
	for i := 0; i <= 120; i++ {
		st.Append(contractSnapshot(t0, i))
	}
	src := &storeSource{st: st, updates: make(chan struct{}, 1), statuses: []model.TargetStatus{
		{Name: "app", Up: true, LastScrape: t0.Add(120 * time.Second)},
		{Name: "db-exporter", Up: false, LastError: "context deadline exceeded\x1b[0m"},
	}}
	m := NewModel(src, Options{Now: func() time.Time { return t0.Add(121 * time.Second) }, StaleAfter: -1, Renderer: lipgloss.NewRenderer(io.Discard)})
	done := make(chan struct{})
	defer close(done)
	m.done = done
	send(m, tea.WindowSizeMsg{Width: 160, Height: 48})
	// Init: a frame at once, and a wait for the next update.
	batch, ok := m.Init()().(tea.BatchMsg)
	if !ok || len(batch) != 2 {
		t.Fatalf("Init: %#v", batch)
	}
	m.Update(batch[0]())
	waiting := make(chan tea.Msg, 1)
	go func() { waiting <- batch[1]() }()
	if m.shown == nil || len(m.shown.Rows) != 1 {
		t.Fatalf("no frame from Init: %+v", m.shown)
	}
	v := ansi.Strip(m.View())
	r := lineWith(v[strings.Index(v, "\n"):], " db ") // the header names the followed row too
	// 15 attempts/s over 9 admitted originals/s.
	for _, want := range []string{"app", "10.0", "15.0", "1.67x", "90.0%", "80.0%", "0.50", "1.00", "3.00", "7/32"} {
		if !strings.Contains(r, want) {
			t.Errorf("row lacks %q: %q", want, r)
		}
	}
	if h := firstLine(v); !strings.Contains(h, "targets 1/2 up") || !strings.Contains(h, "db-exporter down: context deadline exceeded") || !strings.Contains(h, "newest scrape 1s ago") {
		t.Errorf("header: %q", h)
	}

	// An update: the wait loop builds the next frame.
	st.Append(contractSnapshot(t0, 121))
	src.updates <- struct{}{}
	var msg tea.Msg
	select {
	case msg = <-waiting:
	case <-time.After(5 * time.Second):
		t.Fatal("no frame after an update")
	}
	if msg != (updateMsg{}) {
		t.Fatalf("the wait loop after an update: %#v", msg)
	}
	send(m, msg)
	// The burst settles (the test plays the tick): the frame is built.
	build := send(m, settledMsg{})
	if build == nil {
		t.Fatal("no frame built after the update")
	}
	if _, rearm := m.Update(build()); rearm == nil {
		t.Error("wait loop not re-armed")
	}
	if !m.shown.Time.Equal(t0.Add(121 * time.Second)) {
		t.Errorf("frame after update at %v", m.shown.Time)
	}
	keys(m, "enter")
	d := ansi.Strip(m.View())
	for _, want := range []string{"DETAIL  app → db", "fast failure n=", "concurrency/critical"} {
		if !strings.Contains(d, want) {
			t.Errorf("detail lacks %q:\n%s", want, d)
		}
	}
	screen(t, m)
}

func TestFindingLinesNameTheRuleAndCap(t *testing.T) {
	row := func(target string) model.Signals {
		return model.Signals{
			Target: target, Dependency: "db",
			OriginalsPerS: model.Some(100), AttemptsPerS: model.Some(250), Amplification: model.Some(2.5),
			RetriesPerS: model.Some(150), TimeoutsPerS: model.Some(80), ProviderErrorsPerS: model.Some(20),
			TemporaryErrorsPerS: model.Some(20), PermanentErrorsPerS: model.Some(0),
		}
	}
	f := model.Frame{Window: time.Minute, Rows: []model.Signals{row("a"), row("b"), row("c"), row("d")}}
	lines := findingLines(f, analysis.Evaluate(f, analysis.EvaluateChains(f.Rows, nil, analysis.DefaultGapTolerance()), analysis.DefaultThresholds()))
	if len(lines) != maxFindingLines {
		t.Fatalf("lines = %d, want the cap %d: %q", len(lines), maxFindingLines, lines)
	}
	if !strings.Contains(lines[0], "RETRY_AMPLIFICATION") || !strings.Contains(lines[0], "→db") {
		t.Errorf("first line = %q, want the amplification finding on a →db row", lines[0])
	}
	if !strings.Contains(lines[len(lines)-1], "more: retrytop analyze") {
		t.Errorf("last line = %q, want the overflow note", lines[len(lines)-1])
	}
	if got := findingLines(model.Frame{Window: time.Minute}, nil); len(got) != 0 {
		t.Errorf("no rows gave findings %q", got)
	}
}

func TestFindingLinesWarnOfDroppedSeries(t *testing.T) {
	f := model.Frame{Targets: []model.TargetStatus{{Name: "envoy\x1b[2J", Up: true, Series: 100000, DroppedSeries: 80000}}}
	lines := findingLines(f, nil)
	if len(lines) != 1 || !strings.Contains(lines[0], "SERIES_CAP") || !strings.Contains(lines[0], "80000 of the 100000 series it exports refused") || strings.Contains(lines[0], "\x1b") {
		t.Errorf("lines = %q, want one sanitised SERIES_CAP warning", lines)
	}
}

// Chains declared with --chain or a config file reach the chain view; the
// target "app" calls "db", which no target names, so none is inferred.
func TestBuildFrameUsesDeclaredChains(t *testing.T) {
	st := model.NewStore(model.StoreConfig{})
	t0 := time.Date(2025, 3, 4, 3, 0, 0, 0, time.UTC)
	for i := 0; i <= 60; i++ {
		st.Append(contractSnapshot(t0, i))
	}
	src := &storeSource{st: st, updates: make(chan struct{}, 1)}
	req := frameRequest{Window: time.Minute, Bin: 10 * time.Second, Bins: 6}
	if _, d := buildFrame(src, req); len(d.chains) != 1 || d.chains[0].Name == "declared" {
		t.Fatalf("inferred chains = %+v, want the lone row's one-hop chain", d.chains)
	}
	req.Chains = []analysis.ChainSpec{{Name: "declared", Targets: []string{"app"}}}
	_, d := buildFrame(src, req)
	if len(d.chains) != 1 || d.chains[0].Name != "declared" || len(d.chains[0].Hops) != 1 || d.chains[0].Hops[0].Dependency != "db" {
		t.Errorf("declared chains = %+v, want the declared app -> db", d.chains)
	}
}

// providerSnapshot is one scrape of a sim-shaped service after i seconds:
// 20 requests/s received for the first minute, 40/s after; 5 in flight,
// 3 queued.
func providerSnapshot(t0 time.Time, i int) *model.Snapshot {
	recv := 20 * float64(i)
	if i > 60 {
		recv = 1200 + 40*float64(i-60)
	}
	c := func(name string, v float64) model.Family {
		return model.Family{Name: name, Type: model.Counter, Samples: []model.Sample{{Value: v}}}
	}
	g := func(name string, v float64) model.Family {
		return model.Family{Name: name, Type: model.Gauge, Samples: []model.Sample{{Value: v}}}
	}
	return &model.Snapshot{Target: "provider", Time: t0.Add(time.Duration(i) * time.Second), Families: []model.Family{
		c(model.MetricServerReceived, recv),
		g(model.MetricServiceInFlight, 5),
		g(model.MetricServiceQueueDepth, 3),
	}}
}

// The build Cmd derives the signals of every service over the frame's
// window and end, and a service's bins only when its detail asks.
func TestBuildFrameDerivesServices(t *testing.T) {
	st := model.NewStore(model.StoreConfig{})
	t0 := time.Date(2025, 3, 4, 3, 0, 0, 0, time.UTC)
	for i := 0; i <= 120; i++ {
		st.Append(contractSnapshot(t0, i))
		st.Append(providerSnapshot(t0, i))
	}
	src := &storeSource{st: st}
	req := frameRequest{Window: 30 * time.Second, Bin: 10 * time.Second, Bins: 6}
	_, d := buildFrame(src, req)
	if len(d.services) != 1 || d.services[0].Target != "provider" {
		t.Fatalf("services = %+v, want the provider only (app exports no service family)", d.services)
	}
	s := d.services[0]
	if !s.ReceivedPerS.OK() || math.Abs(s.ReceivedPerS.V()-40) > 0.01 || s.InFlight != model.Some(5) || s.QueueDepth != model.Some(3) {
		t.Errorf("newest provider signals: %+v", s)
	}
	if s.Responses429PerS.OK() || s.Slots.OK() {
		t.Errorf("signals the provider does not export are present: %+v", s)
	}
	if d.svcTarget != "" || d.svcTimeline != nil {
		t.Errorf("bins computed with no service detail open: %q %d", d.svcTarget, len(d.svcTimeline))
	}

	// Frozen at 60 s: the services describe that moment, not the newest.
	req.EndMs = t0.Add(60 * time.Second).UnixMilli()
	req.Service = "provider"
	f, d := buildFrame(src, req)
	if !f.Time.Equal(t0.Add(60*time.Second)) || math.Abs(d.services[0].ReceivedPerS.V()-20) > 0.01 {
		t.Errorf("frozen frame at %v: received %+v, want 20/s", f.Time, d.services[0].ReceivedPerS)
	}
	if d.svcTarget != "provider" || len(d.svcTimeline) != 6 {
		t.Fatalf("bins of the open service: %q, %d bins, want 6", d.svcTarget, len(d.svcTimeline))
	}
	last := d.svcTimeline[len(d.svcTimeline)-1]
	if last.EndMs != req.EndMs || !last.ReceivedPerS.OK() || math.Abs(last.ReceivedPerS.V()-20) > 0.01 {
		t.Errorf("last bin: %+v", last)
	}
}

// swapSource is a replay's source seen by a frame: its store is
// retired and replaced between the frame's Store and Hold.
type swapSource struct {
	storeSource
	old   *model.Store
	calls int
}

func (s *swapSource) Store() *model.Store {
	s.calls++
	if s.calls == 1 {
		s.old.Retire() // a seek's restore ends right after
		return s.old
	}
	return s.st
}

// TestFrameHoldsItsStore: a frame holds the store it reads until it is
// built (a replay's seek retires the store it replaced once no frame
// holds it), and one retired under it is read from its replacement.
func TestFrameHoldsItsStore(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	fill := func() *model.Store {
		st := model.NewStore(model.StoreConfig{History: 300})
		for i := range 40 {
			st.Append(contractSnapshot(t0, i))
		}
		return st
	}
	req := frameRequest{Window: 30 * time.Second, Bin: 10 * time.Second, Bins: 6}
	src := &swapSource{storeSource: storeSource{st: fill()}, old: fill()}
	f, _ := buildFrame(src, req)
	if len(f.Rows) != 1 || src.calls != 2 {
		t.Fatalf("%d rows after %d calls of Store, want the replacement's 1 row after 2", len(f.Rows), src.calls)
	}
	// Built and released: a retirement asked now happens at once.
	src.st.Retire()
	if got := src.st.Targets(); len(got) != 0 {
		t.Errorf("the frame still holds its store: retired, it lists %v", got)
	}
}
