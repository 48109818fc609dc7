package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/config"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/discovery"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// sourceFlags are where targets and chains come from: arguments, a config
// file, --chain, file_sd files and jobs of a prometheus.yml.
type sourceFlags struct {
	config     string
	chains     []string
	fileSD     []string
	promConfig string
	jobs       []string
	// cmd tells whether --interval was given (it then wins over
	// prometheus.yml) and where warnings go.
	cmd *cobra.Command
}

func (f *sourceFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	cmd.Flags().StringVarP(&f.config, "config", "c", "", "config file with targets: and chains: (docs/config.md)")
	cmd.Flags().StringArrayVar(&f.chains, "chain", nil, "a chain as name=URL,name=URL,... from the user-facing layer down (repeatable)")
	cmd.Flags().StringArrayVar(&f.fileSD, "file-sd", nil, "Prometheus file_sd file (JSON or YAML target groups; a glob in the last path element is allowed), re-read when it changes (repeatable)")
	cmd.Flags().StringVar(&f.promConfig, "prometheus-config", "", "prometheus.yml whose --job targets (static_configs, file_sd_configs) to scrape, with the job's scheme, metrics_path, params and auth; its scrape_interval applies unless --interval is given")
	cmd.Flags().StringArrayVar(&f.jobs, "job", nil, "with --prometheus-config: a job_name whose targets to scrape (repeatable)")
	_ = cmd.MarkFlagFilename("file-sd", "json", "yml", "yaml")
	_ = cmd.MarkFlagFilename("prometheus-config", "yml", "yaml")
}

// discoveryPoll is how often discovery files are checked (tests shorten it).
var discoveryPoll = discovery.DefaultPoll

// sources is what the flags resolve to.
type sources struct {
	targets []scrape.Target
	chains  []analysis.ChainSpec
	links   []analysis.LinkRule
	// translate reads every target's exposition in its dialect.
	translate *dialect.Translator
	// memory bounds the scrapes in flight (--memory-limit).
	memory *scrape.MemoryBudget
	// watcher re-reads --file-sd and --prometheus-config's file_sd files
	// (nil without them); badge is its problems, for the dashboard.
	watcher *discovery.Watcher
	badge   atomic.Pointer[string]
}

// scraper builds the scraper for the sources onto store; opts may carry
// other hooks (a recorder), the dialect translation and the following of
// discovery files are added here.
func (s *sources) scraper(store *model.Store, opts scrape.Options) *scrape.Scraper {
	opts.Translate, opts.Filter, opts.OnForget = s.translate.Translate, s.translate.Filter, s.translate.Forget
	if opts.Parser == nil {
		opts.Parser = unreadParser(s.translate) // so Unread can name what no dialect reads
	}
	return scrape.NewScraper(s.targets, store, s.follow(opts, nil))
}

// follow makes a running scraper take up every new target set of the
// discovery files. Their errors and warnings feed status (the header
// badge) and, when log is set, are printed there as they change.
func (s *sources) follow(opts scrape.Options, log io.Writer) scrape.Options {
	if opts.Memory == nil {
		opts.Memory = s.memory
	}
	if s.watcher == nil {
		return opts
	}
	opts.Discover = func(ctx context.Context, set func([]scrape.Target)) {
		s.watcher.Run(ctx, func(d discovery.Set) {
			set(d.Targets)
			s.setBadge(d)
			if log != nil {
				fmt.Fprintf(log, "\nretrytop: discovery: %d target(s)\n", len(d.Targets))
				for _, e := range d.Errors {
					fmt.Fprintf(log, "retrytop: discovery: %s\n", e)
				}
			}
		})
	}
	return opts
}

// setBadge keeps the dashboard's discovery badge: the first error, else
// the first warning, cut so the header keeps its room, and how many more
// there are.
func (s *sources) setBadge(d discovery.Set) {
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

// status returns the header badge function for the dashboard: the
// discovery problems now, then whatever prev shows.
func (s *sources) status(prev func() string) func() string {
	if s.watcher == nil {
		return prev
	}
	return func() string {
		b := ""
		if p := s.badge.Load(); p != nil {
			b = *p
		}
		if prev != nil {
			if p := prev(); p != "" && b != "" {
				b += " " + p
			} else if p != "" {
				b = p
			}
		}
		return b
	}
}

// given reports whether a flag names targets, so that retrytop with only
// flags and no TARGET is still watch.
func (f *sourceFlags) given() bool {
	return f.config != "" || len(f.fileSD) > 0 || f.promConfig != ""
}

// resolve collects the targets of the arguments, the config file and the
// chains (a name given twice must mean the same URL), the declared chains
// and the dialects (built-in, plus the config file's custom mappings).
func (f *sourceFlags) resolve(args []string, interval time.Duration) (*sources, error) {
	if f.promConfig == "" && len(f.jobs) > 0 {
		return nil, errors.New("--job needs --prometheus-config FILE")
	}
	src, err := f.resolveTargets(args, interval)
	if err != nil {
		return nil, err
	}
	if err := f.resolveDiscovery(src, interval); err != nil {
		return nil, err
	}
	src.memory = scrapeMemory(f.cmd)
	cfg, err := f.dialectConfig()
	if err != nil {
		return nil, err
	}
	if src.translate, err = dialect.NewTranslator(cfg); err != nil {
		return nil, err
	}
	for _, t := range src.targets {
		if t.Dialect != "" {
			if err := src.translate.Check(t.Dialect); err != nil {
				return nil, fmt.Errorf("target %q: %w", t.Name, err)
			}
		}
	}
	return src, nil
}

// dialectConfig is the built-in dialects plus the config file's custom
// mappings.
func (f *sourceFlags) dialectConfig() (dialect.Config, error) {
	cfg := dialect.Config{}
	if f.config == "" {
		return cfg, nil
	}
	b, err := os.ReadFile(f.config)
	if err != nil {
		return cfg, err
	}
	cfg.Custom, err = dialect.ParseMappings(f.config, b)
	return cfg, err
}

// recordingSources is what of the flags applies to recordings: how each
// target's exposition is read (the config's custom mappings, and the
// dialect a config target or --chain name=URL@dialect forces by name) and
// the declared chains. Nothing is scraped, so no target is required.
type recordingSources struct {
	dialects dialect.Config
	forced   map[string]string // target name -> dialect
	chains   []analysis.ChainSpec
	links    []analysis.LinkRule
}

func (f *sourceFlags) forRecordings() (*recordingSources, error) {
	rs := &recordingSources{forced: map[string]string{}}
	var err error
	if rs.dialects, err = f.dialectConfig(); err != nil {
		return nil, err
	}
	tr, err := dialect.NewTranslator(rs.dialects)
	if err != nil {
		return nil, err
	}
	// A recording names its own targets: a config with only dialects:
	// (or theme: and keys:) is fine here.
	src, err := f.resolveTargets(nil, scrape.DefaultInterval)
	if err != nil && !errors.Is(err, errNoTargets) && (f.config != "" || len(f.chains) > 0) {
		return nil, err
	}
	if src != nil {
		for _, t := range src.targets {
			if t.Dialect != "" {
				if err := tr.Check(t.Dialect); err != nil {
					return nil, fmt.Errorf("target %q: %w", t.Name, err)
				}
				rs.forced[t.Name] = t.Dialect
			}
		}
		rs.chains, rs.links = src.chains, src.links
	}
	return rs, nil
}

// translator returns a fresh translator (dialects keep per-target state)
// and the function that reads one recorded snapshot with it.
func (rs *recordingSources) translator() (*dialect.Translator, func(*model.Snapshot) (*model.Snapshot, error)) {
	tr, err := dialect.NewTranslator(rs.dialects)
	if err != nil {
		tr = dialect.Auto() // unreachable: forRecordings built one from the same config
	}
	return tr, func(s *model.Snapshot) (*model.Snapshot, error) {
		out, _, err := tr.Translate(rs.forced[s.Target], s)
		return out, err
	}
}

func (f *sourceFlags) resolveTargets(args []string, interval time.Duration) (*sources, error) {
	var targets []scrape.Target
	var specs []analysis.ChainSpec
	var links []analysis.LinkRule
	byName := map[string]string{}
	add := func(t scrape.Target) error {
		if url, ok := byName[t.Name]; ok {
			if url != t.URL {
				return fmt.Errorf("target %q is given twice with different URLs", t.Name)
			}
			return nil
		}
		byName[t.Name] = t.URL
		targets = append(targets, t)
		return nil
	}
	if f.config != "" {
		cfg, err := config.LoadConfig(f.config)
		if err != nil {
			return nil, err
		}
		ts, err := cfg.ScrapeTargets()
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			if err := add(t); err != nil {
				return nil, err
			}
		}
		for _, c := range cfg.Chains {
			specs = append(specs, analysis.ChainSpec{Name: c.Name, Targets: c.Hops})
		}
		for _, l := range cfg.Links {
			links = append(links, analysis.LinkRule{Dependency: l.Dependency, Service: l.Service})
		}
	}
	for _, a := range args {
		t, err := scrape.ParseTarget(a)
		if err != nil {
			return nil, err
		}
		t.Interval = interval
		if err := add(t); err != nil {
			return nil, err
		}
	}
	for i, c := range f.chains {
		ts, names, err := scrape.ParseChainFlag(c)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			t.Interval = interval
			if err := add(t); err != nil {
				return nil, err
			}
		}
		specs = append(specs, analysis.ChainSpec{Name: fmt.Sprintf("chain%d", i+1), Targets: names})
	}
	if len(targets) == 0 && len(f.fileSD) == 0 && f.promConfig == "" {
		return nil, errNoTargets
	}
	return &sources{targets: targets, chains: specs, links: links}, nil
}

// resolveDiscovery reads the --file-sd files and --prometheus-config's
// jobs once, adds their targets after the others, and keeps the watcher
// that re-reads them. A file that cannot be read or parsed now is an
// error; warnings (what of prometheus.yml is not read, targets skipped)
// are printed.
func (f *sourceFlags) resolveDiscovery(src *sources, interval time.Duration) error {
	var jobs []*discovery.Job
	if f.promConfig != "" {
		js, err := discovery.LoadPrometheus(f.promConfig, f.jobs)
		if err != nil {
			if len(f.jobs) == 0 {
				return fmt.Errorf("--prometheus-config needs --job NAME: %w", err)
			}
			return err
		}
		jobs = append(jobs, js...)
	}
	if len(f.fileSD) > 0 {
		jobs = append(jobs, discovery.FileSDJob(f.fileSD))
	}
	if len(jobs) == 0 {
		return nil
	}
	given := f.cmd != nil && f.cmd.Flags().Changed("interval")
	w := discovery.NewWatcher(jobs, discovery.Options{Static: src.targets, Interval: interval, OverrideInterval: given, Poll: discoveryPoll})
	set, _ := w.Refresh()
	if len(set.Errors) > 0 {
		return errors.New(strings.Join(set.Errors, "\n"))
	}
	if f.cmd != nil {
		for _, wr := range set.Warnings {
			fmt.Fprintf(f.cmd.ErrOrStderr(), "retrytop: warning: %s\n", wr)
		}
	}
	src.targets, src.watcher = set.Targets, w
	src.setBadge(set)
	return nil
}

// errNoTargets: nothing to scrape was given.
var errNoTargets = errors.New("no targets: give URL or name=URL arguments, --config, --chain, --file-sd or --prometheus-config with --job")
