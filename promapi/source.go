package promapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// Defaults of Options.
const (
	DefaultBackfill = 15 * time.Minute
	// DefaultDelay is Options.Delay's default: longer than a scrape takes
	// on a busy server (measured: up to 0.4 s under -race here), shorter
	// than anyone waiting for a dashboard notices.
	DefaultDelay       = 3 * time.Second
	DefaultConcurrency = 8
	DefaultServerName  = "prometheus"
	// DefaultDetectEvery is how often Dialects ["auto"] looks again for
	// dialects the server did not hold before.
	DefaultDetectEvery = time.Minute
	// DialectAuto detects the dialects from the server's metric names.
	DialectAuto = "auto"
)

// Options configure a Source. Zero fields take the defaults.
type Options struct {
	Client ClientConfig
	// Selector is merged into every metric's selector, e.g.
	// `{job="checkout"}` or `namespace="shop"`.
	Selector string
	// By are the grouping labels whose values name a retrytop target
	// (joined with "/"), default ["job"]. dependency and each family's
	// contract labels are always kept.
	By []string
	// Dialects name the dialects whose PromQL is queried (default
	// ["native"], the contract itself); ["auto"] detects them from the
	// metric names the server holds per target, at the first refresh and
	// every DetectEvery after (dialects are only added, as a scraped
	// target's are). See docs/prometheus.md.
	Dialects []string
	// Translator provides the dialects, custom mappings and pool
	// attachments included (nil: dialect.Auto()).
	Translator *dialect.Translator
	// DetectEvery: see Dialects (default DefaultDetectEvery).
	DetectEvery time.Duration
	// Step is the refresh interval and the query_range step (default
	// scrape.DefaultInterval).
	Step time.Duration
	// Backfill is how much history the first refresh loads with
	// query_range (default: DefaultBackfill, capped to what the store
	// holds at Step; negative: none).
	Backfill time.Duration
	// Concurrency caps queries in flight (default DefaultConcurrency).
	Concurrency int
	// Store receives the snapshots (nil: a store with model.DefaultStoreConfig).
	Store *model.Store
	// Clock is the time now (default time.Now); evaluations run Delay
	// behind it.
	Clock func() time.Time
	// Delay is how far behind the clock evaluations run (default
	// DefaultDelay; negative: none). A scrape is written to the server
	// only when it ends, stamped with the time it began: an evaluation at
	// t made while a scrape begun before t was still running would miss
	// it, and the next one, whose "a step ago" now holds it, would count
	// its increase nowhere. Evaluating behind the scrapes' durations keeps
	// every increase counted once.
	Delay time.Duration
	// ServerName names the Prometheus server's own status (default
	// DefaultServerName).
	ServerName string
	Logger     *slog.Logger
}

// Source turns PromQL results into snapshots: one per target (a distinct
// value of the By labels) per evaluation time. It implements the trio
// Store/Statuses/Updates of scrape.Scraper (ui.Source) and is safe for
// concurrent use.
type Source struct {
	opts    Options
	client  *Client
	store   *model.Store
	updates chan struct{}
	auto    bool

	refreshMu sync.Mutex // serialises refreshes; guards the fields below it
	// clockQuery reads each target's newest scrape time (the mean of its
	// replicas'), where its samples are stored.
	clockQuery string
	// lastEval is the newest evaluation time (ms, 0: none): evaluations
	// run on the grid lastEval + k*Step, so each counter query's
	// increases since the evaluation before add up exactly.
	lastEval int64
	// firstEval is the evaluation time of each target's first stored
	// snapshot, lastStored the time of its newest (ms).
	firstEval  map[string]int64
	lastStored map[string]int64
	integ      map[string]*integral
	lastOK     map[string]int64 // query PromQL -> its newest successful evaluation (ms)
	backfilled bool
	// backendRead says the server's build info has been read
	// (detectBackend).
	backendRead bool
	detected    []string  // auto: the dialects found so far
	detectedAt  time.Time // auto: the last detection (zero: none yet)
	noPromQL    string    // auto: the detected dialects without PromQL, as an error
	// capped is each target's newest store append that the store's series
	// caps refused series of (none: not there), for its status: refused
	// series are said, never lost silently.
	capped map[string]model.AppendResult

	mu      sync.Mutex // guards statuses and queries
	queries []Query
	server  model.TargetStatus
	targets map[string]*model.TargetStatus
	running bool
	// refreshing is when the refresh in flight began (zero: none);
	// answered when the server last answered a request, any answer.
	// Statuses reads them to tell a server that stopped answering
	// (unresponsive) while a refresh still waits on it.
	refreshing, answered time.Time
}

// integral is the synthetic counter of one increase series.
type integral struct {
	t int64   // evaluation time of the newest sample (ms)
	v float64 // cumulative value
	// Its query and target: a failed query holds back the targets it
	// has series of (apply).
	promql, target string
}

// New checks the options and builds the source; nothing is queried yet.
func New(opts Options) (*Source, error) {
	if len(opts.By) == 0 {
		opts.By = []string{"job"}
	}
	if opts.Step <= 0 {
		opts.Step = scrape.DefaultInterval
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Delay == 0 {
		opts.Delay = DefaultDelay
	}
	opts.Delay = max(opts.Delay, 0)
	if opts.ServerName == "" {
		opts.ServerName = DefaultServerName
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Store == nil {
		opts.Store = model.NewStore(model.StoreConfig{})
	}
	if opts.Backfill == 0 {
		opts.Backfill = DefaultBackfill
	}
	if max := time.Duration(opts.Store.Config().History-1) * opts.Step; opts.Backfill > max {
		opts.Backfill = max
	}
	if opts.Client.Timeout <= 0 {
		// A late refresh catches up on the grid; a timed-out query loses
		// nothing either, but its signals go stale until it answers.
		opts.Client.Timeout = max(2*opts.Step, 5*time.Second)
	}
	if opts.DetectEvery <= 0 {
		opts.DetectEvery = DefaultDetectEvery
	}
	if opts.Translator == nil {
		opts.Translator = dialect.Auto()
	}
	if len(opts.Dialects) == 0 {
		opts.Dialects = []string{dialect.NameNative}
	}
	auto := slices.Contains(opts.Dialects, DialectAuto)
	if auto && len(opts.Dialects) > 1 {
		return nil, fmt.Errorf("promapi: dialect %q detects every dialect: give it alone", DialectAuto)
	}
	var qs []Query
	var err error
	if auto {
		// Check the options now; the queries come with detection.
		_, err = BuildQueries(opts.By, opts.Selector, opts.Step)
	} else {
		qs, err = BuildDialectQueries(opts.Translator, opts.Dialects, opts.By, opts.Selector, opts.Step)
	}
	if err != nil {
		return nil, err
	}
	c, err := NewClient(opts.Client)
	if err != nil {
		return nil, err
	}
	s := &Source{
		opts:       opts,
		client:     c,
		queries:    qs,
		auto:       auto,
		store:      opts.Store,
		updates:    make(chan struct{}, 1),
		integ:      make(map[string]*integral),
		firstEval:  make(map[string]int64),
		lastStored: make(map[string]int64),
		clockQuery: clockQuery(opts.By, opts.Selector),
		lastOK:     make(map[string]int64),
		server:     model.TargetStatus{Name: opts.ServerName, URL: c.URL(), Layer: "prometheus", Dialect: "prometheus-api"},
		targets:    make(map[string]*model.TargetStatus),
	}
	if !auto {
		s.server.Dialect = dialectNames(opts.Dialects)
	}
	return s, nil
}

// clockQuery reads the newest scrape time of each target's up series, the
// mean over its replicas: what its newest samples at an evaluation
// describe.
//
// Only scrapes that worked count (up == 1): a failed scrape writes up=0 at
// its time while the target's series keep their older samples, so its
// time would stretch the span their increase is divided by. A target
// whose replicas all failed their newest scrape reads -1: nothing new to
// store at that evaluation (its values are its last good scrape's).
func clockQuery(by []string, selector string) string {
	sel := "up"
	if m, _ := selectorMatchers(selector); m != "" {
		sel = "up{" + m + "}"
	}
	g := strings.Join(by, ", ")
	// timestamp() reads sample times only from a plain selector (of an
	// expression it returns the evaluation time): filter after it.
	return "avg by (" + g + ") (timestamp(" + sel + ") and " + sel + " == 1) or (max by (" + g + ") (" + sel + ") * 0 - 1)"
}

// dialectNames is the server status' dialect: the dialects queried.
func dialectNames(ds []string) string {
	if len(ds) == 0 {
		return "prometheus-api"
	}
	return "prometheus-api:" + strings.Join(ds, "+")
}

// Queries returns the PromQL of one refresh (none before the first
// detection with Dialects ["auto"]).
func (s *Source) Queries() []Query {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Query(nil), s.queries...)
}

// Dialects returns the dialects queried: those of Options.Dialects, or
// those detected so far.
func (s *Source) Dialects() []string {
	if !s.auto {
		return append([]string(nil), s.opts.Dialects...)
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	return append([]string(nil), s.detected...)
}

// Store returns the store snapshots are appended to.
func (s *Source) Store() *model.Store { return s.store }

// Updates receives after every refresh without blocking the source.
func (s *Source) Updates() <-chan struct{} { return s.updates }

// Statuses returns the server's status first, then every target seen so
// far, sorted by name. While a refresh has waited longer than one query's
// timeout without any answer from the server, the server is shown down
// ("no answer for 12s") and every target's data stale, before the
// refresh itself gives up.
func (s *Source) Statuses() []model.TargetStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []model.TargetStatus{s.server}
	names := make([]string, 0, len(s.targets))
	for n := range s.targets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, *s.targets[n])
	}
	if silent, ok := s.unresponsive(); ok {
		markUnresponsive(out, silent)
	}
	return out
}

// unresponsive says, under s.mu, how long the server has not answered
// when a refresh in flight has waited for it longer than a query's
// timeout with no answer since it began.
func (s *Source) unresponsive() (time.Duration, bool) {
	if s.refreshing.IsZero() || s.answered.After(s.refreshing) {
		return 0, false
	}
	now := s.opts.Clock()
	if now.Sub(s.refreshing) <= s.client.timeout {
		return 0, false
	}
	since := s.refreshing
	if !s.answered.IsZero() {
		since = s.answered
	}
	return now.Sub(since).Truncate(time.Second), true
}

// markUnresponsive rewrites statuses (the server's first) for a server
// silent for d: the server down, its targets' data stale.
func markUnresponsive(sts []model.TargetStatus, d time.Duration) {
	silent := fmt.Sprintf("no answer for %s", d)
	sts[0].Up, sts[0].LastError = false, silent+" (the server is not responding; its data is stale)"
	for i := range sts[1:] {
		sts[i+1].Up, sts[i+1].LastError = false, "stale: prometheus "+silent
	}
}

// Run refreshes at once and then every Step until ctx is done.
func (s *Source) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("promapi: Source.Run is already running")
	}
	s.running = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
		s.client.Close()
	}()
	tick := time.NewTicker(s.opts.Step)
	defer tick.Stop()
	for {
		s.Refresh(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// queryResult is one query's outcome in a refresh.
type queryResult struct {
	res Result
	err error
}

// Refresh runs every query once, concurrently (at most Concurrency at a
// time), appends the snapshots and returns the statuses. The first
// successful refresh loads Backfill of history with query_range; later
// ones are instant queries at the clock's time. A failed or timed-out
// query leaves its series without a sample at this time (stale) and
// the others unaffected. If ctx ends first, nothing is recorded.
func (s *Source) Refresh(ctx context.Context) []model.TargetStatus {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	start := time.Now()
	e, due := s.nextEvaluation()
	if !due {
		return s.Statuses()
	}
	s.refresh(ctx, e, start)
	return s.Statuses()
}

// refresh runs evaluation e (Refresh), marked in flight for Statuses.
func (s *Source) refresh(ctx context.Context, e evaluation, start time.Time) {
	s.mu.Lock()
	s.refreshing = s.opts.Clock()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.refreshing = time.Time{}
		s.mu.Unlock()
	}()
	silent := s.detectBackend(ctx)
	detectErr := ""
	if silent == nil {
		detectErr = s.detectIfDue(ctx, e.at)
	}
	s.mu.Lock()
	e.queries = s.queries
	s.mu.Unlock()
	if !s.backfilled && s.opts.Backfill > 0 {
		e.from = e.at.Add(-s.opts.Backfill / s.opts.Step * s.opts.Step)
	}
	if silent != nil {
		e.giveUp(fmt.Errorf("given up: the server did not answer this refresh (%w)", silent))
	} else {
		s.runQueries(ctx, &e)
	}
	if ctx.Err() != nil {
		return
	}
	e.tally(detectErr)
	e.first, e.prevEval = s.lastEval == 0, s.lastEval
	if e.ok > 0 {
		s.backfilled = true
		s.lastEval = e.at.UnixMilli()
	}
	s.readScrapeTimes(&e)
	seen, earlier := s.apply(&e)
	for i, r := range e.results {
		if r.err == nil {
			s.lastOK[e.queries[i].PromQL] = e.at.UnixMilli()
		}
	}
	s.setStatuses(e.at, time.Since(start), len(e.queries), e.ok, e.firstErr, e.warnings, seen, earlier)
	select {
	case s.updates <- struct{}{}:
	default:
	}
}

// evaluation is one refresh: its times, its queries and what they
// answered.
type evaluation struct {
	at   time.Time // the evaluation time
	from time.Time // the first evaluation time of the refresh (at: one step)
	// prevEval is the evaluation time before (ms, 0: none); first says
	// this is the Source's first evaluation.
	prevEval int64
	first    bool
	queries  []Query
	results  []queryResult // by query
	clock    queryResult   // the scrape times (clockQuery)
	// scraped is each target's scrape time by evaluation time (ms), from
	// the clock's answer; nil when the clock query failed.
	scraped  map[string]map[int64]int64
	ok       int    // queries answered
	firstErr string // the first failure, and the detection's
	warnings []string
}

// nextEvaluation returns the evaluation due now, Delay behind the clock,
// and false when none is (the newest is less than a step old).
// Evaluations stay on one grid, so each increase query's results since
// the previous evaluation add up; a refresh late by more than a step (a
// slow server, a busy machine) evaluates the steps missed.
func (s *Source) nextEvaluation() (evaluation, bool) {
	at := s.opts.Clock().Add(-s.opts.Delay).Truncate(time.Millisecond)
	from := at
	if s.lastEval > 0 {
		next := s.lastEval + s.opts.Step.Milliseconds()
		if at.UnixMilli() < next {
			return evaluation{}, false
		}
		steps := (at.UnixMilli() - s.lastEval) / s.opts.Step.Milliseconds()
		at = time.UnixMilli(s.lastEval + steps*s.opts.Step.Milliseconds())
		from = time.UnixMilli(next)
	}
	return evaluation{at: at, from: from}, true
}

// detectIfDue detects the dialects again when auto and DetectEvery has
// passed; it returns what keeps queries from being made, as an error
// text ("" when nothing does).
func (s *Source) detectIfDue(ctx context.Context, at time.Time) string {
	if s.auto && (s.detectedAt.IsZero() || at.Sub(s.detectedAt) >= s.opts.DetectEvery) {
		if err := s.detect(ctx, at); err != nil {
			return "detecting dialects: " + err.Error()
		}
	}
	return s.noPromQL
}

// detectBackend reads the server's build info once (Client.DetectBackend)
// and names the backend in the server's status; until the server answers
// it is asked again at every refresh. It returns the error of a request
// the server did not answer: a silent server is given up at once, as
// runQueries gives it up, at the cost of one timeout per refresh.
func (s *Source) detectBackend(ctx context.Context) error {
	if s.backendRead {
		return nil
	}
	b, err := s.client.DetectBackend(ctx)
	if err != nil {
		if errors.Is(err, errNoAnswer) {
			return err
		}
		return nil
	}
	s.backendRead = true
	s.mu.Lock()
	s.server.Backend = b.String()
	s.answered = s.opts.Clock()
	s.mu.Unlock()
	s.opts.Logger.Info("prometheus backend", "url", s.client.URL(), "backend", b.String())
	return nil
}

// Backend is the server's backend as its build info names it
// ("victoriametrics 1.79.5"; "" before the server answered).
func (s *Source) Backend() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.server.Backend
}

// giveUp fails every query of e and its clock query with err.
func (e *evaluation) giveUp(err error) {
	e.results = make([]queryResult, len(e.queries))
	for i := range e.results {
		e.results[i].err = err
	}
	e.clock.err = err
}

// runQueries runs e's queries and the clock query concurrently, at most
// Concurrency of the queries at a time, into e.results and e.clock. When a
// query fails without an answer from the server (a timeout, a refused
// connection) and nothing has answered since the refresh began, the
// server is taken as silent and the queries still running or waiting are
// given up at once, so a frozen server costs a refresh one query timeout,
// not one per wave of Concurrency queries.
func (s *Source) runQueries(ctx context.Context, e *evaluation) {
	e.results = make([]queryResult, len(e.queries))
	qctx, giveUp := context.WithCancelCause(ctx)
	defer giveUp(nil)
	began := s.opts.Clock()
	silent := func(r queryResult) {
		var apiErr *APIError
		if r.err == nil || errors.As(r.err, &apiErr) || ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		quiet := s.answered.Before(began)
		s.mu.Unlock()
		if quiet {
			giveUp(fmt.Errorf("given up: the server did not answer this refresh (%w)", r.err))
		}
	}
	sem := make(chan struct{}, s.opts.Concurrency)
	var wg sync.WaitGroup
	wg.Go(func() { e.clock = s.query(qctx, s.clockQuery, e.from, e.at); silent(e.clock) })
	for i, q := range e.queries {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-qctx.Done():
				e.results[i].err = context.Cause(qctx)
				return
			}
			defer func() { <-sem }()
			if qctx.Err() != nil {
				e.results[i].err = context.Cause(qctx)
				return
			}
			// A query that failed before catches up on the steps it
			// missed (at most a backfill's worth), so its increases
			// still add up.
			qFrom := e.from
			if last, ok := s.lastOK[q.PromQL]; ok && last+s.opts.Step.Milliseconds() < e.from.UnixMilli() {
				limit := e.at.Add(-max(s.opts.Backfill, 10*s.opts.Step) / s.opts.Step * s.opts.Step)
				qFrom = time.UnixMilli(max(last+s.opts.Step.Milliseconds(), limit.UnixMilli()))
			}
			e.results[i] = s.query(qctx, q.PromQL, qFrom, e.at)
			silent(e.results[i])
		})
	}
	wg.Wait()
}

// query runs promql over the steps from from to at, or at at alone, and
// notes when the server answered (an API error is an answer too).
func (s *Source) query(ctx context.Context, promql string, from, at time.Time) queryResult {
	var r queryResult
	if from.Before(at) {
		r.res, r.err = s.client.QueryRange(ctx, promql, from, at, s.opts.Step)
	} else {
		r.res, r.err = s.client.Query(ctx, promql, at)
	}
	var apiErr *APIError
	if r.err == nil || errors.As(r.err, &apiErr) {
		s.mu.Lock()
		s.answered = s.opts.Clock()
		s.mu.Unlock()
	}
	return r
}

// tally counts the queries answered and gathers the first failure (with
// detectErr) and the warnings.
func (e *evaluation) tally(detectErr string) {
	for i, r := range e.results {
		if r.err != nil {
			if e.firstErr == "" {
				e.firstErr = e.queries[i].Name + ": " + r.err.Error()
			}
			continue
		}
		e.ok++
		e.warnings = append(e.warnings, r.res.Warnings...)
	}
	if detectErr != "" {
		e.firstErr = strings.TrimPrefix(e.firstErr+"; "+detectErr, "; ")
	}
}

// readScrapeTimes sets e.scraped from the clock query's answer. Without
// it the scrape times of this evaluation are unknown: its samples are
// not stored (the running sums still take its increases, which land at
// the next evaluation with a clock, at that evaluation's true scrape
// time). Stored at the evaluation time instead, they stood up to a
// scrape interval late, and a rate over a window ending there was off by
// that interval over the window's width (TestSourceClockFails).
func (s *Source) readScrapeTimes(e *evaluation) {
	if e.clock.err != nil {
		if e.firstErr == "" {
			e.firstErr = "scrape times (up): " + e.clock.err.Error()
		}
		return
	}
	e.scraped = map[string]map[int64]int64{}
	for _, ser := range e.clock.res.Series {
		m := map[int64]int64{}
		for _, p := range ser.Points {
			if !math.IsNaN(p.V) && !math.IsInf(p.V, 0) {
				m[p.T] = int64(math.Round(p.V * 1000))
			}
		}
		e.scraped[s.targetName(ser.Labels)] = m
	}
}

// apply adds up the increase results into synthetic counters and appends
// one snapshot per target and evaluation time; it returns the series count
// per target at at.
//
// Each increase result is what the series counted since the evaluation
// one Step before (dialect.CounterExpr), so the counter is their running
// sum. The very first evaluation of the Source is a bare baseline (0), as
// a scraper's first scrape is. Later, a series new to a query's results
// counts its first increase: on a target already stored, the store gives
// it a 0 at the scrape before (model.Store's new series rule); a target
// that is new altogether gets that baseline here, one step earlier, where
// its first sample was read.
//
// A snapshot is stored at the target's newest scrape time as of the
// evaluation (scraped: the clock query's answer by target and
// evaluation), so that a rate divides what was counted between two
// scrapes by the time between them, as a scraper's does; at the
// evaluation time when the server has no up series for the target. An
// evaluation that saw no new scrape of a target adds nothing to it.
//
// A counter query that failed where it had answered at the evaluation
// before (prevEval) holds back the snapshots of this refresh of every
// target it has series of: see heldTargets.
//
// It returns the series count of each target with series at the
// evaluation at (seen) and, for targets with series only at earlier
// steps of this refresh (a backfill or a catch-up whose last step found
// them stale), the newest such step (earlier).
func (s *Source) apply(e *evaluation) (seen map[string]int, earlier map[string]int64) {
	b := batch{e: e, snaps: map[int64]map[famKey]*model.Family{}, firstIn: s.firstResultTimes(e.results)}
	fromMs := e.from.UnixMilli()
	var key []byte
	for qi, r := range e.results {
		if r.err != nil {
			continue
		}
		q := e.queries[qi]
		for _, ser := range r.res.Series {
			target := s.targetName(ser.Labels)
			ls := ser.Labels.Without(append([]string{"__name__"}, s.opts.By...)...)
			if le, ok := ls.Get("le"), ls.Has("le"); ok && strings.HasSuffix(q.Name, "_bucket") {
				ls, ok = scaleLe(ls, le, q)
				if !ok {
					continue
				}
			}
			if q.Kind == Level {
				for _, p := range ser.Points {
					if !math.IsNaN(p.V) && p.T >= fromMs {
						b.add(p.T, target, qi, ls, p.V)
					}
				}
				continue
			}
			key = append(append(append(key[:0], q.Name...), 0xff), target...)
			key = ls.AppendKey(append(key, 0xff))
			s.integrate(&b, string(key), qi, target, ls, ser.Points)
		}
	}
	held := s.heldTargets(e)
	s.forgetIntegrals(e.at.UnixMilli())
	return s.storeSnapshots(e, b.snaps, held)
}

// famKey is a family of a target's snapshot. Queries that yield one flat
// series name (a _bucket series read with two le scales) share its
// family; their series differ by le_scale.
type famKey struct {
	target string
	name   string
}

// batch gathers the samples of a refresh into families by evaluation
// time and target.
type batch struct {
	e       *evaluation
	snaps   map[int64]map[famKey]*model.Family
	firstIn map[string]int64 // the first evaluation each target has a result at in the refresh
}

// add adds a sample of query q's family of target at evaluation t.
func (b *batch) add(t int64, target string, q int, ls model.Labels, v float64) {
	byT := b.snaps[t]
	if byT == nil {
		byT = map[famKey]*model.Family{}
		b.snaps[t] = byT
	}
	k := famKey{target, b.e.queries[q].Name}
	f := byT[k]
	if f == nil {
		typ := model.Counter
		if b.e.queries[q].Kind == Level {
			typ = model.Gauge
		}
		f = &model.Family{Name: b.e.queries[q].Name, Type: typ}
		byT[k] = f
	}
	f.Samples = append(f.Samples, model.Sample{Labels: ls, Value: v})
}

// firstResultTimes returns the first evaluation each target has a result
// at in results.
func (s *Source) firstResultTimes(results []queryResult) map[string]int64 {
	firstIn := map[string]int64{}
	for _, r := range results {
		if r.err != nil {
			continue
		}
		for _, ser := range r.res.Series {
			if len(ser.Points) == 0 {
				continue
			}
			target := s.targetName(ser.Labels)
			if t, ok := firstIn[target]; !ok || ser.Points[0].T < t {
				firstIn[target] = ser.Points[0].T
			}
		}
	}
	return firstIn
}

// stored reports whether the target has a sample before evaluation t.
func (s *Source) stored(b *batch, target string, t int64) bool {
	if f, ok := s.firstEval[target]; ok && f < t {
		return true
	}
	return b.firstIn[target] < t
}

// integrate adds the increases of one series of increase query qi (its
// integral's key, its target and labels) to its running sum, and the sums
// at the refresh's evaluation times to b.
func (s *Source) integrate(b *batch, key string, qi int, target string, ls model.Labels, points []model.Point) {
	e := b.e
	q := e.queries[qi]
	fromMs, stepMs := e.from.UnixMilli(), s.opts.Step.Milliseconds()
	st := s.integ[key]
	for _, p := range points {
		// An increase is never negative; NaN or ±Inf (a broken
		// exporter, a division in a recording rule) would poison
		// the running sum forever: no sample.
		if math.IsNaN(p.V) || math.IsInf(p.V, 0) || p.V < 0 {
			continue
		}
		switch {
		case st != nil && p.T <= st.t:
			continue
		case st != nil:
			st.v += p.V
			st.t = p.T
		case e.first && p.T == fromMs:
			// What it counted before the Source's first look.
			st = &integral{t: p.T, promql: q.PromQL, target: target}
			s.integ[key] = st
		default:
			if !s.stored(b, target, p.T) {
				// A new target: its baseline, where its first
				// sample was read.
				b.add(p.T-stepMs, target, qi, ls, 0)
			}
			st = &integral{t: p.T, v: p.V, promql: q.PromQL, target: target}
			s.integ[key] = st
		}
		if p.T >= fromMs {
			// Steps a failed query catches up on are counted,
			// not stored: the store already holds those times.
			b.add(p.T, target, qi, ls, st.v)
		}
	}
}

// heldTargets returns the targets whose snapshots this refresh holds
// back. A counter query that failed leaves its series without a value at
// this evaluation; the step it missed is counted when it catches up.
// Stored without them, a target's window starting here would see those
// series start one scrape late yet be divided by the target's whole span
// (a quarter low over 4 steps); with their last value standing here, a
// value counted a scrape earlier stood at this scrape's time, a step high
// over a window starting here and low over one ending here
// (TestSourceQueryFailsHoldsTarget: 6/s for 3/s), and a query failing
// refresh after refresh read as a flat counter, 0/s where nothing was
// known. So, on a query's first failure, the targets it has series of
// store nothing of this refresh, as when the scrape times are unknown:
// their other increases land at the next stored evaluation. A query
// failing again no longer holds them back (one slow query must not
// freeze every target): its series are absent until it answers, and the
// server's status says it failed.
func (s *Source) heldTargets(e *evaluation) map[string]bool {
	held := map[string]bool{}
	failing := map[string]bool{}
	for qi, r := range e.results {
		if q := e.queries[qi]; r.err != nil && q.Kind == Increase && e.prevEval > 0 && s.lastOK[q.PromQL] >= e.prevEval {
			failing[q.PromQL] = true
		}
	}
	if len(failing) > 0 {
		for _, st := range s.integ {
			if failing[st.promql] {
				held[st.target] = true
			}
		}
	}
	return held
}

// forgetIntegrals forgets the integrals not updated for the store's whole
// history before atMs.
func (s *Source) forgetIntegrals(atMs int64) {
	horizon := atMs - int64(s.store.Config().History)*s.opts.Step.Milliseconds()
	for k, st := range s.integ {
		if st.t < horizon {
			delete(s.integ, k)
		}
	}
}

// storeSnapshots appends the snapshots of snaps in time order, but those
// of held targets and all when the scrape times are unknown; it returns
// apply's seen and earlier.
func (s *Source) storeSnapshots(e *evaluation, snaps map[int64]map[famKey]*model.Family, held map[string]bool) (seen map[string]int, earlier map[string]int64) {
	atMs, stepMs := e.at.UnixMilli(), s.opts.Step.Milliseconds()
	times := make([]int64, 0, len(snaps))
	for t := range snaps {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	seen, earlier = map[string]int{}, map[string]int64{}
	for _, t := range times {
		for target, sn := range targetSnapshots(snaps[t], t) {
			if t == atMs {
				seen[target] = sn.SeriesCount()
			} else {
				earlier[target] = t // times ascend: the newest wins
			}
			// e.scraped is nil when the clock query failed: nothing is stored.
			if e.scraped == nil || held[target] {
				continue
			}
			st := scrapeTime(e.scraped[target], t, stepMs)
			if last, ok := s.lastStored[target]; ok && st <= last || st < 0 {
				continue // no new scrape that worked since the last evaluation
			}
			sn.Time = time.UnixMilli(st)
			sort.Slice(sn.Families, func(i, j int) bool { return sn.Families[i].Name < sn.Families[j].Name })
			s.appendSnapshot(target, sn)
			s.lastStored[target] = st
			if _, ok := s.firstEval[target]; !ok {
				s.firstEval[target] = t
			}
		}
	}
	for target := range seen {
		delete(earlier, target)
	}
	return seen, earlier
}

// targetSnapshots groups the families of evaluation t by target.
func targetSnapshots(fams map[famKey]*model.Family, t int64) map[string]*model.Snapshot {
	byTarget := map[string]*model.Snapshot{}
	for k, f := range fams {
		sn := byTarget[k.target]
		if sn == nil {
			sn = &model.Snapshot{Target: k.target, Time: time.UnixMilli(t)}
			byTarget[k.target] = sn
		}
		sn.Families = append(sn.Families, *f)
	}
	return byTarget
}

// appendSnapshot appends a target's snapshot to the store, noting what
// its series caps refused.
func (s *Source) appendSnapshot(target string, sn *model.Snapshot) {
	if res := s.store.Append(sn); res.Dropped > 0 {
		if s.capped == nil {
			s.capped = map[string]model.AppendResult{}
		}
		s.capped[target] = res
	} else {
		delete(s.capped, target)
	}
}

// scrapeTime is where the samples of evaluation t are stored: the target's
// newest scrape time then; for a new target's baseline, one step before
// its first evaluation, that evaluation's scrape time less a step; t
// itself when the server has no up series for the target.
func scrapeTime(byEval map[int64]int64, t, stepMs int64) int64 {
	if st, ok := byEval[t]; ok {
		return st // -1000: the target's newest scrape failed
	}
	if st, ok := byEval[t+stepMs]; ok && st >= 0 {
		return st - stepMs
	}
	return t
}

// targetName joins the values of the By labels with "/".
func (s *Source) targetName(ls model.Labels) string {
	parts := make([]string, len(s.opts.By))
	for i, l := range s.opts.By {
		parts[i] = ls.Get(l)
	}
	name := strings.Join(parts, "/")
	if strings.Trim(name, "/") == "" {
		return "(no " + strings.Join(s.opts.By, ",") + ")"
	}
	return safetext.Terminal(name)
}

func (s *Source) setStatuses(at time.Time, took time.Duration, nq, ok int, firstErr string, warnings []string, seen map[string]int, earlier map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := &s.server
	wasUp, first := sv.Up, sv.Scrapes == 0
	sv.Scrapes++
	sv.LastScrape = at
	sv.ScrapeDuration = took
	sv.Series = 0
	for _, n := range seen {
		sv.Series += n
	}
	failed := nq - ok
	switch {
	case ok == 0 && (nq > 0 || firstErr != ""):
		sv.Up = false
		sv.Failures++
		sv.LastError = safetext.Terminal(firstErr)
	case nq == 0:
		// auto found no dialect's families (yet).
		sv.Up = true
		sv.LastSuccess = at
		sv.LastError = "no family of a known dialect matches the selector (dialects are detected again every " + s.opts.DetectEvery.String() + ")"
	case failed > 0:
		sv.Up = true
		sv.LastSuccess = at
		sv.LastError = safetext.Terminal(fmt.Sprintf("%d of %d queries failed (their signals are stale): %s", failed, nq, firstErr))
	case firstErr != "":
		sv.Up = true
		sv.LastSuccess = at
		sv.LastError = safetext.Terminal(firstErr)
	default:
		sv.Up = true
		sv.LastSuccess = at
		sv.LastError = ""
		if len(warnings) > 0 {
			sv.LastError = safetext.Terminal("warning: " + strings.Join(warnings, "; "))
		}
	}
	target := func(name string) *model.TargetStatus {
		ts := s.targets[name]
		if ts == nil {
			ts = &model.TargetStatus{Name: name, URL: s.server.URL, Dialect: "prometheus-api"}
			if len(s.opts.By) > 1 {
				// --by job,instance: each instance is a target and the
				// first label its layer, so the dashboard folds the
				// replicas of a job into one row with a drill-down.
				ts.Layer, _, _ = strings.Cut(name, "/")
			}
			s.targets[name] = ts
		}
		return ts
	}
	// A target with series at earlier steps of this refresh only (its
	// newest scrape failed, so the evaluation at found its series stale)
	// is a target all the same: the store holds its data. Down below,
	// read up to its newest step. Left out, analyze --prometheus listed
	// no status for a target its rows and chains came from (seen beside
	// a CPU hog: --by job,instance without app's instance).
	for name, t := range earlier {
		ts := target(name)
		if last := time.UnixMilli(t); last.After(ts.LastSuccess) {
			ts.LastSuccess = last
		}
	}
	for name, n := range seen {
		ts := target(name)
		ts.Up, ts.LastError, ts.LastSuccess, ts.Series = true, "", at, n
		// Read under refreshMu, which Refresh holds around this call.
		ts.DroppedSeries, ts.SeriesCap = 0, nil
		if res, ok := s.capped[name]; ok {
			c := res.Cap
			ts.DroppedSeries, ts.SeriesCap = res.Dropped, &c
		}
	}
	for name, ts := range s.targets {
		ts.Scrapes++
		ts.LastScrape = at
		ts.ScrapeDuration = took
		if _, ok := seen[name]; ok {
			continue
		}
		ts.Up = false
		ts.Failures++
		ts.Series = 0
		if ok == 0 {
			ts.LastError = "prometheus: " + sv.LastError
		} else {
			ts.LastError = "no series in the latest query results"
		}
	}
	log := s.opts.Logger
	switch {
	case !sv.Up && (wasUp || first):
		log.Warn("prometheus down", "url", sv.URL, "err", sv.LastError)
	case sv.Up && !wasUp:
		log.Info("prometheus up", "url", sv.URL, "targets", len(seen))
	}
}

// scaleLe rescales the le label of a bucket series into seconds
// (Query.LeScale, as Translate scales bucket bounds) and formats it as the
// store does, and marks the series of a split query; ok is false for a
// bound that is not a number.
func scaleLe(ls model.Labels, le string, q Query) (model.Labels, bool) {
	b, err := model.ParseFloat(le)
	if err != nil || math.IsNaN(b) {
		return nil, false
	}
	if q.LeScale != 0 && q.LeScale != 1 && !math.IsInf(b, 0) {
		b *= q.LeScale
	}
	ls = ls.With("le", model.FormatFloat(b))
	if q.Split {
		ls = ls.With(LabelLeScale, model.FormatFloat(q.LeScale))
	}
	return ls, true
}

// detect asks the server which dialects' families it holds per target
// (dialect.Translator.DetectQuery) and rebuilds the queries when a dialect
// is new. A detected dialect without PromQL is an error naming it, never
// skipped silently; the others are queried.
func (s *Source) detect(ctx context.Context, at time.Time) error {
	tr := s.opts.Translator
	matchers, _ := selectorMatchers(s.opts.Selector)
	res, err := s.client.Query(ctx, tr.DetectQuery(dialect.QueryOptions{By: s.opts.By, Matchers: matchers}), at)
	if err != nil {
		return err
	}
	s.detectedAt = at
	names := map[string][]string{}
	for _, ser := range res.Series {
		t := s.targetName(ser.Labels)
		names[t] = append(names[t], ser.Labels.Get("__name__"))
	}
	found := slices.Clone(s.detected)
	for _, ns := range names {
		ds := tr.DetectNames(ns)
		if len(ds) == 0 && holdsServiceFamily(ns) {
			// A scraped target no dialect recognises is stored as it
			// is, its service shapes (promhttp, OpenTelemetry) read by
			// the services view: native's queries read them as they are.
			ds = []string{dialect.NameNative}
		}
		for _, d := range ds {
			if !slices.Contains(found, d) {
				found = append(found, d)
			}
		}
	}
	if len(found) == len(s.detected) {
		return nil
	}
	// Keep the translator's order, so queries do not change with the
	// order targets were listed in.
	var ordered []string
	for _, n := range tr.Names() {
		if slices.Contains(found, n) {
			ordered = append(ordered, n)
		}
	}
	var usable, missing []string
	for _, n := range ordered {
		if tr.HasQueries(n) {
			usable = append(usable, n)
		} else {
			missing = append(missing, n)
		}
	}
	var qs []Query
	if len(usable) > 0 {
		if qs, err = BuildDialectQueries(tr, usable, s.opts.By, s.opts.Selector, s.opts.Step); err != nil {
			return err
		}
	}
	s.detected = ordered
	keep := map[string]bool{}
	for _, q := range qs {
		keep[q.PromQL] = true
	}
	maps.DeleteFunc(s.lastOK, func(pq string, _ int64) bool { return !keep[pq] })
	s.mu.Lock()
	s.queries = qs
	s.server.Dialect = dialectNames(usable)
	s.mu.Unlock()
	s.opts.Logger.Info("prometheus dialects", "detected", strings.Join(ordered, "+"))
	s.noPromQL = ""
	if len(missing) > 0 {
		s.noPromQL = fmt.Sprintf("dialect %s found but has no PromQL queries: its families are not read (scrape those targets instead)", strings.Join(missing, ", "))
	}
	return nil
}

// holdsServiceFamily reports whether flat series names (as the server
// lists them) include a service-side family (model.ServiceFamilies).
func holdsServiceFamily(names []string) bool {
	for _, n := range names {
		for _, suf := range []string{"", "_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(n, suf); ok && slices.Contains(model.ServiceFamilies, b) {
				return true
			}
		}
	}
	return false
}
