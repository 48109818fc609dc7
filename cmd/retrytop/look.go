package main

import (
	"fmt"

	"github.com/retrytop/retrytop/config"
	"github.com/retrytop/retrytop/ui"
)

// look applies a config file's theme: (unless --theme was given) and
// keys: to the dashboard's options (docs/dashboard.md).
func (f *dashboardFlags) look(opts *ui.Options, configPath string) error {
	if configPath == "" {
		return nil
	}
	cfg, err := config.LoadConfig(configPath)
	if err != nil {
		return err
	}
	if cfg.Theme != "" && f.theme == "" {
		th, err := ui.ParseTheme(cfg.Theme)
		if err != nil {
			return fmt.Errorf("config %s: theme: %w", configPath, err)
		}
		opts.Theme = &th
	}
	if len(cfg.Keys) > 0 {
		k := ui.DefaultKeyMap()
		if opts.Keys != nil {
			k = *opts.Keys
		}
		if err := k.Remap(cfg.Keys); err != nil {
			return fmt.Errorf("config %s: %w", configPath, err)
		}
		opts.Keys = &k
	}
	return nil
}
