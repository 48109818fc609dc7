// Package promapi reads the metric contract from a Prometheus-compatible
// HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics) instead of
// scraping targets: every family is aggregated server-side with PromQL,
// one query per flat series name per refresh, and the results are turned
// into model.Snapshots so that analysis has one code path for scrapes,
// dumps and Prometheus. See docs/prometheus.md.
package promapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/config"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// DefaultTimeout bounds one query when ClientConfig.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// maxBody caps a response body: 64 MiB.
const maxBody = 64 << 20

// ClientConfig configures a Client.
type ClientConfig struct {
	// URL is the server's base address (http://prometheus:9090, or a
	// path prefix such as https://mimir/prometheus). Credentials in it
	// are used but never shown.
	URL string
	// HTTP configures auth, TLS and proxy as in prometheus.yml.
	HTTP config.HTTPClientConfig
	// Timeout bounds one query, client side and as the server's timeout
	// parameter (default DefaultTimeout).
	Timeout time.Duration
	// UserAgent is sent with every request (default "retrytop").
	UserAgent string
}

// Client queries /api/v1/query and /api/v1/query_range.
type Client struct {
	base    *url.URL
	safeURL string
	secrets []string
	http    *http.Client
	timeout time.Duration
	// vm: the server is VictoriaMetrics (DetectBackend).
	vm atomic.Bool
}

// NewClient checks cfg and builds the HTTP client.
func NewClient(cfg ClientConfig) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(cfg.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q: want http(s)://host[:port][/prefix]", scrape.SafeURL(cfg.URL))
	}
	c := &Client{base: u, safeURL: scrape.SafeURL(cfg.URL), timeout: cfg.Timeout}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			c.secrets = append(c.secrets, p)
		}
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = scrape.DefaultUserAgent
	}
	if err := cfg.HTTP.Validate(); err != nil {
		return nil, fmt.Errorf("prometheus %s: HTTP settings: %w", c.safeURL, err)
	}
	if c.http, err = config.NewClientFromConfig(cfg.HTTP, "prometheus", config.WithUserAgent(cfg.UserAgent)); err != nil {
		return nil, fmt.Errorf("prometheus %s: HTTP settings: %w", c.safeURL, err)
	}
	return c, nil
}

// URL is the server's address without credentials, for display.
func (c *Client) URL() string { return c.safeURL }

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Series is one result series: its labels and its samples, oldest first.
// A vector result has one point per series. Values may be NaN or ±Inf as
// the server sent them.
type Series struct {
	Labels model.Labels
	Points []model.Point
}

// Result is a decoded query result.
type Result struct {
	Type     string // "vector", "matrix" (or "scalar", "string": no series)
	Series   []Series
	Warnings []string // sanitised
}

// APIError is an error the server reported: its errorType and error text,
// sanitised, verbatim otherwise.
type APIError struct {
	Status int    // HTTP status
	Type   string // errorType: bad_data, execution, timeout, canceled, internal, unavailable...
	Msg    string
}

func (e *APIError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("HTTP %d: %s", e.Status, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Type, e.Msg)
}

// Query evaluates promql at t (/api/v1/query).
//
// On VictoriaMetrics the query carries nocache=1: without it a time
// within its -search.latencyOffset (30s) of now is evaluated that much
// earlier, the results stamped with the time asked for.
func (c *Client) Query(ctx context.Context, promql string, t time.Time) (Result, error) {
	v := url.Values{"query": {promql}, "time": {formatTime(t)}, "timeout": {dialect.PromDuration(c.timeout)}}
	if c.vm.Load() {
		v.Set("nocache", "1")
	}
	return c.do(ctx, "/api/v1/query", v)
}

// QueryRange evaluates promql from start to end every step
// (/api/v1/query_range).
//
// On VictoriaMetrics the query carries nocache=1 (without it start and
// end are moved to multiples of the step, off the grid asked for), and
// a range ending near now is extended past the server's now and cut back
// to end (vmRange): VictoriaMetrics would rewrite its newest points.
func (c *Client) QueryRange(ctx context.Context, promql string, start, end time.Time, step time.Duration) (Result, error) {
	sendEnd, cut := end, false
	v := url.Values{"query": {promql}, "start": {formatTime(start)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}, "timeout": {dialect.PromDuration(c.timeout)}}
	if c.vm.Load() {
		v.Set("nocache", "1")
		sendEnd, cut = vmRange(end, step, time.Now())
	}
	v.Set("end", formatTime(sendEnd))
	res, err := c.do(ctx, "/api/v1/query_range", v)
	if err == nil && cut {
		dropAfter(&res, end.UnixMilli())
	}
	return res, err
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// do POSTs the form (long queries fit), falling back to GET when the
// server or a proxy refuses POST.
func (c *Client) do(ctx context.Context, path string, form url.Values) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	res, status, err := c.send(ctx, http.MethodPost, u, form)
	if err == nil && (status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented) {
		res, _, err = c.send(ctx, http.MethodGet, u, form)
	}
	return res, err
}

func (c *Client) send(ctx context.Context, method string, u url.URL, form url.Values) (Result, int, error) {
	var body io.Reader
	if method == http.MethodGet {
		u.RawQuery = form.Encode()
	} else {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return Result{}, 0, fmt.Errorf("prometheus %s: invalid request", c.safeURL)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Result{}, 0, fmt.Errorf("prometheus %s: query timed out after %s", c.safeURL, c.timeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Result{}, 0, fmt.Errorf("prometheus %s: %s", c.safeURL, c.clean(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented {
		return Result{}, resp.StatusCode, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Result{}, 0, fmt.Errorf("prometheus %s: query timed out after %s", c.safeURL, c.timeout)
		}
		return Result{}, 0, fmt.Errorf("prometheus %s: reading response: %s", c.safeURL, c.clean(err.Error()))
	}
	if len(b) > maxBody {
		return Result{}, 0, fmt.Errorf("prometheus %s: response exceeds %d MiB", c.safeURL, maxBody>>20)
	}
	res, err := Decode(resp.StatusCode, b)
	if err != nil {
		return res, resp.StatusCode, fmt.Errorf("prometheus %s: %w", c.safeURL, err)
	}
	return res, resp.StatusCode, nil
}

func (c *Client) clean(s string) string {
	for _, sec := range c.secrets {
		s = strings.ReplaceAll(s, sec, "xxxxx")
	}
	return safetext.Terminal(s)
}

// response is the API's envelope.
type response struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

type resultData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

type apiSeries struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`  // vector: [ts, "v"]
	Values [][]any           `json:"values"` // matrix: [[ts, "v"], ...]
}

// Decode reads one API response with its HTTP status. An error envelope
// (status "error") becomes an *APIError with the server's text sanitised;
// a body that is not the API's JSON (a proxy's error page) an error naming
// the HTTP status. Warnings are returned with a successful result.
func Decode(status int, body []byte) (Result, error) {
	var r response
	if err := json.Unmarshal(body, &r); err != nil || r.Status == "" {
		if status != http.StatusOK {
			return Result{}, &APIError{Status: status, Msg: safetext.TerminalN(strings.TrimSpace(string(body)), 200)}
		}
		return Result{}, fmt.Errorf("response is not a Prometheus API result")
	}
	res := Result{}
	for _, w := range r.Warnings {
		res.Warnings = append(res.Warnings, safetext.Terminal(w))
	}
	if r.Status != "success" {
		return res, &APIError{Status: status, Type: safetext.Terminal(r.ErrorType), Msg: safetext.Terminal(r.Error)}
	}
	var d resultData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return res, fmt.Errorf("decoding data: %w", err)
	}
	res.Type = d.ResultType
	switch d.ResultType {
	case "vector", "matrix":
	default:
		return res, nil
	}
	var ss []apiSeries
	if err := json.Unmarshal(d.Result, &ss); err != nil {
		return res, fmt.Errorf("decoding %s: %w", d.ResultType, err)
	}
	res.Series = make([]Series, 0, len(ss))
	for _, s := range ss {
		out := Series{Labels: model.LabelsFromMap(s.Metric)}
		pairs := s.Values
		if d.ResultType == "vector" {
			pairs = [][]any{s.Value}
		}
		for _, p := range pairs {
			pt, err := decodePoint(p)
			if err != nil {
				return res, fmt.Errorf("decoding %s: %w", d.ResultType, err)
			}
			out.Points = append(out.Points, pt)
		}
		res.Series = append(res.Series, out)
	}
	return res, nil
}

// decodePoint reads [1435781451.781, "1"]; the value may be "NaN",
// "+Inf" or "-Inf".
func decodePoint(p []any) (model.Point, error) {
	if len(p) != 2 {
		return model.Point{}, fmt.Errorf("sample %v: want [time, \"value\"]", p)
	}
	ts, ok := p[0].(float64)
	vs, ok2 := p[1].(string)
	if !ok || !ok2 {
		return model.Point{}, fmt.Errorf("sample %v: want [time, \"value\"]", p)
	}
	v, err := model.ParseFloat(vs)
	if err != nil {
		return model.Point{}, fmt.Errorf("sample value %q: not a number", safetext.TerminalN(vs, 40))
	}
	return model.Point{T: int64(math.Round(ts * 1000)), V: v}, nil
}
