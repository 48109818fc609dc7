package discovery

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/config"
	pmodel "github.com/prometheus/common/model"
	"go.yaml.in/yaml/v2"

	"github.com/retrytop/retrytop/internal/safetext"
)

// DefaultRefresh is file_sd_configs' refresh_interval when it sets none,
// as in Prometheus: a full re-read even when a file's size and time did
// not change.
const DefaultRefresh = 5 * time.Minute

// Job is where the targets of one job come from and how they are scraped:
// a job of prometheus.yml, or the --file-sd files.
type Job struct {
	// Name is job_name; "" for --file-sd files.
	Name string
	// Origin names the source in messages: the prometheus.yml path, or
	// "--file-sd".
	Origin string
	// Scheme and MetricsPath default to http and /metrics; target labels
	// __scheme__ and __metrics_path__ override them.
	Scheme      string
	MetricsPath string
	// Params are URL parameters; __param_NAME labels override the first
	// value of NAME.
	Params url.Values
	// Interval and Timeout are the job's scrape_interval and
	// scrape_timeout (global ones when it sets none); 0 when neither
	// sets them.
	Interval, Timeout time.Duration
	// HTTP is the job's auth, TLS and proxy settings, validated, relative
	// file paths resolved against the config file's directory.
	HTTP config.HTTPClientConfig
	// Static holds the static_configs groups.
	Static []Group
	// Files holds the file_sd_configs.
	Files []FileSD
	// Warnings name what of the job retrytop does not read.
	Warnings []string
}

// FileSD is one file_sd_configs entry.
type FileSD struct {
	// Patterns are file paths whose last element may be a glob.
	Patterns []string
	// Refresh is how often files are re-read even when they seem
	// unchanged (default DefaultRefresh).
	Refresh time.Duration
}

// FileSDJob is the job of --file-sd FILE arguments: default scheme, path
// and HTTP settings, files re-read every DefaultRefresh at the latest.
func FileSDJob(patterns []string) *Job {
	return &Job{
		Origin:      "--file-sd",
		Scheme:      "http",
		MetricsPath: "/metrics",
		HTTP:        config.DefaultHTTPClientConfig,
		Files:       []FileSD{{Patterns: patterns, Refresh: DefaultRefresh}},
	}
}

// promConfig is the part of prometheus.yml that says what to scrape. The
// inline maps take every other key: top-level and global ones are not
// about scraping (rule_files, alerting, remote_write, external_labels...);
// a selected job's are reported.
type promConfig struct {
	Global struct {
		ScrapeInterval pmodel.Duration `yaml:"scrape_interval"`
		ScrapeTimeout  pmodel.Duration `yaml:"scrape_timeout"`
		Other          map[string]any  `yaml:",inline"`
	} `yaml:"global"`
	ScrapeConfigs     []*scrapeConfig `yaml:"scrape_configs"`
	ScrapeConfigFiles []string        `yaml:"scrape_config_files"`
	Other             map[string]any  `yaml:",inline"`
}

type scrapeConfig struct {
	JobName        string                  `yaml:"job_name"`
	Scheme         string                  `yaml:"scheme"`
	MetricsPath    string                  `yaml:"metrics_path"`
	Params         url.Values              `yaml:"params"`
	ScrapeInterval pmodel.Duration         `yaml:"scrape_interval"`
	ScrapeTimeout  pmodel.Duration         `yaml:"scrape_timeout"`
	HTTP           config.HTTPClientConfig `yaml:",inline"`
	StaticConfigs  []fileGroup             `yaml:"static_configs"`
	FileSDConfigs  []fileSDConfig          `yaml:"file_sd_configs"`
	Other          map[string]any          `yaml:",inline"`

	origin string // the file it was read from
}

// UnmarshalYAML starts from Prometheus' default HTTP settings, as a
// scrape config does (the inline settings' own defaults do not apply).
func (c *scrapeConfig) UnmarshalYAML(unmarshal func(any) error) error {
	*c = scrapeConfig{HTTP: config.DefaultHTTPClientConfig}
	type plain scrapeConfig
	return unmarshal((*plain)(c))
}

type fileSDConfig struct {
	Files           []string        `yaml:"files"`
	RefreshInterval pmodel.Duration `yaml:"refresh_interval"`
}

// ignoredKeys are scrape config keys that change nothing about what
// retrytop fetches or how it reads it (limits, label handling, storage of
// native histograms, the wire protocol: retrytop negotiates its own).
var ignoredKeys = []string{
	"honor_labels", "honor_timestamps", "track_timestamps_staleness",
	"sample_limit", "label_limit", "label_name_length_limit", "label_value_length_limit",
	"target_limit", "body_size_limit", "keep_dropped_targets",
	"scrape_protocols", "fallback_scrape_protocol", "enable_compression",
	"scrape_classic_histograms", "always_scrape_classic_histograms",
	"convert_classic_histograms_to_nhcb", "native_histogram_bucket_limit",
	"native_histogram_min_bucket_factor", "scrape_native_histograms",
	"metric_name_validation_scheme", "metric_name_escaping_scheme",
	"scrape_failure_log_file",
}

// LoadPrometheus reads the jobs named in jobs from a prometheus.yml (and
// the files its scrape_config_files name). It reads the file once; the
// jobs' file_sd files are re-read by a Watcher. Errors name the file and,
// where the YAML decoder gives one, the line; an unknown job lists the
// jobs there are.
func LoadPrometheus(path string, jobs []string) ([]*Job, error) {
	cfg, err := parsePromFile(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	all := cfg.ScrapeConfigs
	for _, sc := range all {
		if sc != nil { // "-" alone is a null entry
			sc.origin = path
		}
	}
	for _, pat := range cfg.ScrapeConfigFiles {
		matches, err := filepath.Glob(config.JoinDir(dir, pat))
		if err != nil {
			return nil, fmt.Errorf("%s: scrape_config_files: pattern %q: %w", safetext.Terminal(path), safetext.Terminal(pat), err)
		}
		for _, m := range matches {
			sub, err := parseScrapeConfigFile(m)
			if err != nil {
				return nil, err
			}
			all = append(all, sub...)
		}
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%s: no job selected; its jobs are: %s", safetext.Terminal(path), jobNames(all))
	}
	var out []*Job
	for i, name := range jobs {
		if slices.Contains(jobs[:i], name) {
			continue
		}
		var found []*scrapeConfig
		for _, sc := range all {
			if sc != nil && sc.JobName == name {
				found = append(found, sc)
			}
		}
		switch len(found) {
		case 0:
			return nil, fmt.Errorf("%s: no job %q; its jobs are: %s", safetext.Terminal(path), safetext.Terminal(name), jobNames(all))
		case 1:
		default:
			return nil, fmt.Errorf("%s: job %q is defined %d times", safetext.Terminal(path), safetext.Terminal(name), len(found))
		}
		global := globalDefaults{interval: time.Duration(cfg.Global.ScrapeInterval), timeout: time.Duration(cfg.Global.ScrapeTimeout)}
		j, err := found[0].job(global)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

func jobNames(all []*scrapeConfig) string {
	var names []string
	for _, sc := range all {
		if sc != nil {
			names = append(names, fmt.Sprintf("%q", safetext.Terminal(sc.JobName)))
		}
	}
	if len(names) == 0 {
		return "none"
	}
	if len(names) > 20 {
		names = append(names[:20], fmt.Sprintf("and %d more", len(names)-20))
	}
	return strings.Join(names, ", ")
}

func parsePromFile(path string) (*promConfig, error) {
	b, err := readCapped(path)
	if err != nil {
		return nil, err
	}
	var cfg promConfig
	// Strict: a misspelt key inside a known section is an error; the
	// inline maps take the keys of sections retrytop does not read.
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return nil, decodeError(path, b, err)
	}
	return &cfg, nil
}

func parseScrapeConfigFile(path string) ([]*scrapeConfig, error) {
	b, err := readCapped(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		ScrapeConfigs []*scrapeConfig `yaml:"scrape_configs"`
	}
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, decodeError(path, b, err)
	}
	for _, sc := range f.ScrapeConfigs {
		if sc != nil {
			sc.origin = path
		}
	}
	return f.ScrapeConfigs, nil
}

// decodeError names the file, and the job when the decoder's own error
// has no line (errors of custom unmarshalers such as a bad duration): the
// jobs are decoded one by one to find the one at fault.
func decodeError(path string, b []byte, err error) error {
	where := safetext.Terminal(path)
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%s: %s", where, yamlError(err, promConfig{}))
	}
	var raw struct {
		ScrapeConfigs []yaml.MapSlice `yaml:"scrape_configs"`
	}
	if yaml.Unmarshal(b, &raw) == nil {
		for i, ms := range raw.ScrapeConfigs {
			one, merr := yaml.Marshal(ms)
			if merr != nil {
				continue
			}
			var sc scrapeConfig
			if jerr := yaml.UnmarshalStrict(one, &sc); jerr != nil {
				name := ""
				for _, it := range ms {
					if k, ok := it.Key.(string); ok && k == "job_name" {
						name = fmt.Sprint(it.Value)
					}
				}
				return fmt.Errorf("%s: scrape_configs[%d] (job %q): %s", where, i, safetext.Terminal(name), yamlError(jerr, scrapeConfig{}))
			}
		}
	}
	return fmt.Errorf("%s: %s", where, yamlError(err, promConfig{}))
}

type globalDefaults struct{ interval, timeout time.Duration }

// job checks one scrape config and turns it into a Job, resolving
// intervals as Prometheus does and paths against the file's directory.
func (sc *scrapeConfig) job(global globalDefaults) (*Job, error) {
	where := fmt.Sprintf("%s: job %q", safetext.Terminal(sc.origin), safetext.Terminal(sc.JobName))
	dir := filepath.Dir(sc.origin)
	j := &Job{
		Name:        sc.JobName,
		Origin:      safetext.Terminal(sc.origin),
		Scheme:      sc.Scheme,
		MetricsPath: sc.MetricsPath,
		Params:      sc.Params,
		HTTP:        sc.HTTP,
	}
	if j.Scheme == "" {
		j.Scheme = "http"
	}
	if j.Scheme != "http" && j.Scheme != "https" {
		return nil, fmt.Errorf("%s: scheme %q; want http or https", where, safetext.Terminal(j.Scheme))
	}
	if j.MetricsPath == "" {
		j.MetricsPath = "/metrics"
	}
	j.Interval = time.Duration(sc.ScrapeInterval)
	if j.Interval == 0 {
		j.Interval = global.interval
	}
	j.Timeout = time.Duration(sc.ScrapeTimeout)
	if j.Timeout == 0 {
		j.Timeout = global.timeout
		if j.Interval > 0 && j.Timeout > j.Interval {
			j.Timeout = j.Interval
		}
	} else if j.Interval > 0 && j.Timeout > j.Interval {
		return nil, fmt.Errorf("%s: scrape_timeout %s is longer than scrape_interval %s", where, j.Timeout, j.Interval)
	}
	j.HTTP.SetDirectory(dir)
	if err := j.HTTP.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %s", where, safetext.Terminal(err.Error()))
	}
	for i, g := range sc.StaticConfigs {
		grp := Group{Targets: g.Targets, Labels: g.Labels, Where: fmt.Sprintf("%s static_configs[%d]", where, i)}
		if err := checkGroup(grp); err != nil {
			return nil, fmt.Errorf("%s: %w", grp.Where, err)
		}
		j.Static = append(j.Static, grp)
	}
	for i, f := range sc.FileSDConfigs {
		fsd := FileSD{Refresh: time.Duration(f.RefreshInterval)}
		if fsd.Refresh <= 0 {
			fsd.Refresh = DefaultRefresh
		}
		for _, p := range f.Files {
			switch strings.ToLower(filepath.Ext(p)) {
			case ".json", ".yml", ".yaml":
			default: // as Prometheus: the extension says the format
				return nil, fmt.Errorf("%s: file_sd_configs[%d]: %q: want a .json, .yml or .yaml file", where, i, safetext.Terminal(p))
			}
			p = config.JoinDir(dir, p)
			if _, err := filepath.Match(p, ""); err != nil {
				return nil, fmt.Errorf("%s: file_sd_configs[%d]: pattern %q: %w", where, i, safetext.Terminal(p), err)
			}
			fsd.Patterns = append(fsd.Patterns, p)
		}
		j.Files = append(j.Files, fsd)
	}
	keys := make([]string, 0, len(sc.Other))
	for k := range sc.Other {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case slices.Contains(ignoredKeys, k):
		case k == "relabel_configs":
			j.Warnings = append(j.Warnings, fmt.Sprintf("%s: relabel_configs not applied: targets are scraped as discovered (addresses, names and dropped targets may differ from Prometheus)", where))
		case k == "metric_relabel_configs":
			j.Warnings = append(j.Warnings, fmt.Sprintf("%s: metric_relabel_configs not applied: every scraped series is read", where))
		case strings.HasSuffix(k, "_sd_configs"):
			j.Warnings = append(j.Warnings, fmt.Sprintf("%s: %s not read: only static_configs and file_sd_configs are, so its targets are missing", where, safetext.Terminal(k)))
		default:
			j.Warnings = append(j.Warnings, fmt.Sprintf("%s: unknown key %q not read", where, safetext.Terminal(k)))
		}
	}
	if len(j.Static) == 0 && len(j.Files) == 0 {
		return nil, fmt.Errorf("%s: no static_configs or file_sd_configs: retrytop has no targets to read from it", where)
	}
	return j, nil
}
