package scrape

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/internal/safetext"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/common/config"

	"github.com/retrytop/retrytop/model"
)

// DefaultBodyLimit caps a scrape's body (after decompression): 32 MiB.
const DefaultBodyLimit = 32 << 20

// DefaultAcceptHeader asks for the Prometheus text format first, then
// OpenMetrics 1.0 and 0.0.1, with UTF-8 names unescaped. Prometheus itself
// prefers OpenMetrics; retrytop does not because expfmt's OpenMetrics parser
// (v0.73) runs at about 0.05 MB/s against about 40 MB/s for the text format
// (see ExpfmtParser.MaxOpenMetricsBytes). Servers that can only speak
// OpenMetrics still get a match.
const DefaultAcceptHeader = "text/plain;version=0.0.4;escaping=allow-utf-8;q=0.5," +
	"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.4," +
	"application/openmetrics-text;version=0.0.1;q=0.3," +
	"*/*;q=0.1"

// DefaultUserAgent is sent when Options.UserAgent is empty.
const DefaultUserAgent = "retrytop"

// DefaultMaxConcurrent bounds the scrapes in flight when
// Options.MaxConcurrent is zero. Scrapes mostly wait on the network, so it
// is well above the core count; it bounds goroutines, sockets in use and
// body buffers when there are hundreds or thousands of targets.
const DefaultMaxConcurrent = 64

// Options tune a Scraper. The zero value is usable.
type Options struct {
	// Clock stamps snapshots and statuses (default: SteadyClock over
	// time.Now, so wall-clock steps do not reorder scrapes). Scrape
	// durations are measured on the monotonic clock regardless.
	Clock func() time.Time
	// BodyLimit caps a body after decompression (default DefaultBodyLimit).
	BodyLimit int64
	// Memory bounds the bytes all scrapes hold at once, bodies and their
	// parse (nil: a budget of DefaultScrapeMemory); the largest scrape is
	// shed when it runs out (MemoryBudget).
	Memory *MemoryBudget
	// Parser reads bodies (default: an ExpfmtParser with line caches of
	// the scraper's own).
	Parser expo.Parser
	// Transport, if set, carries every target's requests instead of the
	// network: an in-process source such as sim's virtual-time stack
	// (sim.Stack.Transport). The targets' auth headers still apply;
	// their TLS and proxy settings do not.
	Transport http.RoundTripper
	// Filter selects the families kept from every scrape (nil: all); see
	// Parser for its contract.
	Filter func(name string) bool
	// Logger receives target state changes (nil: no logging). Messages
	// carry sanitised errors and URLs without credentials.
	Logger *slog.Logger
	// UserAgent is sent with every request (default DefaultUserAgent).
	UserAgent string
	// AcceptHeader overrides DefaultAcceptHeader.
	AcceptHeader string
	// MaxConcurrent bounds the scrapes in flight across all targets, Run
	// and ScrapeOnce together (default DefaultMaxConcurrent). Run keeps
	// this many worker goroutines whatever the number of targets. A
	// target whose scrape is due while all slots are busy waits for one;
	// a target still waiting or still being scraped when its next scrape
	// is due skips that tick.
	MaxConcurrent int
	// Translate, when set, rewrites every parsed snapshot before it is
	// stored: a dialect turning an emitter's families into the metric
	// contract (dialect's Translator.Translate). dialect is the
	// target's Target.Dialect ("" to detect); it returns the snapshot to
	// store and the dialect name(s) shown in the target's status (the
	// snapshot's SetAside becomes the status' DialectsSetAside). An error
	// (an unknown dialect) fails the scrape with that message. It is called
	// for one target at a time, in scrape order, and may be called for
	// different targets concurrently.
	Translate func(dialect string, snap *model.Snapshot) (*model.Snapshot, string, error)
	// OnScrape, when set, is called after every scrape that was not
	// abandoned, from the goroutine that scraped (never for one target
	// twice at once): with the body exactly as served (after gzip) and its
	// Content-Type when the fetch succeeded, whether or not it then
	// parses; with err (sanitised, no secrets) when the fetch failed. body
	// is valid only during the call. A recorder (dump) hooks in
	// here.
	OnScrape func(target string, at time.Time, body []byte, contentType string, err error)
	// ParseEvery, when positive, makes the scraper parse a target's body
	// only at its first scrape, every ParseEvery-th scrape after, and
	// after a scrape that failed; the other bodies are only checked to be
	// an exposition (a web page or a JSON document still fails the
	// scrape), handed to OnScrape and not stored, and the target's status
	// keeps the series count of its newest parse. For a recorder, which
	// writes bodies and reads none (0: parse every body).
	ParseEvery int
	// NoStore makes a parse only check the body and count its series:
	// nothing is appended to the store, so no series cap applies. For a
	// recorder, whose store nobody reads (on 100 targets of 2,000 series
	// its series were half of record's heap).
	NoStore bool
	// OnForget, when set, is called with the name of a target that left
	// the set (SetTargets), after its history was dropped from the store:
	// state kept per target elsewhere (a dialect Translator's) can go too.
	OnForget func(target string)
	// Discover, when set, runs in its own goroutine while Run runs and
	// calls set with every new target set (discovery re-reading
	// file_sd files); set is SetTargets. It must return when ctx ends.
	Discover func(ctx context.Context, set func([]Target))
}

// Scraper scrapes many targets into a store. Each target has its own
// interval, timeout and phase; a scheduler hands due targets to at most
// Options.MaxConcurrent workers, so a dead or slow target delays another
// only when that many are slow at once, and goroutines stay bounded with
// thousands of targets. Targets with identical HTTP settings share one
// HTTP client (and its connection pool), as a Prometheus scrape pool
// does. The target set can change while it runs (SetTargets). It is safe
// for concurrent use.
type Scraper struct {
	opts    Options
	store   *model.Store
	updates chan struct{}
	// changed wakes Run's scheduler after SetTargets.
	changed chan struct{}
	// slots holds one token per scrape in flight.
	slots chan struct{}

	bufMu sync.Mutex
	bufs  []*scrapeBuf // idle body buffers, reused last-in first-out

	mu      sync.Mutex // guards targets, clients, running and every target's status, removed and cancel
	targets []*scrapeTarget
	clients []*sharedClient
	running bool
}

// scrapeTarget is one target of the current set.
type scrapeTarget struct {
	t       Target
	safeURL string
	secrets []string
	client  *sharedClient
	cfgErr  error // set when the target can never be scraped
	offset  time.Duration
	// gzip: ask for a compressed body (Accept-Encoding). Not on loopback,
	// where compression buys no bandwidth and costs both processes CPU.
	gzip bool
	// The request's parts that never change, made once (prepare): the
	// URL parsed, its Host, and the headers (a copy goes with each
	// request). reqURL is nil when the URL does not make a request.
	reqURL    *url.URL
	reqHost   string
	reqHeader http.Header

	// mu serialises scrapes of this target (Run and ScrapeOnce may
	// overlap), which keeps its snapshots in time order; it guards fetched.
	mu      sync.Mutex
	fetched bool // the current scrape read a body (OnScrape saw it)
	// unparsed counts the scrapes since the newest parse, -1 until a
	// parse succeeds (Options.ParseEvery).
	unparsed int
	// busy is set while Run has the target queued or being scraped, so
	// a slow target skips ticks instead of piling up in the queue.
	busy atomic.Bool

	// Guarded by Scraper.mu.
	status   model.TargetStatus
	lateRun  bool               // its newest tick was skipped (Scraper.late)
	removed  bool               // no longer in the set: never scraped again
	released bool               // its client reference was given up
	cancel   context.CancelFunc // of the scrape in flight, if any
}

// sharedClient is one HTTP client and the number of targets using it.
type sharedClient struct {
	cfg    config.HTTPClientConfig
	client *http.Client
	refs   int
}

// scrapeBuf is a body buffer and gzip reader, owned by one scrape at a
// time: there are at most MaxConcurrent of them, not one per target.
type scrapeBuf struct {
	buf []byte
	gz  *gzip.Reader
}

// NewScraper prepares targets for scraping into store (nil: a store with
// model.DefaultStoreConfig). Target defaults are filled in as by
// ParseTarget, except HTTP, which is used as given. A target that cannot be scraped at all (bad URL,
// duplicate name, unusable TLS or auth settings) is kept and reported down
// with the reason in its status, so one bad target never prevents the
// others from running.
func NewScraper(targets []Target, store *model.Store, opts Options) *Scraper {
	if opts.Clock == nil {
		opts.Clock = SteadyClock(time.Now, MonotonicSince())
	}
	if opts.BodyLimit <= 0 {
		opts.BodyLimit = DefaultBodyLimit
	}
	if opts.Memory == nil {
		opts.Memory = NewMemoryBudget(DefaultScrapeMemory)
	}
	if opts.Parser == nil {
		opts.Parser = expo.ExpfmtParser{Lines: expo.NewLineCaches(0)} // the scraper owns its targets' line caches
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	if opts.AcceptHeader == "" {
		opts.AcceptHeader = DefaultAcceptHeader
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if store == nil {
		store = model.NewStore(model.StoreConfig{})
	}
	s := &Scraper{
		opts:    opts,
		store:   store,
		updates: make(chan struct{}, 1),
		changed: make(chan struct{}, 1),
		slots:   make(chan struct{}, opts.MaxConcurrent),
	}
	s.SetTargets(targets)
	return s
}

// SetTargets replaces the target set, also while Run runs. A target whose
// name and settings are unchanged keeps its schedule and status; one that
// is new is scheduled at its phase; one that is gone stops (a scrape of it
// in flight is abandoned) and leaves the statuses. A kept target's history
// goes on; a removed one's is dropped from the store (and Options.OnForget
// called), or its rows would stay on screen forever and the store would
// grow with every churned replica. Names are matched as given,
// so a target named by its URL is replaced when its URL changes. Bad and
// duplicate targets are kept and reported down as by NewScraper.
func (s *Scraper) SetTargets(targets []Target) {
	s.mu.Lock()
	old := make(map[string]*scrapeTarget, len(s.targets))
	for _, st := range s.targets {
		if st.cfgErr == nil {
			old[st.t.Name] = st
		} else {
			s.drop(st) // cheap to rebuild, and its error may have been fixed
		}
	}
	next := make([]*scrapeTarget, 0, len(targets))
	seen := make(map[string]bool, len(targets))
	for i, t := range targets {
		if nt, err := t.normalize(); err == nil && !seen[nt.Name] {
			if prev := old[nt.Name]; prev != nil && sameTarget(prev.t, nt) {
				delete(old, nt.Name)
				seen[nt.Name] = true
				next = append(next, prev)
				continue
			}
		}
		st := &scrapeTarget{t: t, safeURL: SafeURL(t.URL), secrets: inlineSecrets(t), unparsed: -1}
		st.cfgErr = s.prepare(st, phaseSlots(len(targets)))
		if st.cfgErr == nil && seen[st.t.Name] {
			st.cfgErr = errors.New("duplicate name; name each target with name=URL")
			s.release(st)
		}
		seen[st.t.Name] = true
		if st.t.Name == "" {
			st.t.Name = fmt.Sprintf("target-%d", i+1)
		}
		if prev := old[st.t.Name]; prev != nil && st.cfgErr == nil {
			st.status = prev.status // same name, new settings: keep its health and counts
		}
		st.status.Name, st.status.URL = st.t.Name, st.safeURL
		st.status.Layer, st.status.Dialect = safetext.Terminal(st.t.Layer), safetext.Terminal(st.t.Dialect)
		if st.cfgErr != nil {
			st.status.Up = false
			st.status.LastError = st.errorText(st.cfgErr)
		}
		next = append(next, st)
	}
	for name, st := range old {
		s.drop(st)
		if !seen[name] {
			// Gone, not renamed or re-configured: its history goes too.
			s.store.Forget(name)
			if s.opts.OnForget != nil {
				s.opts.OnForget(name)
			}
		}
	}
	s.targets = next
	s.mu.Unlock()
	notify(s.changed)
	notify(s.updates)
}

// sameTarget reports whether a and b (both normalised) scrape the same way.
func sameTarget(a, b Target) bool {
	return a.Name == b.Name && a.URL == b.URL && a.Layer == b.Layer && a.Dialect == b.Dialect &&
		a.Interval == b.Interval && a.Timeout == b.Timeout && reflect.DeepEqual(a.HTTP, b.HTTP)
}

// drop takes st out of service: a scrape in flight is cancelled and its
// client released. s.mu is held.
func (s *Scraper) drop(st *scrapeTarget) {
	st.removed = true
	if st.cancel != nil {
		st.cancel()
	}
	s.release(st)
}

// prepare normalises the target and finds or builds its HTTP client;
// slots is phaseSlots of the set it is in. s.mu is held.
func (s *Scraper) prepare(st *scrapeTarget, slots int) error {
	t, err := st.t.settle() // the status names the target
	if err != nil {
		if checkName(st.t.Name) != nil {
			st.t.Name = ""
		}
		return err
	}
	st.t = t
	st.offset = jitter(t.Name, t.Interval, slots)
	st.gzip = !loopback(t.URL)
	st.reqURL, st.reqHost, st.reqHeader = nil, "", nil
	if req, err := http.NewRequest(http.MethodGet, t.URL, nil); err == nil {
		st.reqURL, st.reqHost = req.URL, req.Host
		h := http.Header{}
		h.Set("Accept", s.opts.AcceptHeader)
		if st.gzip {
			h.Set("Accept-Encoding", "gzip")
		} else {
			// Set, or the transport would ask for gzip itself.
			h.Set("Accept-Encoding", "identity")
		}
		h.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(t.ScrapeTimeout().Seconds(), 'f', -1, 64))
		st.reqHeader = h
	}
	cfg := t.HTTP
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("HTTP settings: %w", err)
	}
	// Validate fills in derived fields, so compare validated settings.
	for _, c := range s.clients {
		if reflect.DeepEqual(c.cfg, cfg) {
			c.refs++
			st.client = c
			return nil
		}
	}
	client, err := config.NewClientFromConfig(cfg, t.Name, config.WithUserAgent(s.opts.UserAgent))
	if err != nil {
		return fmt.Errorf("HTTP settings: %w", err)
	}
	if s.opts.Transport != nil {
		client.Transport = s.opts.Transport
	}
	st.client = &sharedClient{cfg: cfg, client: client, refs: 1}
	s.clients = append(s.clients, st.client)
	return nil
}

// release gives up st's client, closing it when no target uses it any
// more. s.mu is held.
func (s *Scraper) release(st *scrapeTarget) {
	c := st.client
	if c == nil || st.released {
		return
	}
	st.released = true // st.client stays: a scrape in flight still reads it
	if c.refs--; c.refs > 0 {
		return
	}
	c.client.CloseIdleConnections()
	for i, x := range s.clients {
		if x == c {
			s.clients = append(s.clients[:i], s.clients[i+1:]...)
			break
		}
	}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// phaseGroup is how many targets share a scrape phase, on average. Targets
// of one phase are scraped in one burst: the process wakes once for them
// (one timer, workers and HTTP goroutines already running) instead of once
// per target, which on an idle dashboard is most of the scheduler's cost.
// Prometheus spreads every target over the interval so that a big fleet
// does not hit the network at once; groups of 16 keep that for fleets
// (1,000 targets: 63 phases) and wake a small set once per interval.
const phaseGroup = 16

// phaseSlots is the number of phases a set of n targets is spread over.
func phaseSlots(n int) int {
	return max(1, (n+phaseGroup-1)/phaseGroup)
}

// jitter is the target's fixed phase within its interval: one of slots
// phases, chosen by a hash of its name, so that targets keep their phase
// across runs, and a base from the interval alone, so that a small set's
// one phase is not on the second (nor on the bin edges of a view).
func jitter(name string, interval time.Duration, slots int) time.Duration {
	if interval <= 0 {
		return 0
	}
	slots = max(slots, 1)
	base := fnv.New64a()
	base.Write([]byte(interval.String()))
	h := fnv.New64a()
	h.Write([]byte(name))
	slot := time.Duration(h.Sum64() % uint64(slots))
	return (time.Duration(base.Sum64()%uint64(interval)) + slot*(interval/time.Duration(slots))) % interval
}

// loopback reports whether rawURL names this host (localhost, 127.0.0.0/8,
// ::1): its bodies are asked for uncompressed.
func loopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

// Store returns the store scrapes are appended to.
func (s *Scraper) Store() *model.Store { return s.store }

// Updates returns a channel that receives after every scrape, successful or
// not, and after every change of the target set, without blocking the
// scraper: a reader that falls behind sees one pending notification, not a
// backlog.
func (s *Scraper) Updates() <-chan struct{} { return s.updates }

// Statuses returns a copy of every target's status, in target order.
func (s *Scraper) Statuses() []model.TargetStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]model.TargetStatus, len(s.targets))
	for i, st := range s.targets {
		out[i] = st.status
	}
	return out
}

// active returns the targets that can be scraped, in target order.
func (s *Scraper) active() []*scrapeTarget {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*scrapeTarget, 0, len(s.targets))
	for _, st := range s.targets {
		if st.cfgErr == nil {
			out = append(out, st)
		}
	}
	return out
}

// Run scrapes every target at its interval until ctx is done, then returns
// nil once all scrapes have stopped. Each target's first scrape waits for
// its jitter offset within the interval. Targets set with SetTargets (or
// by Options.Discover) while it runs are picked up at once. Calling Run
// while it runs is an error.
func (s *Scraper) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("scrape: Scraper.Run is already running")
	}
	s.running = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
	}()

	var wg sync.WaitGroup
	if s.opts.Discover != nil {
		wg.Go(func() { s.opts.Discover(ctx, s.SetTargets) })
	}
	work := make(chan *scrapeTarget)
	for range s.opts.MaxConcurrent {
		wg.Go(func() {
			for st := range work {
				s.scrape(ctx, st)
				st.busy.Store(false)
			}
		})
	}
	s.schedule(ctx, work)
	close(work)
	wg.Wait()
	s.mu.Lock()
	for _, c := range s.clients {
		c.client.CloseIdleConnections()
	}
	s.mu.Unlock()
	return nil
}

// due is one target's next scrape time in the scheduler's heap.
type due struct {
	at time.Time
	st *scrapeTarget
}

type dueHeap []due

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(due)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// firstDue is when a target first scrapes after now: at its phase within
// the interval on the wall clock, so phases hold across restarts.
func firstDue(st *scrapeTarget, now time.Time) time.Time {
	interval := st.t.Interval
	wait := (st.offset - time.Duration(now.UnixNano()%int64(interval)) + interval) % interval
	return now.Add(wait)
}

// schedule runs Run's scheduler until ctx ends: one timer for the earliest
// due target, a queue of due targets handed to the workers in turn. A
// target already queued or being scraped when due again skips that tick:
// ticks are dropped, never queued.
func (s *Scraper) schedule(ctx context.Context, work chan<- *scrapeTarget) {
	var h dueHeap
	var ready []*scrapeTarget
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	resync := func() {
		cur := s.active()
		keep := make(map[*scrapeTarget]time.Time, len(h))
		for _, d := range h {
			keep[d.st] = d.at
		}
		now := time.Now()
		h = h[:0]
		for _, st := range cur {
			at, ok := keep[st]
			if !ok {
				at = firstDue(st, now)
			}
			h = append(h, due{at: at, st: st})
		}
		heap.Init(&h)
	}
	resync()
	for {
		if len(h) > 0 {
			timer.Reset(time.Until(h[0].at))
		} else {
			timer.Stop()
		}
		var out chan<- *scrapeTarget
		var head *scrapeTarget
		if len(ready) > 0 {
			out, head = work, ready[0]
		}
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
			resync()
		case now := <-timer.C:
			for len(h) > 0 && !h[0].at.After(now) {
				d := &h[0]
				if d.st.busy.CompareAndSwap(false, true) {
					ready = append(ready, d.st)
				} else {
					s.late(d.st)
				}
				iv := d.st.t.Interval
				d.at = d.at.Add(iv)
				if !d.at.After(now) { // missed ticks: the next one on the phase
					d.at = d.at.Add((now.Sub(d.at)/iv + 1) * iv)
				}
				heap.Fix(&h, 0)
			}
		case out <- head:
			ready[0] = nil
			ready = ready[1:]
			if len(ready) == 0 {
				ready = nil // let the backing array go
			}
		}
	}
}

// late counts a tick st skips: its previous scrape still runs, or still
// waits for a worker. The first of a run of them is logged.
func (s *Scraper) late(st *scrapeTarget) {
	s.mu.Lock()
	st.status.Late++
	first := !st.lateRun
	st.lateRun = true
	status := st.status
	s.mu.Unlock()
	notify(s.updates)
	if first {
		s.opts.Logger.Warn("scrape skipped: the previous one still runs", "target", status.Name, "interval", st.t.Interval)
	}
}

// ScrapeOnce scrapes every target once, at most Options.MaxConcurrent at
// a time, and returns their statuses in target order. A target that
// cannot be configured is not contacted and keeps its error. If ctx ends
// first, unfinished scrapes are abandoned without changing their status.
func (s *Scraper) ScrapeOnce(ctx context.Context) []model.TargetStatus {
	todo := s.active()
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(todo) {
				return
			}
			s.scrape(ctx, todo[i])
		}
	}
	// The caller is one of the workers: a single target is scraped on its
	// goroutine, whose stack has grown already, not on a new one that
	// grows its stack through the HTTP client and the parse every call.
	var wg sync.WaitGroup
	for range min(s.opts.MaxConcurrent, len(todo)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	return s.Statuses()
}

// getBuf takes an idle body buffer, the most recently used first, so that
// few buffers stay warm when scrapes rarely overlap.
func (s *Scraper) getBuf() *scrapeBuf {
	s.bufMu.Lock()
	defer s.bufMu.Unlock()
	if n := len(s.bufs); n > 0 {
		b := s.bufs[n-1]
		s.bufs = s.bufs[:n-1]
		return b
	}
	return &scrapeBuf{}
}

func (s *Scraper) putBuf(b *scrapeBuf) {
	b.release()
	s.bufMu.Lock()
	s.bufs = append(s.bufs, b)
	s.bufMu.Unlock()
}

// scrape fetches, parses and stores one target once and records its status.
func (s *Scraper) scrape(ctx context.Context, st *scrapeTarget) {
	st.mu.Lock()
	defer st.mu.Unlock()
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-s.slots }()
	s.mu.Lock()
	if st.removed {
		s.mu.Unlock()
		return
	}
	ctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	defer cancel()
	st.cancel = cancel
	s.mu.Unlock()
	// The timeout's context bounds what the scrape waits for, memory too.
	tctx, cancelTimeout := context.WithTimeout(ctx, st.t.ScrapeTimeout())
	defer cancelTimeout()
	hold := s.opts.Memory.Start(tctx, st.t.Name, cancelCause)
	defer hold.Release() // deferred first, so run last: when nothing of the scrape is held
	defer func() {
		s.mu.Lock()
		st.cancel = nil
		s.mu.Unlock()
	}()
	b := s.getBuf()
	defer s.putBuf(b)

	at := s.opts.Clock()
	start := time.Now()
	st.fetched = false
	snap, err := s.fetch(tctx, st, b, at, hold)
	dialect := st.t.Dialect
	if err == nil && snap != nil && s.opts.Translate != nil {
		var name string
		snap, name, err = s.opts.Translate(st.t.Dialect, snap)
		if err != nil {
			err = fmt.Errorf("dialect: %w", err)
		} else {
			dialect = name
		}
	}
	took := time.Since(start)
	var shed *ShedError
	if err != nil && ctx.Err() != nil && !errors.As(context.Cause(ctx), &shed) {
		return // abandoned, not failed: the caller stopped or the target was removed
	}
	if err != nil && !st.fetched && s.opts.OnScrape != nil {
		s.opts.OnScrape(st.t.Name, at, nil, "", errors.New(st.errorText(err)))
	}
	s.mu.Lock()
	// Appended under s.mu so that a target SetTargets removed (and whose
	// history it dropped) is not brought back by its last scrape.
	var res model.AppendResult
	if err == nil && snap != nil && !st.removed && !s.opts.NoStore {
		res = s.store.Append(snap)
	}
	ts := &st.status
	st.lateRun = false
	wasUp, first := ts.Up, ts.Scrapes == 0
	ts.Scrapes++
	ts.LastScrape = at
	ts.ScrapeDuration = took
	if err != nil {
		ts.Up = false
		ts.Failures++
		ts.LastError = st.errorText(err)
		ts.MemoryCap = memoryCap(err)
	} else {
		ts.Up = true
		ts.LastError = ""
		ts.LastSuccess = at
		if snap != nil { // nil: checked, not parsed (Options.ParseEvery)
			ts.Dialect = safetext.Terminal(dialect)
			ts.DialectsSetAside = nil
			for _, why := range snap.SetAside {
				ts.DialectsSetAside = append(ts.DialectsSetAside, safetext.Terminal(why))
			}
			ts.Series = snap.SeriesCount()
			ts.DroppedSeries = res.Dropped
			ts.SeriesCap, ts.MemoryCap = nil, nil
			if res.Dropped > 0 {
				c := res.Cap // a new one each time: statuses already copied keep theirs
				ts.SeriesCap = &c
			}
		}
	}
	if err != nil {
		st.unparsed = -1 // parse the next body in full
	}
	status := *ts
	s.mu.Unlock()

	notify(s.updates)

	log := s.opts.Logger
	switch {
	case err != nil && (wasUp || first):
		log.Warn("target down", "target", status.Name, "url", status.URL, "err", status.LastError)
	case err != nil:
		log.Debug("scrape failed", "target", status.Name, "err", status.LastError)
	case !wasUp:
		log.Info("target up", "target", status.Name, "url", status.URL, "series", status.Series)
	}
	if err == nil && res.Dropped > 0 {
		log.Warn("series over the store's caps dropped", "target", status.Name, "dropped", res.Dropped,
			"by_target_cap", res.Cap.ByTarget, "per_target_cap", res.Cap.PerTarget, "kept", res.Cap.Kept,
			"by_total_cap", res.Cap.ByTotal, "total_cap", res.Cap.Total, "store_kept", res.Cap.StoreKept)
	}
}

// errorText renders err for a status or log: secrets scrubbed, sanitised.
func (st *scrapeTarget) errorText(err error) string {
	return safetext.Terminal(redact(err.Error(), st.secrets))
}

// fetch performs one HTTP scrape and parses it into a snapshot stamped at;
// the snapshot is nil when Options.ParseEvery let the body go unparsed.
func (s *Scraper) fetch(ctx context.Context, st *scrapeTarget, b *scrapeBuf, at time.Time, hold *Hold) (*model.Snapshot, error) {
	name := st.t.Name
	if st.reqURL == nil {
		return nil, fmt.Errorf("GET %s: invalid request", st.safeURL)
	}
	// The request NewRequestWithContext would make, from the parts made
	// once: no URL parse and no header built per scrape.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "", nil)
	u := *st.reqURL
	req.URL, req.Host, req.Header = &u, st.reqHost, st.reqHeader.Clone()

	resp, err := st.client.client.Do(req)
	if err != nil {
		return nil, st.requestError(ctx, err)
	}
	defer func() {
		// Drain a little so the connection can be reused, then close.
		_, _ = io.CopyN(io.Discard, resp.Body, 4096)
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: server returned HTTP status %s", st.safeURL, safetext.Terminal(resp.Status))
	}
	body, err := b.readBody(resp, s.opts.BodyLimit, hold)
	if err != nil {
		if ctx.Err() != nil {
			return nil, st.requestError(ctx, err)
		}
		return nil, fmt.Errorf("GET %s: %w", st.safeURL, err)
	}
	st.fetched = true
	if s.opts.OnScrape != nil {
		s.opts.OnScrape(name, at, body, resp.Header.Get("Content-Type"), nil)
	}
	if every := s.opts.ParseEvery; every > 0 && st.unparsed >= 0 && st.unparsed < every-1 {
		// Not parsed, but still not taken for metrics when it is plainly
		// something else.
		if err := expo.NotExposition(name, body, resp.Header.Get("Content-Type")); err != nil {
			return nil, parseError(err)
		}
		st.unparsed++
		return nil, nil
	}
	// What the parse will allocate is reserved before it runs.
	if err := s.reserveParse(hold, body, resp.Header.Get("Content-Type")); err != nil {
		if ctx.Err() != nil {
			return nil, st.requestError(ctx, err) // shed or timed out waiting for memory
		}
		return nil, fmt.Errorf("GET %s: %w", st.safeURL, err)
	}
	fams, err := s.opts.Parser.Parse(name, body, resp.Header.Get("Content-Type"), s.opts.Filter)
	if ctx.Err() != nil {
		// Shed (or stopped) while parsing: its memory was given back.
		return nil, st.requestError(ctx, ctx.Err())
	}
	if err == nil {
		st.unparsed = 0
	}
	if err != nil {
		return nil, parseError(err)
	}
	return &model.Snapshot{Target: name, Time: at, Families: fams}, nil
}

// parseError words a body's parse error for the target's status, which
// names the target: its line and what is wrong.
func parseError(err error) error {
	var perr *expo.ParseError
	if errors.As(err, &perr) {
		return errors.New(perr.Detail())
	}
	return fmt.Errorf("parse: %w", err)
}

// requestError explains a failed request without repeating its URL, which
// net/http would print with the user name.
func (st *scrapeTarget) requestError(ctx context.Context, err error) error {
	var shed *ShedError
	if errors.As(context.Cause(ctx), &shed) {
		return fmt.Errorf("GET %s: %w", st.safeURL, shed)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		var wait *WaitError
		if errors.As(err, &wait) {
			return fmt.Errorf("GET %s: timed out after %s %s", st.safeURL, st.t.ScrapeTimeout(), wait.waiting())
		}
		return fmt.Errorf("GET %s: timed out after %s", st.safeURL, st.t.ScrapeTimeout())
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("GET %s: %w", st.safeURL, err)
}

var errCompressedTooLarge = errors.New("compressed body too large")

// capReader reads at most n bytes and then fails instead of ending
// quietly, so a truncated gzip stream is reported as too large.
type capReader struct {
	r io.Reader
	n int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, errCompressedTooLarge
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}

// MaxGzipRatio is the most a gzipped body may expand: text expositions
// compress 5-30 times, a decompression bomb about 1000 times. Checked once
// a body passes gzipRatioFloor.
const MaxGzipRatio = 200

const gzipRatioFloor = 1 << 20

// readBody reads the (possibly gzipped) body into the buffer, failing once
// it exceeds limit bytes after decompression or, gzipped, expands more than
// MaxGzipRatio times. Every step of the buffer's growth is reserved in h
// (nil: no budget) before it is allocated, the buffer's own size first.
// The returned slice is valid until the buffer is used again.
func (sb *scrapeBuf) readBody(resp *http.Response, limit int64, h *Hold) ([]byte, error) {
	tooLarge := func(what string) error {
		return fmt.Errorf("%s exceeds the body limit of %s", what, expo.FormatBytes(limit))
	}
	var r io.Reader
	var raw *capReader
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		if resp.ContentLength > limit {
			return nil, tooLarge(fmt.Sprintf("body of %d bytes", resp.ContentLength))
		}
		r = resp.Body
	case "gzip", "x-gzip":
		// Cap the compressed stream too: empty gzip members would let
		// an endless stream decompress to nothing.
		raw = &capReader{r: resp.Body, n: limit + 1}
		var err error
		if sb.gz == nil {
			sb.gz, err = gzip.NewReader(raw)
		} else {
			err = sb.gz.Reset(raw)
		}
		if err != nil {
			if errors.Is(err, errCompressedTooLarge) {
				return nil, tooLarge("compressed body")
			}
			return nil, fmt.Errorf("reading gzip body: %w", err)
		}
		r = sb.gz
	default:
		return nil, fmt.Errorf("unsupported Content-Encoding %q", safetext.Terminal(enc))
	}
	buf := sb.buf[:0]
	if h != nil && cap(buf) > 0 {
		if err := h.Grow(int64(cap(buf))); err != nil {
			sb.buf, buf = nil, nil // not kept: it did not fit
		}
	}
	want := int64(64 << 10)
	if resp.ContentLength > 0 && r == resp.Body {
		want = resp.ContentLength + 1
	}
	for {
		if len(buf) == cap(buf) {
			grow := max(want, int64(cap(buf))) // double, or the announced size
			grow = min(grow, limit+1-int64(cap(buf)))
			if grow <= 0 {
				return nil, tooLarge("body")
			}
			// The old buffer is live until copied: reserved again for
			// the copy, given back after.
			old := int64(cap(buf))
			if h != nil {
				if err := h.Grow(grow + old); err != nil {
					return nil, err
				}
			}
			nb := make([]byte, len(buf), old+grow)
			copy(nb, buf)
			buf, sb.buf = nb, nb
			h.giveBack(old)
			want = int64(cap(buf))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, tooLarge("body")
		}
		if raw != nil && len(buf) > gzipRatioFloor {
			if in := limit + 1 - raw.n; int64(len(buf)) > MaxGzipRatio*max(in, 1) {
				return nil, fmt.Errorf("gzip body expands more than %d times (%s from %s read): refused as a decompression bomb", MaxGzipRatio, expo.FormatBytes(int64(len(buf))), expo.FormatBytes(in))
			}
		}
		switch {
		case err == io.EOF:
			sb.buf = buf
			return buf, nil
		case errors.Is(err, errCompressedTooLarge):
			return nil, tooLarge("compressed body")
		case err != nil && r == sb.gz:
			return nil, fmt.Errorf("reading gzip body: %w", err)
		case err != nil:
			return nil, fmt.Errorf("reading body: %w", err)
		}
	}
}

// release drops a body buffer over 1 MiB, so that idle buffers kept for
// reuse stay small (they are not counted in the MemoryBudget) and one
// huge scrape does not pin its memory for the scraper's lifetime.
func (sb *scrapeBuf) release() {
	if cap(sb.buf) > 1<<20 {
		sb.buf = nil
	}
}

// reserveParse reserves what parsing body will take: expo.ParseCost a byte, or
// expo.ParseBytesPerSeries a line when that is more. When every line's cost
// does not fit as things are, only the lines of families the filter may
// want are counted (expo.SeriesLines, one pass without parsing) and that
// is reserved, shedding larger scrapes or failing as Grow does.
func (s *Scraper) reserveParse(hold *Hold, body []byte, contentType string) error {
	perByte := expo.ParseCost * int64(len(body))
	lines := int64(bytes.Count(body, []byte{'\n'})) + 1
	if hold.TryGrow(max(perByte, lines*expo.ParseBytesPerSeries)) {
		return nil
	}
	series := expo.SeriesLines(body, contentType, s.opts.Filter)
	if err := hold.Grow(max(perByte, int64(series)*expo.ParseBytesPerSeries)); err != nil {
		var be *BudgetError
		if errors.As(err, &be) {
			return &memoryRefusal{series: series, err: be}
		}
		return fmt.Errorf("parsing %d series: %w", series, err)
	}
	return nil
}

// memoryRefusal is a body whose parse did not fit in memory: its series
// are counted in the target's status (model.MemoryCap).
type memoryRefusal struct {
	series int
	err    *BudgetError
}

func (e *memoryRefusal) Error() string { return fmt.Sprintf("parsing %d series: %v", e.series, e.err) }
func (e *memoryRefusal) Unwrap() error { return e.err }

// memoryCap is what the status says of a scrape's err: the series its
// parse was refused for want of memory, nil when it was not.
func memoryCap(err error) *model.MemoryCap {
	var r *memoryRefusal
	if !errors.As(err, &r) {
		return nil
	}
	limit := r.err.Limit
	if r.err.Process > 0 {
		limit = r.err.Process
	}
	return &model.MemoryCap{ByMemory: r.series, Needed: r.err.Want, Budget: limit}
}
