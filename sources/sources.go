// Package sources resolves what a command names to read (targets on the
// command line, a config file's targets and chains, --chain, file_sd files
// and the jobs of a prometheus.yml) into scrape targets, the declared
// chains and links, and the dialects that translate every target into the
// metric contract. It keeps the header badges a dashboard shows of them:
// discovery files' problems and the targets no dialect reads.
package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/config"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/scrape"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/discovery"
	"github.com/retrytop/retrytop/model"
)

// Spec is where targets and chains come from: the values of a command's
// source flags.
type Spec struct {
	Config     string   // config file with targets:, chains:, links: and dialects:
	Chains     []string // --chain values, name=URL,name=URL,...
	FileSD     []string // file_sd files
	PromConfig string   // prometheus.yml
	Jobs       []string // its jobs to read
	// IntervalGiven: the interval was given, and wins over
	// prometheus.yml's scrape_interval.
	IntervalGiven bool
	// Warn receives discovery's warnings (nil: none printed).
	Warn io.Writer
	// Memory bounds the scrapes in flight (nil: no bound).
	Memory *scrape.MemoryBudget
	// Poll is how often discovery files are checked (0: discovery's default).
	Poll time.Duration
	// OTLP, when its Addr is set, is an OTLP/HTTP receiver to listen
	// with (--otlp): every resource that pushes becomes a target.
	OTLP OTLPSpec
}

// Sources is what a Spec resolves to.
type Sources struct {
	Targets []scrape.Target
	Chains  []analysis.ChainSpec
	Links   []analysis.LinkRule
	// Translate reads every target's exposition in its dialect.
	Translate *dialect.Translator
	// Memory bounds the scrapes in flight (--memory-limit).
	Memory *scrape.MemoryBudget
	// watcher re-reads the discovery files (nil without them); badge is
	// its problems, for the dashboard.
	watcher *discovery.Watcher
	badge   atomic.Pointer[string]
	// pushes is the OTLP receiver (nil without --otlp).
	pushes *pushes
}

// ErrNoTargets: nothing to scrape was given.
var ErrNoTargets = errors.New("no targets: give URL or name=URL arguments, --config, --chain, --file-sd or --prometheus-config with --job")

// Scraper builds the scraper for the sources onto store; opts may carry
// other hooks (a recorder), the dialect translation and the following of
// discovery files are added here.
func (s *Sources) Scraper(store *model.Store, opts scrape.Options) *scrape.Scraper {
	opts.Translate, opts.Filter, opts.OnForget = s.Translate.Translate, s.Translate.Filter, s.Translate.Forget
	if opts.Parser == nil {
		// The scraper's own line caches, so Unread can name what no
		// dialect reads.
		opts.Parser = UnreadWrap(s.Translate)(expo.ExpfmtParser{Lines: expo.NewLineCaches(0)})
	}
	return scrape.NewScraper(s.Targets, store, s.Follow(opts, nil))
}

// Follow makes a running scraper take up every new target set of the
// discovery files. Their errors and warnings feed Status (the header
// badge) and, when log is set, are printed there as they change, as are
// the OTLP receiver's refused exports.
func (s *Sources) Follow(opts scrape.Options, log io.Writer) scrape.Options {
	if opts.Memory == nil {
		opts.Memory = s.Memory
	}
	if s.watcher == nil && s.pushes == nil {
		return opts
	}
	opts.Discover = func(ctx context.Context, set func([]scrape.Target)) {
		var mu sync.Mutex
		base := s.Targets // the discovery files' newest set, else the static targets
		static := func() []scrape.Target {
			mu.Lock()
			defer mu.Unlock()
			return base
		}
		var wg sync.WaitGroup
		if s.watcher != nil {
			wg.Go(func() {
				s.watcher.Run(ctx, func(d discovery.Set) {
					mu.Lock()
					base = d.Targets
					mu.Unlock()
					all := slices.Clone(d.Targets)
					if s.pushes != nil {
						all = append(all, s.pushes.targets()...)
					}
					set(all)
					s.setBadge(d)
					if log != nil {
						fmt.Fprintf(log, "\nretrytop: discovery: %d target(s)\n", len(d.Targets))
						for _, e := range d.Errors {
							fmt.Fprintf(log, "retrytop: discovery: %s\n", e)
						}
					}
				})
			})
		}
		if s.pushes != nil {
			if log != nil {
				s.pushes.log.Store(&log)
			}
			wg.Go(func() { s.pushes.run(ctx, static, set) })
		}
		wg.Wait()
	}
	return opts
}

// setBadge keeps the dashboard's discovery badge: the first error, else
// the first warning, cut so the header keeps its room, and how many more
// there are.
func (s *Sources) setBadge(d discovery.Set) {
	msgs := append(append([]string(nil), d.Errors...), d.Warnings...)
	b := ""
	if len(msgs) > 0 {
		first := msgs[0]
		if file, rest, ok := strings.Cut(first, ": "); ok { // the file's base name is enough here
			first = filepath.Base(file) + ": " + rest
		}
		b = "discovery: " + safetext.TerminalN(first, 72)
		if len(msgs) > 1 {
			b += fmt.Sprintf(" (+%d more)", len(msgs)-1)
		}
	}
	s.badge.Store(&b)
}

// Status returns the header badge function for the dashboard: the
// discovery problems now, the OTLP receiver's refusals, then whatever
// prev shows.
func (s *Sources) Status(prev func() string) func() string {
	if s.pushes != nil {
		prev = s.pushes.badge(prev)
	}
	if s.watcher == nil {
		return prev
	}
	return func() string {
		b := ""
		if p := s.badge.Load(); p != nil {
			b = *p
		}
		return joinBadges(b, prev)
	}
}

// joinBadges is b, then what prev shows (nil: nothing), a space apart.
func joinBadges(b string, prev func() string) string {
	if prev == nil {
		return b
	}
	if p := prev(); p != "" && b != "" {
		b += " " + p
	} else if p != "" {
		b = p
	}
	return b
}

// Given reports whether a flag names targets, so that retrytop with only
// flags and no TARGET is still watch.
func (f *Spec) Given() bool {
	return f.Config != "" || len(f.FileSD) > 0 || f.PromConfig != "" || f.OTLP.Addr != ""
}

// Resolve collects the targets of the arguments, the config file and the
// chains (a name given twice must mean the same URL), the declared chains
// and the dialects (built-in, plus the config file's custom mappings).
func (f *Spec) Resolve(args []string, interval time.Duration) (*Sources, error) {
	if f.PromConfig == "" && len(f.Jobs) > 0 {
		return nil, errors.New("--job needs --prometheus-config FILE")
	}
	if f.OTLP.Addr == "" && f.OTLP != (OTLPSpec{}) {
		return nil, errors.New("--otlp-token-file and --otlp-tls-* need --otlp HOST:PORT")
	}
	src, err := f.resolveTargets(args, interval)
	if errors.Is(err, ErrNoTargets) && f.OTLP.Addr != "" {
		src, err = &Sources{}, nil // only what pushes
	}
	if err != nil {
		return nil, err
	}
	if err := f.resolveDiscovery(src, interval); err != nil {
		return nil, err
	}
	if f.OTLP.Addr != "" {
		if src.pushes, err = listenOTLP(f.OTLP, interval); err != nil {
			return nil, err
		}
	}
	src.Memory = f.Memory
	cfg, err := f.DialectConfig()
	if err != nil {
		return nil, err
	}
	if src.Translate, err = dialect.NewTranslator(cfg); err != nil {
		return nil, err
	}
	for _, t := range src.Targets {
		if t.Dialect != "" {
			if err := src.Translate.Check(t.Dialect); err != nil {
				return nil, fmt.Errorf("target %q: %w", t.Name, err)
			}
		}
	}
	return src, nil
}

// DialectConfig is the built-in dialects plus the config file's custom
// mappings.
func (f *Spec) DialectConfig() (dialect.Config, error) {
	cfg := dialect.Config{}
	if f.Config == "" {
		return cfg, nil
	}
	c, err := config.LoadConfig(f.Config) // its dialects: decoded and checked with the file
	if err != nil {
		return cfg, err
	}
	cfg.Custom = c.Dialects
	return cfg, nil
}

// Derived is dialect.DerivedByDialect of the config file (already read and
// checked by Resolve: an error here leaves nothing marked).
func (f *Spec) Derived() map[string]map[string]string {
	cfg, err := f.DialectConfig()
	if err != nil {
		return nil
	}
	return dialect.DerivedByDialect(cfg)
}

// Recording is what of a Spec applies to recordings: how each target's
// exposition is read (the config's custom mappings, and the dialect a
// config target or --chain name=URL@dialect forces by name) and the
// declared chains. Nothing is scraped, so no target is required.
type Recording struct {
	Dialects dialect.Config
	Forced   map[string]string // target name -> dialect
	Chains   []analysis.ChainSpec
	Links    []analysis.LinkRule
}

// ForRecordings resolves the Spec for reading recordings.
func (f *Spec) ForRecordings() (*Recording, error) {
	rs := &Recording{Forced: map[string]string{}}
	var err error
	if rs.Dialects, err = f.DialectConfig(); err != nil {
		return nil, err
	}
	tr, err := dialect.NewTranslator(rs.Dialects)
	if err != nil {
		return nil, err
	}
	// A recording names its own targets: a config with only dialects:
	// (or theme: and keys:) is fine here.
	src, err := f.resolveTargets(nil, scrape.DefaultInterval)
	if err != nil && !errors.Is(err, ErrNoTargets) && (f.Config != "" || len(f.Chains) > 0) {
		return nil, err
	}
	if src != nil {
		for _, t := range src.Targets {
			if t.Dialect != "" {
				if err := tr.Check(t.Dialect); err != nil {
					return nil, fmt.Errorf("target %q: %w", t.Name, err)
				}
				rs.Forced[t.Name] = t.Dialect
			}
		}
		rs.Chains, rs.Links = src.Chains, src.Links
	}
	return rs, nil
}

// Translator returns a fresh translator (dialects keep per-target state)
// and the function that reads one recorded snapshot with it.
func (rs *Recording) Translator() (*dialect.Translator, func(*model.Snapshot) (*model.Snapshot, error)) {
	tr, err := dialect.NewTranslator(rs.Dialects)
	if err != nil {
		tr = dialect.Auto() // unreachable: ForRecordings built one from the same config
	}
	return tr, func(s *model.Snapshot) (*model.Snapshot, error) {
		out, _, err := tr.Translate(rs.Forced[s.Target], s)
		return out, err
	}
}

// NewTranslator is a fresh translator of the recording's dialects.
func (rs *Recording) NewTranslator() *dialect.Translator {
	tr, _ := rs.Translator()
	return tr
}

// targetSet collects targets; a name given twice must mean the same URL.
type targetSet struct {
	targets []scrape.Target
	byName  map[string]string
}

func (s *targetSet) add(t scrape.Target) error {
	if url, ok := s.byName[t.Name]; ok {
		if url != t.URL {
			return fmt.Errorf("target %q is given twice with different URLs", t.Name)
		}
		return nil
	}
	s.byName[t.Name] = t.URL
	s.targets = append(s.targets, t)
	return nil
}

func (f *Spec) resolveTargets(args []string, interval time.Duration) (*Sources, error) {
	set := &targetSet{byName: map[string]string{}}
	src := &Sources{}
	if f.Config != "" {
		if err := f.readConfig(set, src); err != nil {
			return nil, err
		}
	}
	for _, a := range args {
		t, err := scrape.ParseTarget(a)
		if err != nil {
			return nil, err
		}
		t.Interval = interval
		if err := set.add(t); err != nil {
			return nil, err
		}
	}
	for i, c := range f.Chains {
		ts, names, err := scrape.ParseChainFlag(c)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			t.Interval = interval
			if err := set.add(t); err != nil {
				return nil, err
			}
		}
		src.Chains = append(src.Chains, analysis.ChainSpec{Name: fmt.Sprintf("chain%d", i+1), Targets: names})
	}
	if len(set.targets) == 0 && len(f.FileSD) == 0 && f.PromConfig == "" {
		return nil, ErrNoTargets
	}
	src.Targets = set.targets
	return src, nil
}

// readConfig adds the config file's targets, chains and links.
func (f *Spec) readConfig(set *targetSet, src *Sources) error {
	cfg, err := config.LoadConfig(f.Config)
	if err != nil {
		return err
	}
	ts, err := cfg.ScrapeTargets()
	if err != nil {
		return err
	}
	for _, t := range ts {
		if err := set.add(t); err != nil {
			return err
		}
	}
	for _, c := range cfg.Chains {
		src.Chains = append(src.Chains, analysis.ChainSpec{Name: c.Name, Targets: c.Hops})
	}
	for _, l := range cfg.Links {
		src.Links = append(src.Links, analysis.LinkRule{Dependency: l.Dependency, Service: l.Service})
	}
	return nil
}

// resolveDiscovery reads the file_sd files and prometheus.yml's jobs
// once, adds their targets after the others, and keeps the watcher that
// re-reads them. A file that cannot be read or parsed now is an error;
// warnings (what of prometheus.yml is not read, targets skipped) are
// printed.
func (f *Spec) resolveDiscovery(src *Sources, interval time.Duration) error {
	var jobs []*discovery.Job
	if f.PromConfig != "" {
		js, err := discovery.LoadPrometheus(f.PromConfig, f.Jobs)
		if err != nil {
			if len(f.Jobs) == 0 {
				return fmt.Errorf("--prometheus-config needs --job NAME: %w", err)
			}
			return err
		}
		jobs = append(jobs, js...)
	}
	if len(f.FileSD) > 0 {
		jobs = append(jobs, discovery.FileSDJob(f.FileSD))
	}
	if len(jobs) == 0 {
		return nil
	}
	poll := f.Poll
	if poll <= 0 {
		poll = discovery.DefaultPoll
	}
	w := discovery.NewWatcher(jobs, discovery.Options{Static: src.Targets, Interval: interval, OverrideInterval: f.IntervalGiven, Poll: poll})
	set, _ := w.Refresh()
	if len(set.Errors) > 0 {
		return errors.New(strings.Join(set.Errors, "\n"))
	}
	if f.Warn != nil {
		for _, wr := range set.Warnings {
			fmt.Fprintf(f.Warn, "retrytop: warning: %s\n", wr)
		}
	}
	src.Targets, src.watcher = set.Targets, w
	src.setBadge(set)
	return nil
}
