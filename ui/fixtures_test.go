package ui

import (
	"io"
	"math"
	"strconv"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/retrytop/retrytop/model"
)

// fixedNow is the wall clock of every test.
var fixedNow = time.Date(2025, 3, 4, 3, 12, 45, 0, time.UTC)

// dataTime is the newest scrape of the base fixture: 2 s before the clock.
var dataTime = fixedNow.Add(-2 * time.Second)

func some(v float64) model.Value { return model.Some(v) }

// hist builds a cumulative histogram from per-bucket counts over bounds.
func hist(bounds []float64, counts []float64) model.HistogramWindow {
	var h model.HistogramWindow
	cum := 0.0
	for i, b := range bounds {
		cum += counts[i]
		h.Buckets = append(h.Buckets, model.Bucket{UpperBound: b, Count: cum})
	}
	h.Count = cum
	return h
}

var latBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, math.Inf(1)}

// row is one fixture row with every signal present; scale varies it.
func row(target, dep string, orig, amp, errFrac float64) model.Signals {
	att := orig * amp
	s := model.Signals{
		Target: target, Dependency: dep, Dialect: "retrytop",
		OriginalsPerS:         some(orig),
		AttemptsPerS:          some(att),
		Amplification:         some(amp),
		AmplificationBasis:    model.AmplificationAdmitted,
		AttemptsPerOriginal:   some(amp),
		CompletedPerS:         some(orig),
		AdmittedPerS:          some(orig),
		RetriesPerS:           some(att - orig),
		RescuedPerS:           some((att - orig) * 0.6),
		BudgetDeniedPerS:      some(orig * 0.02 * amp),
		AdmissionRejectedPerS: some(orig * 0.05 * errFrac * 10),
		ProviderErrorsPerS:    some(att * errFrac),
		TemporaryErrorsPerS:   some(att * errFrac * 0.9),
		PermanentErrorsPerS:   some(att * errFrac * 0.1),
		TimeoutsPerS:          some(att * errFrac * 0.25),
		SuccessesPerS:         some(orig * (1 - errFrac/2)),
		DeadlineExhaustedPerS: some(orig * errFrac * 0.1),
		EffectiveSuccess:      some(1 - errFrac/2),
		AttemptSuccess:        some(1 - errFrac),
		ActiveCalls:           some(math.Round(orig * amp / 10)),
		ConcurrencyLimit:      some(64),
		PoolWaitP50:           some(0.0004 * amp),
		PoolWaitP99:           some(0.012 * amp * amp),
		BackoffP50:            some(0.05),
		BackoffP99:            some(0.4),
		BudgetBalance:         some(12),
		MaxAttempts:           some(4),
		DeadlineSeconds:       some(2),
		AdmissionRejectedBy: []model.Breakdown{
			{Key: "overload/critical", PerS: orig * 0.01 * errFrac * 10},
			{Key: "overload/sheddable", PerS: orig * 0.04 * errFrac * 10},
		},
	}
	succ := hist(latBounds, []float64{0, 2, 10, 40, 120, 300, 180, 60, 20, 8, 2, 0})
	fast := hist(latBounds, []float64{5, 40, 30, 10, 5, 2, 0, 0, 0, 0, 0, 0})
	fail := hist(latBounds, []float64{0, 0, 0, 0, 1, 2, 4, 8, 6, 4, 3, 1})
	for i := range fast.Buckets {
		fast.Buckets[i].Count *= errFrac * 40
	}
	fast.Count *= errFrac * 40
	s.LatencyHist = model.ClassesOf(map[string]model.HistogramWindow{
		model.ClassSuccess: succ, model.ClassFastFailure: fast, model.ClassFailure: fail,
	})
	s.Latency = model.ClassesOf(map[string]model.Quantiles{
		model.ClassSuccess:     {P50: some(0.042), P90: some(0.11), P99: some(0.48)},
		model.ClassFastFailure: {P50: some(0.0021), P90: some(0.0062), P99: some(0.019)},
		model.ClassFailure:     {P50: some(0.31), P90: some(1.4), P99: some(2.6)},
	})
	mixed := some(0.41)
	if errFrac >= 0.3 {
		mixed = some(0.0095) // fast failures dominate: the mixed p99 misleads
	}
	s.MixedLatency = model.Quantiles{P50: some(0.01), P90: some(0.09), P99: mixed}
	return s
}

// bareRow is a row whose endpoint exposes only originals and attempts:
// everything else is absent and must show as "-".
func bareRow(target, dep string) model.Signals {
	return model.Signals{
		Target: target, Dependency: dep,
		OriginalsPerS: some(12), AttemptsPerS: some(12), Amplification: some(1),
		ProviderErrorsPerS: some(0),
	}
}

// timeline makes bins oldest first: amplification rising over time.
func timeline(s model.Signals, bins int, phase int) []model.Signals {
	out := make([]model.Signals, bins)
	for i := range out {
		b := model.Signals{Target: s.Target, Dependency: s.Dependency}
		o := s.OriginalsPerS.V() * (0.8 + 0.05*float64((i+phase)%5))
		amp := 1 + (s.Amplification.V()-1)*float64(i+1)/float64(bins)
		e := 0.01 + 0.4*float64(i)/float64(bins)*boolf(s.Amplification.V() > 1.5)
		b.OriginalsPerS = some(o)
		b.AttemptsPerS = some(o * amp)
		b.Amplification = some(amp)
		b.SuccessesPerS = some(o * (1 - e/2))
		b.RescuedPerS = some(o * (amp - 1) * 0.6)
		b.AdmissionRejectedPerS = some(o * 0.05 * e * boolf(i > bins/2))
		b.BudgetDeniedPerS = some(o * 0.02 * amp * boolf(i > bins/3))
		b.DeadlineExhaustedPerS = some(o * e * 0.1)
		b.ProviderErrorsPerS = some(o * amp * e)
		b.TimeoutsPerS = some(o * amp * e * 0.25)
		b.ActiveCalls = some(math.Round(o * amp / 10))
		b.ConcurrencyLimit = some(64)
		b.PoolWaitP50 = some(0.0004 * amp)
		b.PoolWaitP99 = some(0.012 * amp * amp)
		if i == 3 {
			// A gap: the target missed a scrape. Absent, not zero.
			b = model.Signals{Target: s.Target, Dependency: s.Dependency}
		}
		out[i] = b
	}
	return out
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// fixtureFrame is the deterministic frame of the goldens. variant shifts
// the numbers so that refresh tests see the order change.
func fixtureFrame(t time.Time, window time.Duration, variant int) model.Frame {
	v := float64(variant)
	rows := []model.Signals{
		row("checkout", "payments", 120+v*90, 2.41-v*1.2, 0.34),
		row("checkout", "inventory", 340, 1.08+v*2, 0.02),
		row("payments", "bank-api", 95, 1.72, 0.12),
		row("payments", "fraud", 60, 1.01, 0.001),
		row("gateway", "checkout", 410, 1.003, 0.0005),
		bareRow("legacy", "mainframe"),
		row("evil\x1b[2J\x1b]0;pwned\x07", "dep\u202eoverride\nline", 3, 1, 0),
	}
	f := model.Frame{
		Time:   t,
		Window: window,
		Bin:    10 * time.Second,
		Targets: []model.TargetStatus{
			{Name: "checkout", Up: true, LastScrape: t, LastSuccess: t},
			{Name: "gateway", Up: true, LastScrape: t, LastSuccess: t},
			{Name: "legacy", Up: false, LastError: "dial tcp 10.1.2.3:9100: connect: connection refused\x1b[31m!", LastScrape: t},
			{Name: "payments", Up: true, LastScrape: t, LastSuccess: t},
		},
		Rows:      rows,
		Timelines: map[model.Key]*model.Timeline{},
	}
	for i, r := range rows {
		if r.Target == "legacy" {
			continue // no timeline: the chart says so
		}
		f.Timelines[r.Key()] = model.NewTimeline(timeline(r, 30, i+variant))
	}
	return f
}

// bigFrame has n rows for scrolling tests and benchmarks.
func bigFrame(t time.Time, n int, variant int) model.Frame {
	f := model.Frame{Time: t, Window: time.Minute, Bin: 10 * time.Second, Timelines: map[model.Key]*model.Timeline{}}
	for i := 0; i < 12; i++ {
		f.Targets = append(f.Targets, model.TargetStatus{Name: "svc-" + strconv.Itoa(i), Up: i != 7, LastError: "timeout", LastScrape: t})
	}
	for i := 0; i < n; i++ {
		r := row("svc-"+strconv.Itoa(i%12), "dependency-"+strconv.Itoa(i), float64(10+(i*37+variant*11)%400), 1+float64((i*13+variant)%30)/10, float64(i%7)/20)
		f.Rows = append(f.Rows, r)
		f.Timelines[r.Key()] = model.NewTimeline(timeline(r, 30, i+variant))
	}
	return f
}

// testSource is a Source whose frames come from a function.
type testSource struct {
	updates chan struct{}
}

func (s *testSource) Store() *model.Store            { return nil }
func (s *testSource) Statuses() []model.TargetStatus { return nil }
func (s *testSource) Updates() <-chan struct{}       { return s.updates }

// newTestModel returns a model with a fixed clock, plain rendering, and
// frames built by frames (for the requests commands make).
func newTestModel(t testing.TB, opts Options, frames func(frameRequest) model.Frame) *Model {
	t.Helper()
	opts.Now = func() time.Time { return fixedNow }
	if opts.Location == nil {
		opts.Location = time.UTC // goldens must not depend on the machine's zone
	}
	if opts.Renderer == nil {
		opts.Renderer = lipgloss.NewRenderer(io.Discard)
	}
	opts.StaleAfter = -1
	m := NewModel(&testSource{updates: make(chan struct{})}, opts)
	done := make(chan struct{})
	m.done = done
	if tt, ok := t.(*testing.T); ok {
		tt.Cleanup(func() { close(done) })
	}
	if frames != nil {
		m.build = func(_ Source, req frameRequest) (model.Frame, derived) { return frames(req), derived{} }
	}
	return m
}

func send(m *Model, msgs ...tea.Msg) tea.Cmd {
	var last tea.Cmd
	for _, msg := range msgs {
		_, last = m.Update(msg)
	}
	return last
}

func keyMsg(s string) tea.KeyMsg {
	switch s {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "space":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

func liveFrame(f model.Frame) frameMsg {
	return frameMsg{frame: f, req: frameRequest{Window: f.Window, Bin: 10 * time.Second, Bins: 30}, kind: frameRebuild}
}

// fullService is a service with every signal present; scale varies it.
func fullService(target, source string, recv float64) model.ServiceSignals {
	return model.ServiceSignals{
		Target: target, Source: source,
		ReceivedPerS: some(recv), InFlight: some(58), Slots: some(64),
		QueueDepth: some(37), QueueLimit: some(200), QueueOldestAge: some(1.84), QueueWaitP99: some(1.52), QueueWaitMean: some(0.9),
		ServiceTimeP50: some(0.118), ServiceTimeP99: some(0.47),
		SuccessServiceTimeP50: some(0.121), SuccessServiceTimeP99: some(0.41),
		ErrorServiceTimeP50: some(0.0032), ErrorServiceTimeP99: some(0.9),
		Responses2xxPerS: some(recv * 0.7), Responses429PerS: some(recv * 0.05),
		Responses503PerS: some(recv * 0.2), Responses503RetryAfterPerS: some(recv * 0.15),
		ResponsesOther5xxPerS: some(recv * 0.01), Responses5xxPerS: some(recv * 0.21),
		WorkAfterCancelPerS: some(recv * 0.12), CancelledPerS: some(recv * 0.03),
	}
}

// fixtureServices are the SERVICES rows of the service goldens, by name:
// a sim-shaped service with every signal, a promhttp one without queue or
// cancellation, the down target with nothing at all, and a hostile name.
// variant shifts the numbers.
func fixtureServices(variant int) []model.ServiceSignals {
	v := float64(variant)
	bank := fullService("bank-api", "promhttp", 160+v*40)
	bank.Slots, bank.QueueDepth, bank.QueueLimit, bank.QueueOldestAge, bank.QueueWaitP99 = model.Absent, model.Absent, model.Absent, model.Absent, model.Absent
	bank.WorkAfterCancelPerS, bank.CancelledPerS = model.Absent, model.Absent
	bank.Responses503RetryAfterPerS = model.Absent
	inv := fullService("inventory", "sim", 367+v*20)
	inv.QueueLimit = some(0) // unbounded
	inv.Responses429PerS, inv.ResponsesOther5xxPerS = some(0), model.Absent
	evil := fullService("svc\x1b]0;pwned\x07\u202eevil", "sim\x1b[2J", 3)
	return []model.ServiceSignals{bank, inv, {Target: "legacy"}, evil}
}

// serviceTimeline makes bins oldest first: load and queue building up,
// with a missed scrape at bin 3 (absent, not zero).
func serviceTimeline(s model.ServiceSignals, bins int) []model.ServiceSignals {
	out := make([]model.ServiceSignals, bins)
	for i := range out {
		b := model.ServiceSignals{Target: s.Target}
		x := float64(i+1) / float64(bins)
		scale := func(v model.Value, k float64) model.Value {
			if !v.OK() {
				return model.Absent
			}
			return some(v.V() * k)
		}
		b.ReceivedPerS = scale(s.ReceivedPerS, 0.6+0.4*x)
		b.InFlight = scale(s.InFlight, x)
		b.Slots = s.Slots
		b.QueueDepth = scale(s.QueueDepth, x*x)
		b.QueueLimit = s.QueueLimit
		b.QueueOldestAge = scale(s.QueueOldestAge, x*x)
		b.QueueWaitP99 = scale(s.QueueWaitP99, x)
		b.ServiceTimeP50 = scale(s.ServiceTimeP50, 0.5+x/2)
		b.ServiceTimeP99 = scale(s.ServiceTimeP99, 0.5+x/2)
		b.SuccessServiceTimeP99 = scale(s.SuccessServiceTimeP99, 0.5+x/2)
		b.ErrorServiceTimeP99 = scale(s.ErrorServiceTimeP99, 1-x/2)
		b.Responses2xxPerS = scale(s.Responses2xxPerS, 1.2-x/2)
		b.Responses429PerS = scale(s.Responses429PerS, x)
		b.Responses503PerS = scale(s.Responses503PerS, x*x)
		b.Responses503RetryAfterPerS = scale(s.Responses503RetryAfterPerS, x*x)
		b.ResponsesOther5xxPerS = scale(s.ResponsesOther5xxPerS, x)
		b.WorkAfterCancelPerS = scale(s.WorkAfterCancelPerS, x*x)
		b.CancelledPerS = scale(s.CancelledPerS, x)
		if i == 3 {
			b = model.ServiceSignals{Target: s.Target}
		}
		out[i] = b
	}
	return out
}

// svcDerived is what the build Cmd derives for fixtureServices: the
// services, and the bins of req.Service when its detail is open.
func svcDerived(req frameRequest, variant int) derived {
	d := derived{services: fixtureServices(variant)}
	if req.Service != "" {
		d.svcTarget = req.Service
		for _, s := range d.services {
			if s.Target == req.Service {
				d.svcTimeline = serviceTimeline(s, 30)
			}
		}
	}
	return d
}

// svcModel is goldenModel with services: every frame it builds carries
// fixtureServices, and reqs records the requests.
func svcModel(t *testing.T, opts Options, w, h int, reqs *[]frameRequest) *Model {
	m := newTestModel(t, opts, nil)
	m.build = func(_ Source, req frameRequest) (model.Frame, derived) {
		if reqs != nil {
			*reqs = append(*reqs, req)
		}
		return fixtureFrame(dataTime, req.Window, 0), svcDerived(req, 0)
	}
	f := liveFrame(fixtureFrame(dataTime, time.Minute, 0))
	f.derived = svcDerived(f.req, 0)
	send(m, tea.WindowSizeMsg{Width: w, Height: h}, f)
	return m
}
