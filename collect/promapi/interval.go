package promapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	pmodel "github.com/prometheus/common/model"
)

// ScrapeInterval asks the server how often it scrapes the targets that
// selector (a matcher list, as Options.Selector) can match: the longest
// scrapeInterval of its active targets (/api/v1/targets), a matcher
// applying where the target has its label; where the server has no
// targets API (Thanos, Mimir) or lists no target, the longest median
// spacing of the samples of up over the last 5 minutes. how says which.
func (c *Client) ScrapeInterval(ctx context.Context, selector string, at time.Time) (time.Duration, string, error) {
	// A selector this cannot read filters no target; the server
	// reports its own errors with the queries.
	ms, _ := parseMatchers(selector)
	d, terr := c.targetsInterval(ctx, ms)
	if terr == nil && d > 0 {
		return d, "scrape interval of the server's targets", nil
	}
	for _, sel := range []string{selectorOf(selector), ""} {
		res, err := c.Query(ctx, "up"+sel+"[5m]", at)
		if err != nil {
			return 0, "", errors.Join(terr, err)
		}
		if d := longestSpacing(res.Series); d > 0 {
			return d, "sample spacing of up", nil
		}
		if sel == "" {
			break
		}
	}
	if terr == nil {
		terr = errors.New("no active target and no samples of up")
	}
	return 0, "", terr
}

// selectorOf is the braced form of a matcher list ("" for none).
func selectorOf(selector string) string {
	m, _ := selectorMatchers(selector)
	if m == "" {
		return ""
	}
	return "{" + m + "}"
}

// targetsInterval is the longest scrapeInterval of the active targets
// that the matchers can match.
func (c *Client) targetsInterval(ctx context.Context, ms []matcher) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/targets"
	u.RawQuery = "state=active"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, fmt.Errorf("prometheus %s: invalid request", c.safeURL)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("prometheus %s: targets: %s", c.safeURL, c.clean(err.Error()))
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			ActiveTargets []struct {
				Labels         map[string]string `json:"labels"`
				ScrapeInterval string            `json:"scrapeInterval"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&body); err != nil || body.Status != "success" {
		return 0, fmt.Errorf("prometheus %s: no targets API (HTTP %d)", c.safeURL, resp.StatusCode)
	}
	var longest time.Duration
	for _, t := range body.Data.ActiveTargets {
		if !matchesWhereLabeled(ms, t.Labels) {
			continue
		}
		d, err := pmodel.ParseDuration(t.ScrapeInterval)
		if err == nil && time.Duration(d) > longest {
			longest = time.Duration(d)
		}
	}
	return longest, nil
}

// longestSpacing is the longest, over series, of the median time between
// consecutive samples (0 when no series has two).
func longestSpacing(ss []Series) time.Duration {
	var longest int64
	for _, s := range ss {
		if len(s.Points) < 2 {
			continue
		}
		gaps := make([]int64, 0, len(s.Points)-1)
		for i := 1; i < len(s.Points); i++ {
			gaps = append(gaps, s.Points[i].T-s.Points[i-1].T)
		}
		slices.Sort(gaps)
		longest = max(longest, gaps[len(gaps)/2])
	}
	return time.Duration(longest) * time.Millisecond
}

// matcher is one label matcher of a selector.
type matcher struct {
	name, op string
	value    string
	re       *regexp.Regexp
}

var matcherRe = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)`)

// parseMatchers reads a matcher list such as `job="a", pod=~"b-.*"`.
func parseMatchers(selector string) ([]matcher, error) {
	s, err := selectorMatchers(selector)
	if err != nil {
		return nil, err
	}
	var out []matcher
	for strings.TrimSpace(s) != "" {
		m := matcherRe.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("promapi: selector %q: want label=\"value\" matchers", selector)
		}
		v, err := unquote(m[3])
		if err != nil {
			return nil, fmt.Errorf("promapi: selector %q: %v", selector, err)
		}
		mt := matcher{name: m[1], op: m[2], value: v}
		if mt.op == "=~" || mt.op == "!~" {
			if mt.re, err = regexp.Compile("^(?:" + v + ")$"); err != nil {
				return nil, fmt.Errorf("promapi: selector %q: %v", selector, err)
			}
		}
		out = append(out, mt)
		s = s[len(m[0]):]
	}
	return out, nil
}

func unquote(s string) (string, error) {
	var v string
	err := json.Unmarshal([]byte(`"`+s+`"`), &v)
	return v, err
}

// matchesWhereLabeled applies the matchers whose label the target has:
// the others select series labels that targets do not carry.
func matchesWhereLabeled(ms []matcher, labels map[string]string) bool {
	for _, m := range ms {
		v, ok := labels[m.name]
		if !ok {
			continue
		}
		var match bool
		switch m.op {
		case "=":
			match = v == m.value
		case "!=":
			match = v != m.value
		case "=~":
			match = m.re.MatchString(v)
		case "!~":
			match = !m.re.MatchString(v)
		}
		if !match {
			return false
		}
	}
	return true
}

// learnRange sets the source's range to twice the server's scrape
// interval, or to DefaultRange with a note for the server status when the
// server cannot tell (tried again every DetectEvery).
func (s *Source) learnRange(ctx context.Context, at time.Time) {
	s.rngTried = at
	d, how, err := s.client.ScrapeInterval(ctx, s.opts.Selector, at)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || d <= 0 {
		if s.rng == 0 {
			s.rng = DefaultRange
		}
		s.rngNote = fmt.Sprintf("scrape interval unknown (%v): increase() spans at least %s", err, s.rng)
		return
	}
	s.rng, s.rngKnown, s.rngNote = 2*d, true, ""
	s.opts.Logger.Info("prometheus range", "range", s.rng, "from", how)
}
