package promapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/retrytop/retrytop/internal/safetext"
)

// Backend names.
const (
	BackendPrometheus      = "prometheus"
	BackendVictoriaMetrics = "victoriametrics"
	// BackendUnknown: the server answered but its build info names no
	// backend retrytop knows; it is queried as Prometheus.
	BackendUnknown = "unknown"
)

// vmRecentSpan is how close to now a query_range must end for
// VictoriaMetrics to rewrite its last points (its -search.latencyOffset,
// 30s by default, sets the span; this covers offsets up to 5 minutes).
const vmRecentSpan = 5 * time.Minute

// vmClockMargin is how much later than the client's clock the server's
// may run (clock skew, a slow request) while a range query is still
// extended past the server's now (QueryRange).
const vmClockMargin = time.Minute

// Backend is the server behind the API, read from its build info
// (Client.DetectBackend).
type Backend struct {
	Name    string // BackendPrometheus, BackendVictoriaMetrics, BackendUnknown, or the application the build info names
	Version string // "" when the server does not say
}

// String is "victoriametrics 1.79.5", or the name alone without a
// version.
func (b Backend) String() string {
	if b.Version == "" {
		return b.Name
	}
	return b.Name + " " + b.Version
}

// errNoAnswer marks a request the server did not answer at all (a
// timeout, a refused connection).
var errNoAnswer = errors.New("no answer")

// DetectBackend reads /api/v1/status/buildinfo. Prometheus (and servers
// built on its code: Thanos, Mimir) fills it with version, revision and
// Go version; VictoriaMetrics answers it empty, or with a Prometheus
// version it only pretends to (for Grafana), so a build info without a
// revision is checked against VictoriaMetrics' own status endpoint
// (/api/v1/status/top_queries), and its version read from its
// vm_app_version metric when the URL has no path prefix (a single node).
// The client then queries VictoriaMetrics as its semantics need
// (Client.Query, Client.QueryRange). An error wraps errNoAnswer when the
// server did not answer.
func (c *Client) DetectBackend(ctx context.Context) (Backend, error) {
	body, status, err := c.get(ctx, "/api/v1/status/buildinfo", nil)
	if err != nil {
		return Backend{}, err
	}
	var info struct {
		Status string         `json:"status"`
		Data   map[string]any `json:"data"`
	}
	if status == http.StatusOK && json.Unmarshal(body, &info) == nil && info.Status == "success" {
		str := func(k string) string {
			s, _ := info.Data[k].(string)
			return safetext.TerminalN(s, 60)
		}
		if str("revision") != "" || str("goVersion") != "" {
			b := Backend{Name: BackendPrometheus, Version: str("version")}
			if app := str("application"); app != "" {
				b.Name = strings.ToLower(app)
			}
			c.setBackend(b)
			return b, nil
		}
	}
	b := Backend{Name: BackendUnknown}
	if c.isVictoriaMetrics(ctx) {
		b = Backend{Name: BackendVictoriaMetrics, Version: c.vmVersion(ctx)}
	}
	c.setBackend(b)
	return b, nil
}

func (c *Client) setBackend(b Backend) { c.vm.Store(b.Name == BackendVictoriaMetrics) }

// isVictoriaMetrics asks for VictoriaMetrics' own status of the
// heaviest queries, which Prometheus does not have.
func (c *Client) isVictoriaMetrics(ctx context.Context) bool {
	body, status, err := c.get(ctx, "/api/v1/status/top_queries", url.Values{"topN": {"1"}})
	if err != nil || status != http.StatusOK {
		return false
	}
	var tq struct {
		TopByCount *json.RawMessage `json:"topByCount"`
	}
	return json.Unmarshal(body, &tq) == nil && tq.TopByCount != nil
}

// vmVersion reads short_version of vm_app_version from the server's
// /metrics ("v1.79.5" -> "1.79.5"), "" when the URL has a path prefix
// (a cluster's vmselect), the page cannot be read or the build does not
// say (a distribution's build may leave it empty).
func (c *Client) vmVersion(ctx context.Context) string {
	if strings.Trim(c.base.Path, "/") != "" {
		return ""
	}
	body, status, err := c.get(ctx, "/metrics", nil)
	if err != nil || status != http.StatusOK {
		return ""
	}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "vm_app_version{") {
			continue
		}
		_, rest, ok := strings.Cut(line, `short_version="`)
		if !ok {
			return ""
		}
		v, _, _ := strings.Cut(rest, `"`)
		return safetext.TerminalN(strings.TrimPrefix(v, "v"), 40)
	}
	return ""
}

// maxStatusBody caps a status page read by DetectBackend: 4 MiB.
const maxStatusBody = 4 << 20

// get GETs path under the base URL and returns the body (capped) and the
// HTTP status.
func (c *Client) get(ctx context.Context, path string, q url.Values) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, fmt.Errorf("prometheus %s: invalid request", c.safeURL)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, 0, fmt.Errorf("prometheus %s: %w: timed out after %s", c.safeURL, errNoAnswer, c.timeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, 0, fmt.Errorf("prometheus %s: %w: %s", c.safeURL, errNoAnswer, c.clean(err.Error()))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	if err != nil {
		return nil, resp.StatusCode, nil // answered; the page is unusable
	}
	return b, resp.StatusCode, nil
}

// vmRange adjusts a query_range for VictoriaMetrics: it returns the end
// to send and whether points after the end asked for must be dropped.
//
// VictoriaMetrics (with a step under its -search.maxStepForPointsAdjustment,
// 1m by default) replaces the points of a range query newer than its
// -search.latencyOffset (30s by default) with the value before them, as
// possibly incomplete: a window ending now would read its last 30 s flat.
// It leaves a series alone when the query's grid reaches past its now
// plus a step (taken for a query with offset). So a range ending within
// vmRecentSpan of now is extended to a whole number of steps past
// now + step + vmClockMargin, and the points past the end asked for
// (evaluated in the future, meaningless) are dropped.
func vmRange(end time.Time, step time.Duration, now time.Time) (time.Time, bool) {
	if end.Before(now.Add(-vmRecentSpan)) || step <= 0 {
		return end, false
	}
	want := now.Add(step + vmClockMargin)
	n := (want.Sub(end) + step) / step
	return end.Add(time.Duration(n) * step), true
}

// dropAfter removes the points after end (ms) from every series, and the
// series left without points.
func dropAfter(res *Result, end int64) {
	out := res.Series[:0]
	for _, s := range res.Series {
		k := len(s.Points)
		for k > 0 && s.Points[k-1].T > end {
			k--
		}
		if k > 0 {
			s.Points = s.Points[:k]
			out = append(out, s)
		}
	}
	res.Series = out
}
