package config

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/scrape"

	"github.com/prometheus/common/config"
	"go.yaml.in/yaml/v2"
)

// Config is a retrytop config file (docs/config.md): the targets to read
// and the amplification chains across them.
type Config struct {
	Targets []TargetConfig `yaml:"targets"`
	Chains  []ChainConfig  `yaml:"chains"`
	// Links tie a dependency label value to a service where no naming
	// rule does (docs/config.md, "Identity and links").
	Links []LinkConfig `yaml:"links"`
	// Dialects holds custom dialect mappings (docs/dialects.md), checked
	// as the translator will use them.
	Dialects []dialect.Mapping `yaml:"dialects"`
	// Theme names the dashboard's colours (--theme wins); Keys remaps its
	// keys, action name to keys (docs/dashboard.md). Checked by the ui.
	Theme string              `yaml:"theme"`
	Keys  map[string][]string `yaml:"keys"`
}

// TargetConfig is one target in a config file. HTTP takes the same keys as
// a scrape config's HTTP settings in prometheus.yml (basic_auth,
// bearer_token_file, authorization, tls_config, proxy_url, ...).
type TargetConfig struct {
	Name     string                  `yaml:"name"`
	URL      string                  `yaml:"url"`
	Layer    string                  `yaml:"layer"`
	Dialect  string                  `yaml:"dialect"`
	Interval time.Duration           `yaml:"interval"`
	Timeout  time.Duration           `yaml:"timeout"`
	HTTP     config.HTTPClientConfig `yaml:",inline"`
}

// UnmarshalYAML starts from Prometheus' default HTTP settings (follow
// redirects, HTTP/2), as a scrape config does.
func (t *TargetConfig) UnmarshalYAML(unmarshal func(any) error) error {
	*t = TargetConfig{HTTP: config.DefaultHTTPClientConfig}
	type plain TargetConfig
	return unmarshal((*plain)(t))
}

// ChainConfig declares one chain by its targets, from the user-facing one
// down to the last one before the provider.
type ChainConfig struct {
	Name string   `yaml:"name"`
	Hops []string `yaml:"hops"`
}

// LinkConfig says that the dependency label value Dependency is the
// service Service (a target's name, target_info service_name or job).
type LinkConfig struct {
	Dependency string `yaml:"dependency"`
	Service    string `yaml:"service"`
}

// maxConfigBytes bounds a config file: it is small by nature.
const maxConfigBytes = 4 << 20

// LoadConfig reads and checks a config file. Errors name the file and, for
// syntax and type errors, the line.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if len(b) > maxConfigBytes {
		return nil, fmt.Errorf("config %s: %d bytes, more than the %d a config may have", path, len(b), maxConfigBytes)
	}
	return ParseConfig(path, b)
}

// ParseConfig parses config file content; name is used in errors.
func ParseConfig(name string, b []byte) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.SetStrict(true) // a misspelt key is an error, not a silent default
	if err := dec.Decode(&c); err != nil && err.Error() != "EOF" {
		return nil, fmt.Errorf("config %s: %s", name, YAMLMessage(err, &c))
	}
	if err := dialect.CompileMappings(c.Dialects); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	if _, err := c.ScrapeTargets(); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	known := map[string]bool{}
	for _, t := range c.Targets {
		known[t.Name] = true
	}
	for i, l := range c.Links {
		if l.Dependency == "" || l.Service == "" {
			return nil, fmt.Errorf("config %s: links[%d] needs both dependency and service", name, i)
		}
	}
	for i, ch := range c.Chains {
		if len(ch.Hops) == 0 {
			return nil, fmt.Errorf("config %s: chains[%d] (%q) has no hops", name, i, ch.Name)
		}
		for _, h := range ch.Hops {
			if !known[h] {
				return nil, fmt.Errorf("config %s: chain %q names target %q, which targets: does not declare", name, ch.Name, h)
			}
		}
	}
	return &c, nil
}

// ScrapeTargets turns the config's targets into validated scrape targets.
func (c *Config) ScrapeTargets() ([]scrape.Target, error) {
	out := make([]scrape.Target, 0, len(c.Targets))
	seen := map[string]bool{}
	for i, tc := range c.Targets {
		if tc.URL == "" {
			return nil, fmt.Errorf("targets[%d]: url is required", i)
		}
		httpCfg := tc.HTTP
		if err := httpCfg.Validate(); err != nil {
			return nil, fmt.Errorf("targets[%d] (%s): %w", i, scrape.SafeURL(tc.URL), err)
		}
		t, err := scrape.Target{Name: tc.Name, URL: tc.URL, Layer: tc.Layer, Dialect: tc.Dialect,
			Interval: tc.Interval, Timeout: tc.Timeout, HTTP: httpCfg}.Normalize()
		if err != nil {
			return nil, fmt.Errorf("targets[%d]: %w", i, err)
		}
		if t.Timeout > t.Interval {
			t.Timeout = t.Interval // as discovery does: a scrape never outlasts its interval
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("targets[%d]: duplicate target name %q", i, t.Name)
		}
		seen[t.Name] = true
		c.Targets[i].Name = t.Name
		out = append(out, t)
	}
	return out, nil
}
