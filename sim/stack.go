package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/retrytop/retrytop/retry"
)

// Options are the run-time knobs of Start and Compare; they map one to one
// onto `retrytop demo` flags (docs/scenarios.md).
type Options struct {
	// ListenBase is the first loopback port (--listen-base): the browser
	// gets ListenBase, then each layer in order, then the provider. 0 picks
	// free ephemeral ports.
	ListenBase int
	// Duration (--duration) scales the scenario's phases to this total,
	// keeping their proportions. 0 keeps the scenario's durations.
	Duration time.Duration
	// Healthy, Slow and Recovered set single phase durations; they apply
	// after Duration. 0 leaves a phase as it is.
	Healthy, Slow, Recovered time.Duration
	// Rate overrides the arrival rate (originals per second); 0 keeps the
	// scenario's.
	Rate float64
	// HiddenHop inserts HiddenProxy() between the last layer and the
	// provider.
	HiddenHop bool
	// NonIdempotent makes the client send POST and retry it anyway;
	// Breaker puts StickyBreaker() in front of the client's owner
	// (route.go).
	NonIdempotent, Breaker bool
	// Seed makes error injection and backoff jitter repeatable; runs with
	// the same Seed and Options see the same arrivals.
	Seed uint64
	// Clock drives the arrival and phase schedules and the provider (its
	// queue waits and service times); default: real time. The hops' retry
	// owners (timeouts, backoff, latencies) always use the time package;
	// for a run wholly in virtual time, leave Clock nil, set InProcess and
	// run the stack inside a testing/synctest bubble, where the time
	// package itself is virtual (docs/testing.md).
	Clock Clock
	// InProcess connects the hops with an in-process transport instead of
	// loopback sockets: each hop's handler serves its caller's request on
	// a goroutine of its own, honouring the caller's cancel, and nothing
	// listens. Target URLs are then http://NAME.sim/metrics, reachable
	// only through Stack.Transport. ListenBase must be 0.
	InProcess bool
	// OnPhase, if set, is called when a phase begins (index, name) and once
	// more when the last one ends (len(phases), ""), from the stack's
	// goroutine, right after the phase's ground-truth snapshot.
	OnPhase func(index int, name string)
	// Hold keeps the last phase's traffic going after the schedule ends,
	// until ctx is done or Close (a dashboard's demo, read at leisure);
	// without it the generator stops at the schedule's end.
	Hold bool
	// OnStart, if set, is called with each stack Compare starts, before
	// its traffic begins (to print targets, watch it headless).
	OnStart func(*Stack)
}

// Target is one scrape target of the stack.
type Target struct {
	Name string
	// URL is the target's /metrics endpoint.
	URL string
	// Layer is its role: browser, app, client, provider.
	Layer string
}

// Stack is a running scenario: HTTP servers on loopback, the generator and
// the ground truth.
type Stack struct {
	sc       Scenario
	opts     Options
	clock    Clock
	sched    Schedule
	start    time.Time
	targets  []Target
	hops     []*hop // browser first, then the layers
	prov     *provider
	gen      *generator
	servers  []*http.Server
	inproc   *inProcess // the transport of an InProcess stack, else nil
	cancel   context.CancelFunc
	done     chan struct{} // closed when the generator finished and drained
	bg       sync.WaitGroup
	closeErr error
	closed   sync.Once

	mu        sync.Mutex
	snaps     []snapshot // snaps[i]: at the start of phase i; one more at the end
	ring      []snapshot // one per second, the newest last, for rates
	backlogAt time.Duration
	backlog   bool // queue above slots seen after the slowdown ended
}

// snapshot is the cumulative counters at one moment.
type snapshot struct {
	at       time.Duration
	sent     int64
	hops     []hopSnap
	received int64
	// granted and waited: the provider's slot grants and their total
	// queue wait so far.
	granted int64
	waited  time.Duration
}

type hopSnap struct{ originals, attempts int64 }

func (s *Stack) snap() snapshot {
	sn := snapshot{at: s.clock.Now().Sub(s.start), sent: s.gen.sent.Load(), received: s.prov.counts.received.Load()}
	sn.granted, sn.waited = s.prov.counts.waits()
	for _, h := range s.hops {
		sn.hops = append(sn.hops, hopSnap{h.counts.originals.Load(), h.counts.attempts.Load()})
	}
	return sn
}

// Start builds and starts the stack for sc. Traffic begins at once and
// stops when the schedule ends or ctx is done; call Close to free the ports.
func Start(ctx context.Context, sc Scenario, opts Options) (*Stack, error) {
	sc, err := applyOptions(sc, opts)
	if err != nil {
		return nil, err
	}
	s := &Stack{sc: sc, opts: opts, clock: clockOr(opts.Clock), sched: sc.Schedule, done: make(chan struct{})}
	h := newHopLayout(sc)
	// Listen everywhere first, so every hop knows its next hop's URL.
	if err := s.listen(h); err != nil {
		return nil, err
	}
	if err := s.buildHops(h); err != nil {
		h.closeListeners()
		return nil, err
	}
	// The schedule starts now: everything is listening.
	s.startGenerator(h)
	s.serve(h)
	s.run(ctx)
	return s, nil
}

// hopLayout is the stack's hops in call order, the browser first and the
// provider last, as Start builds them.
type hopLayout struct {
	names  []string
	hidden []bool                 // a layer with no metrics of its own
	roles  []string               // each hop's layer (Target.Layer)
	regs   []*prometheus.Registry // nil for a hidden hop
	// lns are the listeners (nil in process); base is hop i's URL
	// without a path; transport carries the calls (nil: each hop dials
	// loopback).
	lns       []net.Listener
	base      func(i int) string
	transport http.RoundTripper
}

// newHopLayout lays out sc's hops, each visible one with a registry of
// its own.
func newHopLayout(sc Scenario) *hopLayout {
	names := []string{NameBrowser}
	for _, l := range sc.Layers {
		names = append(names, l.Name)
	}
	names = append(names, NameProvider)
	h := &hopLayout{names: names, hidden: make([]bool, len(names)), roles: make([]string, len(names)), regs: make([]*prometheus.Registry, len(names))}
	h.roles[0], h.roles[len(names)-1] = NameBrowser, NameProvider
	for i, l := range sc.Layers {
		h.hidden[i+1] = l.Hidden
		h.roles[i+1] = l.Role
		if h.roles[i+1] == "" {
			h.roles[i+1] = l.Name
		}
	}
	for i := range names {
		if !h.hidden[i] {
			h.regs[i] = prometheus.NewRegistry()
		}
	}
	return h
}

// nextVisible is the name a hop's dependency carries: the next target its
// callers can see.
func (h *hopLayout) nextVisible(i int) string {
	for j := i + 1; j < len(h.names); j++ {
		if !h.hidden[j] {
			return h.names[j]
		}
	}
	return NameProvider
}

// reg is hop i's registry, nil (an interface holding no registry) for a
// hidden hop.
func (h *hopLayout) reg(i int) prometheus.Registerer {
	if h.regs[i] == nil {
		return nil
	}
	return h.regs[i]
}

// closeListeners closes the listeners made so far.
func (h *hopLayout) closeListeners() {
	for _, l := range h.lns {
		_ = l.Close()
	}
}

// listen gives every hop its URL: a listener on loopback (at ListenBase
// and on when set), or a name the in-process transport serves.
func (s *Stack) listen(h *hopLayout) error {
	names := h.names
	if s.opts.InProcess {
		if s.opts.ListenBase != 0 {
			return errors.New("sim: InProcess listens nowhere; ListenBase must be 0")
		}
		s.inproc = newInProcess()
		h.transport = s.inproc
		h.base = func(i int) string { return "http://" + names[i] + ".sim" }
		return nil
	}
	h.lns = make([]net.Listener, len(names))
	for i := range names {
		addr := "127.0.0.1:0"
		if s.opts.ListenBase > 0 {
			addr = "127.0.0.1:" + strconv.Itoa(s.opts.ListenBase+i)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, l := range h.lns[:i] {
				_ = l.Close()
			}
			return fmt.Errorf("sim: listen for %s: %w", names[i], err)
		}
		h.lns[i] = ln
	}
	lns := h.lns
	h.base = func(i int) string { return "http://" + lns[i].Addr().String() }
	return nil
}

// buildHops registers each target's service name, so a chain links from
// bare URLs (its callers' dependency label is this name), and makes the
// hops and the provider, whose jitter comes from one source seeded by
// Seed.
func (s *Stack) buildHops(h *hopLayout) error {
	rng := rand.New(rand.NewPCG(s.opts.Seed, 0x6a177e5))
	var rngMu sync.Mutex
	jitter := func(n int64) int64 {
		rngMu.Lock()
		defer rngMu.Unlock()
		return rng.Int64N(n)
	}
	for i, r := range h.regs {
		if r != nil {
			if err := retry.RegisterTargetInfo(r, retry.ServiceInfo{Name: h.names[i]}); err != nil {
				return fmt.Errorf("sim: %s: %w", h.names[i], err)
			}
		}
	}
	policies := []HopPolicy{s.sc.Browser}
	for _, l := range s.sc.Layers {
		policies = append(policies, l.Policy)
	}
	for i := 0; i < len(h.names)-1; i++ {
		hop, err := newHop(h.names[i], h.roles[i], h.nextVisible(i), h.base(i+1)+"/", h.hidden[i], policies[i], h.reg(i), jitter, h.transport)
		if err != nil {
			return err
		}
		s.hops = append(s.hops, hop)
	}
	s.prov = newProvider(s.sc.Provider, s.clock, s.phaseNow, s.opts.Seed, h.regs[len(h.names)-1])
	return nil
}

// startGenerator starts the schedule now and makes the generator of user
// operations, each sent to the browser hop within its deadline.
func (s *Stack) startGenerator(h *hopLayout) {
	browser := s.hops[0]
	opDeadline := max(s.sc.Generator.UserDeadline, s.sc.Browser.Retry.Deadline)
	send := func(ctx context.Context, _ int64) Outcome {
		ctx, cancel := context.WithTimeout(ctx, opDeadline)
		defer cancel()
		return userOutcome(browser.call(ctx))
	}
	s.start = s.clock.Now()
	arr := Arrivals{Start: s.start, Rate: s.sc.Generator.Rate}
	limit := arr.Before(s.start.Add(s.sched.Total()))
	s.gen = newGenerator(s.sc.Generator, s.clock, arr, limit, send, h.regs[0])
	s.gen.hold = s.opts.Hold
	s.gen.phaseBins = make([]bin, len(s.sched.Phases))
	s.gen.phaseOf = func(due time.Duration) int {
		i, _, _ := s.sched.At(due)
		return i
	}
	s.registerPhase(h.regs[0])
}

// serve serves each hop's calls and metrics (a visible hop's become a
// Target), on its listener or in process.
func (s *Stack) serve(h *hopLayout) {
	for i, name := range h.names {
		mux := http.NewServeMux()
		if h.regs[i] != nil {
			mux.Handle("/metrics", promhttp.HandlerFor(h.regs[i], promhttp.HandlerOpts{}))
		}
		switch {
		case i == len(h.names)-1:
			mux.Handle("/", s.prov)
		case i > 0:
			mux.Handle("/", s.hops[i])
		}
		if !h.hidden[i] {
			s.targets = append(s.targets, Target{Name: name, URL: h.base(i) + "/metrics", Layer: h.roles[i]})
		}
		if s.inproc != nil {
			s.inproc.handlers[name+".sim"] = mux
			continue
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		s.servers = append(s.servers, srv)
		s.bg.Add(1)
		go func(ln net.Listener) {
			defer s.bg.Done()
			_ = srv.Serve(ln) // returns http.ErrServerClosed on Close
		}(h.lns[i])
	}
}

// run takes the first snapshot and starts the generator, the phase
// watcher and the sampler until ctx ends or Stop.
func (s *Stack) run(ctx context.Context) {
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	first := s.snap()
	first.at = 0
	s.snaps = []snapshot{first}
	s.ring = []snapshot{s.snaps[0]}
	watched := make(chan struct{})
	s.bg.Add(3)
	go func() {
		defer s.bg.Done()
		defer close(s.done)
		s.gen.run(runCtx)
		<-watched // the end-of-schedule snapshot is taken
	}()
	go func() { defer s.bg.Done(); defer close(watched); s.watchPhases(runCtx) }()
	go func() { defer s.bg.Done(); s.sample(runCtx) }()
}

// applyOptions returns sc with opts' overrides, validated.
func applyOptions(sc Scenario, opts Options) (Scenario, error) {
	sc.Generator = sc.Generator.withDefaults()
	if opts.Rate > 0 {
		sc.Generator.Rate = opts.Rate
	}
	if opts.Duration > 0 {
		sc.Schedule = sc.Schedule.scaled(opts.Duration)
	} else {
		sc.Schedule = Schedule{Phases: append([]Phase(nil), sc.Schedule.Phases...)}
	}
	for name, d := range map[string]time.Duration{PhaseHealthy: opts.Healthy, PhaseSlow: opts.Slow, PhaseRecovered: opts.Recovered} {
		if i := sc.Schedule.Index(name); i >= 0 && d > 0 {
			sc.Schedule.Phases[i].Duration = d
		}
	}
	sc.Layers = append([]Layer(nil), sc.Layers...)
	sc = withRouteOptions(sc, opts)
	if opts.HiddenHop {
		sc.Layers = append(sc.Layers, HiddenProxy())
	}
	if err := sc.Validate(); err != nil {
		return sc, err
	}
	return sc, nil
}

// phaseNow is the phase in force now; after the end, the last phase.
func (s *Stack) phaseNow() Phase {
	i, _, ok := s.sched.At(s.clock.Now().Sub(s.start))
	if !ok {
		i = len(s.sched.Phases) - 1
	}
	return s.sched.Phases[i]
}

func (s *Stack) registerPhase(reg prometheus.Registerer) {
	for i, p := range s.sched.Phases {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "sim_phase",
			Help:        "1 for the phase of the experiment in force now, 0 for the others.",
			ConstLabels: prometheus.Labels{"phase": p.Name, "index": strconv.Itoa(i)},
		}, func() float64 {
			j, _, ok := s.sched.At(s.clock.Now().Sub(s.start))
			if ok && j == i {
				return 1
			}
			return 0
		}))
	}
}

// watchPhases takes a snapshot at each phase boundary (the first one was
// taken by Start) and tells OnPhase.
func (s *Stack) watchPhases(ctx context.Context) {
	if s.opts.OnPhase != nil {
		s.opts.OnPhase(0, s.sched.Phases[0].Name)
	}
	for i := 1; i <= len(s.sched.Phases); i++ {
		wait := s.start.Add(s.sched.Start(i)).Sub(s.clock.Now())
		if wait > 0 {
			t := s.clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		}
		sn := s.snap()
		s.mu.Lock()
		s.snaps = append(s.snaps, sn)
		s.mu.Unlock()
		if s.opts.OnPhase != nil {
			name := ""
			if i < len(s.sched.Phases) {
				name = s.sched.Phases[i].Name
			}
			s.opts.OnPhase(i, name)
		}
	}
}

const (
	sampleEvery = 100 * time.Millisecond
	ringLen     = 61 // one-second snapshots kept for rates
	rateSpan    = 5 * time.Second
)

// sample watches the provider's queue for the recovery measurement and
// keeps one-second snapshots for rates, until the run is over.
func (s *Stack) sample(ctx context.Context) {
	slowEnd, hasSlow := s.slowEnd()
	for tick := 1; ; tick++ {
		t := s.clock.NewTimer(sampleEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.done:
			t.Stop()
			return
		case <-t.C():
		}
		now := s.clock.Now().Sub(s.start)
		st := s.prov.q.stats(s.clock.Now())
		s.mu.Lock()
		if hasSlow && now >= slowEnd && now < s.sched.Total() && st.Depth > s.prov.cfg.Slots {
			s.backlog, s.backlogAt = true, now
		}
		s.mu.Unlock()
		if tick%10 == 0 {
			sn := s.snap()
			s.mu.Lock()
			s.ring = append(s.ring, sn)
			if len(s.ring) > ringLen {
				s.ring = append(s.ring[:0], s.ring[1:]...)
			}
			s.mu.Unlock()
		}
	}
}

// slowEnd is the offset at which the slow phase ends, if there is one.
func (s *Stack) slowEnd() (time.Duration, bool) {
	i := s.sched.Index(PhaseSlow)
	if i < 0 {
		return 0, false
	}
	return s.sched.Start(i + 1), true
}

// Targets lists the scrape targets, browser first, provider last; hidden
// hops are not among them.
func (s *Stack) Targets() []Target { return append([]Target(nil), s.targets...) }

// Scenario returns the scenario as run, with the options applied.
func (s *Stack) Scenario() Scenario { return s.sc }

// Started is when the schedule began (on the stack's clock).
func (s *Stack) Started() time.Time { return s.start }

// Done is closed when the schedule has ended and every original finished.
func (s *Stack) Done() <-chan struct{} { return s.done }

// Wait blocks until the schedule has ended and every original finished, or
// the Start context is done.
func (s *Stack) Wait() { <-s.done }

// Transport reaches the stack's targets (their /metrics) and work
// endpoints: the in-process transport of an InProcess stack, else
// http.DefaultTransport.
func (s *Stack) Transport() http.RoundTripper {
	if s.inproc != nil {
		return s.inproc
	}
	return http.DefaultTransport
}

// Scrape reads a target's exposition through Transport (in process or
// over loopback), as the Prometheus text format: its body and
// Content-Type. A virtual-time test scrapes with it inside its bubble.
func (s *Stack) Scrape(t Target) ([]byte, string, error) {
	req, err := http.NewRequest(http.MethodGet, t.URL, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.Transport().RoundTrip(req)
	if err != nil {
		return nil, "", fmt.Errorf("scrape %s: %w", t.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("scrape %s: %s", t.Name, resp.Status)
	}
	return body, resp.Header.Get("Content-Type"), err
}

// Close stops the traffic, shuts every server down and frees the ports. It
// is safe to call more than once.
func (s *Stack) Close() error {
	s.closed.Do(func() {
		s.cancel()
		s.prov.shutdown() // ignore-cancel work must not hold shutdown up
		<-s.done
		if s.inproc != nil {
			// Handlers of callers that gave up finish on their own now.
			s.inproc.wait()
			s.bg.Wait()
			return
		}
		// Our own clients' idle connections first: a connection dialled for
		// an attempt that was cancelled before its request was written sits
		// in a pool, and the server would wait for it as a new connection.
		s.closeIdle()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var errs []error
		for _, srv := range s.servers {
			if err := srv.Shutdown(ctx); err != nil {
				// The run is over: cut what still lingers.
				errs = append(errs, srv.Close())
			}
		}
		s.bg.Wait()
		s.closeIdle()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

func (s *Stack) closeIdle() {
	for _, h := range s.hops {
		if c, ok := h.transport.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}
