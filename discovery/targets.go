package discovery

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/scrape"
)

// DialectLabel forces a target's dialect (docs/dialects.md) from a
// file_sd or static_configs group, as name=URL@dialect does on the command
// line. Prometheus drops labels starting with "__", so a file shared with
// Prometheus can carry it.
const DialectLabel = "__retrytop_dialect__"

// maxWarnings bounds the warnings of one target set: a file of a thousand
// bad addresses says so in a few lines.
const maxWarnings = 20

// target turns one address of a group into a scrape target, applying
// the meta labels as Prometheus does: __address__ is the address,
// __scheme__ and __metrics_path__ override the job's, __param_NAME sets
// the first value of URL parameter NAME, __scrape_interval__ and
// __scrape_timeout__ the intervals. The name is the instance label,
// which defaults to the address.
func (j *Job) target(addr string, g Group, o *Options) (scrape.Target, error) {
	label := func(name string) (string, bool) {
		v, ok := g.Labels[name]
		return v, ok
	}
	if strings.TrimSpace(addr) == "" {
		return scrape.Target{}, errors.New("empty target address")
	}
	if strings.Contains(addr, "/") {
		return scrape.Target{}, fmt.Errorf("target %q: an address is host:port, without scheme or path (use __scheme__ and __metrics_path__ labels)", safetext.Terminal(addr))
	}
	scheme, path := j.Scheme, j.MetricsPath
	if v, ok := label("__scheme__"); ok {
		scheme = v
	}
	if v, ok := label("__metrics_path__"); ok {
		path = v
	}
	params := url.Values{}
	for k, vs := range j.Params {
		params[k] = append([]string(nil), vs...)
	}
	for k, v := range g.Labels {
		if name, ok := strings.CutPrefix(k, "__param_"); ok {
			if len(params[name]) > 0 {
				params[name][0] = v
			} else {
				params[name] = []string{v}
			}
		}
	}
	u := url.URL{Scheme: scheme, Host: addr, Path: path, RawQuery: params.Encode()}

	interval, timeout := j.Interval, j.Timeout
	if v, ok := label("__scrape_interval__"); ok {
		d, err := pmodel.ParseDuration(v)
		if err != nil || d <= 0 {
			return scrape.Target{}, fmt.Errorf("target %q: __scrape_interval__ %q is not a positive duration", safetext.Terminal(addr), safetext.Terminal(v))
		}
		interval = time.Duration(d)
	}
	if v, ok := label("__scrape_timeout__"); ok {
		d, err := pmodel.ParseDuration(v)
		if err != nil || d <= 0 {
			return scrape.Target{}, fmt.Errorf("target %q: __scrape_timeout__ %q is not a positive duration", safetext.Terminal(addr), safetext.Terminal(v))
		}
		timeout = time.Duration(d)
	}
	if o.OverrideInterval || interval == 0 {
		interval = o.Interval
	}
	if timeout == 0 || timeout > interval {
		timeout = interval
	}

	instance := g.Labels["instance"]
	if strings.TrimSpace(instance) == "" {
		instance = addr
	}
	job := j.Name
	if v, ok := label("job"); ok {
		job = v
	}
	t := scrape.Target{
		Name:     TargetName(instance),
		URL:      u.String(),
		Layer:    job,
		Dialect:  g.Labels[DialectLabel],
		Interval: interval,
		Timeout:  timeout,
		HTTP:     j.HTTP,
	}
	return t.Normalize()
}

// TargetName makes a label value (an instance) a valid target name: fit
// for the terminal (safetext.Terminal, then the backslashes of its escapes
// and quotes replaced by '_'), trimmed, at most scrape.MaxNameLen bytes.
// Equal inputs give equal names, so a target keeps its name and history
// across re-reads.
func TargetName(s string) string {
	s = safetext.TerminalN(strings.TrimSpace(s), scrape.MaxNameLen)
	return strings.NewReplacer(`\`, "_", `"`, "_").Replace(s)
}

// build turns the jobs' groups (groups[i] are jobs[i]'s) into the target
// set: static targets first, then each job's in order. A discovered
// target with a static target's URL is left out; one whose name is
// taken is renamed job/name when that is free, and skipped with a warning
// otherwise.
func build(static []scrape.Target, jobs []*Job, groups [][]Group, o *Options) ([]scrape.Target, []string) {
	out := append([]scrape.Target(nil), static...)
	byName := make(map[string]int, len(out)) // name -> index in out
	staticURLs := make(map[string]bool, len(static))
	for i, t := range static {
		byName[t.Name] = i
		staticURLs[t.URL] = true
	}
	jobOf := make(map[string]string) // discovered name -> its job
	var warns []string
	warn := func(s string) {
		if len(warns) < maxWarnings {
			warns = append(warns, s)
		} else if len(warns) == maxWarnings {
			warns = append(warns, "more warnings left out")
		}
	}
	discovered := 0
	for ji, j := range jobs {
		for _, g := range groups[ji] {
			for _, addr := range g.Targets {
				t, err := j.target(addr, g, o)
				if err != nil {
					warn(fmt.Sprintf("%s: %s; skipped", g.Where, safetext.Terminal(err.Error())))
					continue
				}
				if staticURLs[t.URL] {
					continue // given on the command line or in --config: that one is kept
				}
				if i, taken := byName[t.Name]; taken {
					other := out[i]
					if other.URL == t.URL && jobOf[t.Name] == j.Name {
						continue // listed twice: one target
					}
					renamed := TargetName(j.Name + "/" + t.Name)
					if _, alsoTaken := byName[renamed]; j.Name == "" || jobOf[t.Name] == j.Name || alsoTaken {
						warn(fmt.Sprintf("%s: target %q (%s) has the name of another target; skipped (give it a distinct instance label)",
							g.Where, t.Name, scrape.SafeURL(t.URL)))
						continue
					}
					t.Name = renamed
				}
				if discovered == o.MaxTargets {
					warn(fmt.Sprintf("more than %d discovered targets: the rest are skipped", o.MaxTargets))
					discovered++
				}
				if discovered > o.MaxTargets {
					continue
				}
				discovered++
				byName[t.Name] = len(out)
				jobOf[t.Name] = j.Name
				out = append(out, t)
			}
		}
	}
	return out, warns
}
