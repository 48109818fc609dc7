package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

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

// Options tune a Scraper. The zero value is usable.
type Options struct {
	// Clock stamps snapshots and statuses (default time.Now). Scrape
	// durations are measured on the monotonic clock regardless.
	Clock func() time.Time
	// BodyLimit caps a body after decompression (default DefaultBodyLimit).
	BodyLimit int64
	// Parser reads bodies (default ExpfmtParser{}).
	Parser Parser
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
	// Translate, when set, rewrites every parsed snapshot before it is
	// stored: a dialect turning an emitter's families into the metric
	// contract (collect/dialect's Translator.Translate). dialect is the
	// target's Target.Dialect ("" to detect); it returns the snapshot to
	// store and the dialect name(s) shown in the target's status. An error
	// (an unknown dialect) fails the scrape with that message. It is called
	// for one target at a time, in scrape order, and may be called for
	// different targets concurrently.
	Translate func(dialect string, snap *model.Snapshot) (*model.Snapshot, string, error)
	// OnScrape, when set, is called after every scrape that was not
	// abandoned, from the target's goroutine: with the body exactly as
	// served (after gzip) and its Content-Type when the fetch succeeded,
	// whether or not it then parses; with err (sanitised, no secrets) when
	// the fetch failed. body is valid only during the call. A recorder
	// (collect/dump) hooks in here.
	OnScrape func(target string, at time.Time, body []byte, contentType string, err error)
}

// Scraper scrapes many targets into a store. Each target has its own
// goroutine, interval, timeout and HTTP client, so a dead, slow or
// garbage-serving target never delays another. It is safe for concurrent
// use.
type Scraper struct {
	opts    Options
	store   *model.Store
	targets []*scrapeTarget
	updates chan struct{}

	mu       sync.Mutex // guards statuses and running
	statuses []model.TargetStatus
	running  bool
}

// scrapeTarget is one target with its client and reusable buffers.
type scrapeTarget struct {
	idx     int
	t       Target
	safeURL string
	secrets []string
	client  *http.Client
	cfgErr  error // set when the target can never be scraped
	offset  time.Duration

	// mu serialises scrapes of this target (Run and ScrapeOnce may
	// overlap), which keeps its snapshots in time order and guards buf
	// and gz.
	mu      sync.Mutex
	buf     bytes.Buffer
	gz      *gzip.Reader
	fetched bool // the current scrape read a body (OnScrape saw it)
}

// NewScraper prepares targets for scraping into store (nil: a store with
// model.DefaultStoreConfig). Target defaults are filled in as by
// ParseTarget, except HTTP, which is used as given. A target that cannot be scraped at all (bad URL,
// duplicate name, unusable TLS or auth settings) is kept and reported down
// with the reason in its status, so one bad target never prevents the
// others from running.
func NewScraper(targets []Target, store *model.Store, opts Options) *Scraper {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.BodyLimit <= 0 {
		opts.BodyLimit = DefaultBodyLimit
	}
	if opts.Parser == nil {
		opts.Parser = ExpfmtParser{}
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
	if store == nil {
		store = model.NewStore(model.StoreConfig{})
	}
	s := &Scraper{
		opts:     opts,
		store:    store,
		updates:  make(chan struct{}, 1),
		statuses: make([]model.TargetStatus, len(targets)),
	}
	seen := make(map[string]bool, len(targets))
	for i, t := range targets {
		st := &scrapeTarget{idx: i, t: t, safeURL: SafeURL(t.URL), secrets: inlineSecrets(t)}
		st.cfgErr = st.prepare(opts.UserAgent)
		if st.cfgErr == nil && seen[st.t.Name] {
			st.cfgErr = fmt.Errorf("target %q: duplicate name; name each target with name=URL", st.t.Name)
		}
		seen[st.t.Name] = true
		if st.t.Name == "" {
			st.t.Name = fmt.Sprintf("target-%d", i+1)
		}
		s.statuses[i] = model.TargetStatus{Name: st.t.Name, URL: st.safeURL, Layer: Sanitize(st.t.Layer), Dialect: Sanitize(st.t.Dialect)}
		if st.cfgErr != nil {
			s.statuses[i].LastError = st.errorText(st.cfgErr)
		}
		s.targets = append(s.targets, st)
	}
	return s
}

// prepare normalises the target and builds its HTTP client.
func (st *scrapeTarget) prepare(userAgent string) error {
	t, err := st.t.normalize()
	if err != nil {
		if checkName(st.t.Name) != nil {
			st.t.Name = ""
		}
		return err
	}
	st.t = t
	st.offset = jitter(t.Name, t.Interval)
	cfg := t.HTTP
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("target %q: HTTP settings: %w", t.Name, err)
	}
	client, err := config.NewClientFromConfig(cfg, t.Name, config.WithUserAgent(userAgent))
	if err != nil {
		return fmt.Errorf("target %q: HTTP settings: %w", t.Name, err)
	}
	st.client = client
	return nil
}

// jitter is the target's fixed phase within its interval, from a hash of
// its name, so that targets spread out and keep their phase across runs.
func jitter(name string, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return time.Duration(h.Sum64() % uint64(interval))
}

// Store returns the store scrapes are appended to.
func (s *Scraper) Store() *model.Store { return s.store }

// Updates returns a channel that receives after every scrape, successful or
// not, without blocking the scraper: a reader that falls behind sees one
// pending notification, not a backlog.
func (s *Scraper) Updates() <-chan struct{} { return s.updates }

// Statuses returns a copy of every target's status, in target order.
func (s *Scraper) Statuses() []model.TargetStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]model.TargetStatus(nil), s.statuses...)
}

// Run scrapes every target at its interval until ctx is done, then returns
// nil once all scrapes have stopped. Each target's first scrape waits for
// its jitter offset within the interval. Calling Run while it runs is an
// error.
func (s *Scraper) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("collect: Scraper.Run is already running")
	}
	s.running = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
	}()

	var wg sync.WaitGroup
	for _, st := range s.targets {
		if st.cfgErr != nil {
			continue // reported in its status; nothing to retry
		}
		wg.Go(func() { s.loop(ctx, st) })
	}
	<-ctx.Done() // even when no target can be scraped
	wg.Wait()
	for _, st := range s.targets {
		if st.client != nil {
			st.client.CloseIdleConnections()
		}
	}
	return nil
}

func (s *Scraper) loop(ctx context.Context, st *scrapeTarget) {
	interval := st.t.Interval
	now := time.Now().UnixNano()
	wait := (st.offset - time.Duration(now%int64(interval)) + interval) % interval
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return
	case <-timer.C:
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		s.scrape(ctx, st)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// ScrapeOnce scrapes every target once, concurrently, and returns their
// statuses in target order. A target that cannot be configured is not
// contacted and keeps its error. If ctx ends first, unfinished scrapes are
// abandoned without changing their status.
func (s *Scraper) ScrapeOnce(ctx context.Context) []model.TargetStatus {
	var wg sync.WaitGroup
	for _, st := range s.targets {
		if st.cfgErr != nil {
			continue
		}
		wg.Go(func() { s.scrape(ctx, st) })
	}
	wg.Wait()
	return s.Statuses()
}

// scrape fetches, parses and stores one target once and records its status.
func (s *Scraper) scrape(ctx context.Context, st *scrapeTarget) {
	st.mu.Lock()
	defer st.mu.Unlock()

	at := s.opts.Clock()
	start := time.Now()
	st.fetched = false
	snap, err := s.fetch(ctx, st, at)
	dialect := st.t.Dialect
	if err == nil && s.opts.Translate != nil {
		var name string
		snap, name, err = s.opts.Translate(st.t.Dialect, snap)
		if err != nil {
			err = fmt.Errorf("target %q: dialect: %w", st.t.Name, err)
		} else {
			dialect = name
		}
	}
	took := time.Since(start)
	if err != nil && ctx.Err() != nil {
		return // abandoned, not failed: the caller stopped
	}
	if err != nil && !st.fetched && s.opts.OnScrape != nil {
		s.opts.OnScrape(st.t.Name, at, nil, "", errors.New(st.errorText(err)))
	}
	var res model.AppendResult
	if err == nil {
		res = s.store.Append(snap)
	}

	s.mu.Lock()
	ts := &s.statuses[st.idx]
	wasUp, first := ts.Up, ts.Scrapes == 0
	ts.Scrapes++
	ts.LastScrape = at
	ts.ScrapeDuration = took
	if err != nil {
		ts.Up = false
		ts.Failures++
		ts.LastError = st.errorText(err)
	} else {
		ts.Up = true
		ts.LastError = ""
		ts.Dialect = Sanitize(dialect)
		ts.LastSuccess = at
		ts.Series = snap.SeriesCount()
		ts.DroppedSeries = res.Dropped
	}
	status := *ts
	s.mu.Unlock()

	select {
	case s.updates <- struct{}{}:
	default:
	}

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
		log.Warn("series over the store's cap dropped", "target", status.Name, "dropped", res.Dropped)
	}
}

// errorText renders err for a status or log: secrets scrubbed, sanitised.
func (st *scrapeTarget) errorText(err error) string {
	return Sanitize(redact(err.Error(), st.secrets))
}

// fetch performs one HTTP scrape and parses it into a snapshot stamped at.
func (s *Scraper) fetch(ctx context.Context, st *scrapeTarget, at time.Time) (*model.Snapshot, error) {
	name := st.t.Name
	ctx, cancel := context.WithTimeout(ctx, st.t.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, st.t.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("target %q: GET %s: %s", name, st.safeURL, "invalid request")
	}
	req.Header.Set("Accept", s.opts.AcceptHeader)
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(st.t.Timeout.Seconds(), 'f', -1, 64))

	resp, err := st.client.Do(req)
	if err != nil {
		return nil, st.requestError(ctx, err)
	}
	defer func() {
		// Drain a little so the connection can be reused, then close.
		_, _ = io.CopyN(io.Discard, resp.Body, 4096)
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("target %q: GET %s: server returned HTTP status %s", name, st.safeURL, Sanitize(resp.Status))
	}
	body, err := st.readBody(resp, s.opts.BodyLimit)
	if err != nil {
		if ctx.Err() != nil {
			return nil, st.requestError(ctx, err)
		}
		return nil, fmt.Errorf("target %q: GET %s: %w", name, st.safeURL, err)
	}
	st.fetched = true
	if s.opts.OnScrape != nil {
		s.opts.OnScrape(name, at, body, resp.Header.Get("Content-Type"), nil)
	}
	fams, err := s.opts.Parser.Parse(name, body, resp.Header.Get("Content-Type"), s.opts.Filter)
	st.releaseBuffer()
	if err != nil {
		var perr *ParseError
		if !errors.As(err, &perr) {
			err = fmt.Errorf("target %q: parse: %w", name, err)
		}
		return nil, err
	}
	return &model.Snapshot{Target: name, Time: at, Families: fams}, nil
}

// requestError explains a failed request without repeating its URL, which
// net/http would print with the user name.
func (st *scrapeTarget) requestError(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("target %q: GET %s: timed out after %s", st.t.Name, st.safeURL, st.t.Timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("target %q: GET %s: %w", st.t.Name, st.safeURL, err)
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

// readBody reads the (possibly gzipped) body into the target's buffer,
// failing once it exceeds limit bytes after decompression. The returned
// slice is valid until the next scrape of the target.
func (st *scrapeTarget) readBody(resp *http.Response, limit int64) ([]byte, error) {
	tooLarge := func(what string) error {
		return fmt.Errorf("%s exceeds the body limit of %s", what, formatBytes(limit))
	}
	var r io.Reader
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		if resp.ContentLength > limit {
			return nil, tooLarge(fmt.Sprintf("body of %d bytes", resp.ContentLength))
		}
		r = resp.Body
	case "gzip", "x-gzip":
		// Cap the compressed stream too: empty gzip members would let
		// an endless stream decompress to nothing.
		raw := &capReader{r: resp.Body, n: limit + 1}
		var err error
		if st.gz == nil {
			st.gz, err = gzip.NewReader(raw)
		} else {
			err = st.gz.Reset(raw)
		}
		if err != nil {
			if errors.Is(err, errCompressedTooLarge) {
				return nil, tooLarge("compressed body")
			}
			return nil, fmt.Errorf("reading gzip body: %w", err)
		}
		r = st.gz
	default:
		return nil, fmt.Errorf("unsupported Content-Encoding %q", Sanitize(enc))
	}
	st.buf.Reset()
	if resp.ContentLength > 0 && resp.ContentLength <= limit && r == resp.Body {
		st.buf.Grow(int(resp.ContentLength) + 1)
	}
	n, err := st.buf.ReadFrom(io.LimitReader(r, limit+1))
	switch {
	case errors.Is(err, errCompressedTooLarge):
		return nil, tooLarge("compressed body")
	case err != nil && r == st.gz:
		return nil, fmt.Errorf("reading gzip body: %w", err)
	case err != nil:
		return nil, fmt.Errorf("reading body: %w", err)
	case n > limit:
		return nil, tooLarge("body")
	}
	return st.buf.Bytes(), nil
}

// releaseBuffer drops a body buffer much larger than the last body, so one
// huge scrape does not pin its memory for the target's lifetime.
func (st *scrapeTarget) releaseBuffer() {
	if c := st.buf.Cap(); c > 1<<20 && c > 4*st.buf.Len() {
		st.buf = bytes.Buffer{}
	}
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
