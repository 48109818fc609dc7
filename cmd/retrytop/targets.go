package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/collect"
	"github.com/retrytop/retrytop/collect/dialect"
	"github.com/retrytop/retrytop/model"
)

// sourceFlags are where targets and chains come from: arguments, a config
// file and --chain.
type sourceFlags struct {
	config string
	chains []string
}

func (f *sourceFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.config, "config", "c", "", "config file with targets: and chains: (docs/config.md)")
	cmd.Flags().StringArrayVar(&f.chains, "chain", nil, "a chain as name=URL,name=URL,... from the user-facing layer down (repeatable)")
}

// sources is what the flags resolve to.
type sources struct {
	targets []collect.Target
	chains  []analysis.ChainSpec
	// translate reads every target's exposition in its dialect.
	translate *dialect.Translator
}

// scraper builds the scraper for the sources onto store; opts may carry
// other hooks (a recorder), the dialect translation is added here.
func (s *sources) scraper(store *model.Store, opts collect.Options) *collect.Scraper {
	opts.Translate, opts.Filter = s.translate.Translate, s.translate.Filter
	return collect.NewScraper(s.targets, store, opts)
}

// resolve collects the targets of the arguments, the config file and the
// chains (a name given twice must mean the same URL), the declared chains
// and the dialects (built-in, plus the config file's custom mappings).
func (f *sourceFlags) resolve(args []string, interval time.Duration) (*sources, error) {
	src, err := f.resolveTargets(args, interval)
	if err != nil {
		return nil, err
	}
	cfg := dialect.Config{}
	if f.config != "" {
		b, err := os.ReadFile(f.config)
		if err != nil {
			return nil, err
		}
		if cfg.Custom, err = dialect.ParseMappings(f.config, b); err != nil {
			return nil, err
		}
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

func (f *sourceFlags) resolveTargets(args []string, interval time.Duration) (*sources, error) {
	var targets []collect.Target
	var specs []analysis.ChainSpec
	byName := map[string]string{}
	add := func(t collect.Target) error {
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
		cfg, err := collect.LoadConfig(f.config)
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
	}
	for _, a := range args {
		t, err := collect.ParseTarget(a)
		if err != nil {
			return nil, err
		}
		t.Interval = interval
		if err := add(t); err != nil {
			return nil, err
		}
	}
	for i, c := range f.chains {
		ts, names, err := collect.ParseChainFlag(c)
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
	if len(targets) == 0 {
		return nil, fmt.Errorf("no targets: give URL or name=URL arguments, --config or --chain")
	}
	return &sources{targets: targets, chains: specs}, nil
}
