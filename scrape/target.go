package scrape

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/retrytop/retrytop/internal/safetext"

	"github.com/prometheus/common/config"
)

// DefaultInterval is the scrape interval of a target that sets none.
const DefaultInterval = time.Second

// maxNameLen bounds target names, which are shown on screen and key the store.
const maxNameLen = 128

// MaxNameLen is the longest target name in bytes; discovery shortens the
// names it derives to fit.
const MaxNameLen = maxNameLen

// Target is one endpoint to scrape.
type Target struct {
	// Name identifies the target in snapshots, the store and on screen; it
	// must be unique within a Scraper. Empty means the URL's host:port.
	Name string
	// URL is the http or https address of the exposition. Credentials in
	// it are used but never shown (see SafeURL).
	URL string
	// Layer optionally groups targets for display (e.g. "edge", "app").
	Layer string
	// Dialect forces how the target's exposition is read (e.g. "envoy",
	// see dialect); empty means detected from the exposition.
	// Only used when Options.Translate is set.
	Dialect string
	// Interval between scrapes; zero means DefaultInterval.
	Interval time.Duration
	// Timeout of one scrape; zero means Interval. A scrape that takes
	// longer than Interval delays the next one: ticks are dropped, never
	// queued.
	Timeout time.Duration
	// HTTP configures authentication, TLS, proxy and redirects exactly as
	// a scrape config's HTTP settings in prometheus.yml. Its zero value
	// follows no redirects and speaks HTTP/1.1 only; ParseTarget starts
	// from config.DefaultHTTPClientConfig instead.
	HTTP config.HTTPClientConfig
}

// ParseTarget reads a target given as "URL", "name=URL", "URL@dialect" or
// "name=URL@dialect", as on the command line. The name defaults to the URL's
// host:port (with the scheme's default port when the URL has none). A
// dialect suffix is an '@' after the URL's authority (so after a path:
// "http://h:9901/stats/prometheus@envoy") followed by a dialect name
// (letters, digits, '_', '-', '.'); an '@' inside the authority is user
// information as usual. The HTTP settings are
// config.DefaultHTTPClientConfig. Errors never show credentials.
func ParseTarget(s string) (Target, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Target{}, fmt.Errorf("target: empty; want URL or name=URL")
	}
	var name, raw string
	eq := strings.IndexByte(s, '=')
	sep := strings.Index(s, "://")
	if eq >= 0 && (sep < 0 || eq < sep) {
		name, raw = strings.TrimSpace(s[:eq]), strings.TrimSpace(s[eq+1:])
		if name == "" {
			return Target{}, fmt.Errorf("target %q: empty name before '='; want name=URL", SafeURL(s))
		}
	} else {
		raw = s
	}
	raw, dialect := splitDialect(raw)
	t := Target{Name: name, URL: raw, Dialect: dialect, HTTP: config.DefaultHTTPClientConfig}
	return t.normalize()
}

// splitDialect cuts a trailing "@dialect" after the URL's authority.
func splitDialect(raw string) (url, dialect string) {
	at := strings.LastIndexByte(raw, '@')
	if at < 0 {
		return raw, ""
	}
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + 3
	}
	authEnd := strings.IndexAny(raw[start:], "/?#")
	if authEnd < 0 || at < start+authEnd {
		return raw, "" // no path: the '@' is user information
	}
	d := raw[at+1:]
	if d == "" || !validDialectName(d) {
		return raw, ""
	}
	return strings.TrimSpace(raw[:at]), d
}

func validDialectName(s string) bool {
	if len(s) > 64 {
		return false
	}
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// Normalize validates the target and fills in its defaults as NewScraper
// does (name from the URL, interval, timeout), so that code building
// targets (discovery) can report a bad one before it reaches a scraper.
// HTTP is left as given.
func (t Target) Normalize() (Target, error) { return t.normalize() }

// normalize validates the target and fills in its defaults; its errors
// name the target (settle's do not).
func (t Target) normalize() (Target, error) {
	nt, err := t.settle()
	var ne *nameError
	if err != nil && t.Name != "" && !errors.As(err, &ne) {
		err = fmt.Errorf("target %q: %w", truncate(t.Name, maxNameLen), err)
	}
	return nt, err
}

// nameError is what is wrong with a target's name: it names the name.
type nameError struct{ msg string }

func (e *nameError) Error() string { return e.msg }

// settle validates the target and fills in its defaults. Its errors do
// not name the target, for its status, which does (but for a bad name).
func (t Target) settle() (Target, error) {
	u, err := parseScrapeURL(t.URL)
	if err != nil {
		return t, err
	}
	if t.Name == "" {
		t.Name = hostPort(u)
	}
	if err := checkName(t.Name); err != nil {
		return t, err
	}
	if t.Interval < 0 || t.Timeout < 0 {
		return t, errors.New("negative interval or timeout")
	}
	if t.Interval == 0 {
		t.Interval = DefaultInterval
	}
	return t, nil
}

// ScrapeTimeout is how long one scrape of t may take: Timeout, or the
// interval when Timeout is zero. It is read at each scrape, so it follows
// the interval wherever that was set (flag, config, discovery) after the
// target was parsed. The readers of user input cut a timeout longer than
// the interval to the interval (config, discovery).
func (t Target) ScrapeTimeout() time.Duration {
	if t.Timeout > 0 {
		return t.Timeout
	}
	return t.Interval
}

// parseScrapeURL checks that raw is an absolute http(s) URL with a host.
func parseScrapeURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, fmt.Errorf("target: empty URL")
	}
	if !strings.Contains(raw, "://") {
		// host:port, as people copy it from a pod or a docker ps line.
		if h, p, err := net.SplitHostPort(raw); err == nil && h != "" && p != "" {
			return nil, fmt.Errorf("target URL %q: missing scheme; did you mean http://%s/metrics?", SafeURL(raw), SafeURL(raw))
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the raw URL, credentials included: say it our way.
		return nil, fmt.Errorf("target URL %q: not a valid URL", SafeURL(raw))
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return nil, fmt.Errorf("target URL %q: missing scheme; want http:// or https://", SafeURL(raw))
	default:
		return nil, fmt.Errorf("target URL %q: scheme %q not supported; want http or https", SafeURL(raw), safetext.Terminal(u.Scheme))
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("target URL %q: missing host", SafeURL(raw))
	}
	return u, nil
}

// truncate cuts s to at most n bytes (possibly inside a rune: callers
// quote the result with %q, which escapes the broken rune).
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if strings.EqualFold(u.Scheme, "https") {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

func checkName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return &nameError{"target: empty name"}
	case len(name) > maxNameLen:
		return &nameError{fmt.Sprintf("target %q: name longer than %d bytes", truncate(name, maxNameLen), maxNameLen)}
	case safetext.Terminal(name) != name || strings.ContainsAny(name, "\"\\"):
		// %q escapes what Sanitize would, so the raw name is safe here.
		return &nameError{fmt.Sprintf("target %q: name contains control, quote or invalid characters", name)}
	}
	return nil
}

// SafeURL returns raw fit for display: user information (user name and
// password) and fragment removed, then sanitised. It works on strings that
// do not parse as URLs too.
func SafeURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		u.User = nil
		u.Fragment, u.RawFragment = "", ""
		return safetext.Terminal(u.String())
	}
	// Unparseable or without a host: cut everything up to the last '@'
	// of the authority by hand.
	s, prefix := raw, ""
	if i := strings.Index(s, "//"); i >= 0 {
		prefix, s = s[:i+2], s[i+2:]
	}
	end := strings.IndexAny(s, "/?#")
	if end < 0 {
		end = len(s)
	}
	if at := strings.LastIndexByte(s[:end], '@'); at >= 0 {
		s = s[at+1:]
	}
	s = prefix + s
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	return safetext.Terminal(s)
}

// redact replaces every secret longer than two bytes in msg by "<secret>".
// Shorter ones would mangle ordinary words and protect nothing.
func redact(msg string, secrets []string) string {
	for _, s := range secrets {
		if len(s) > 2 && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "<secret>")
		}
	}
	return msg
}

// inlineSecrets lists the secrets of t that are known in memory, so that
// errors can be scrubbed of them. Secrets read from files are never in
// memory here; prometheus/common keeps them out of its errors.
func inlineSecrets(t Target) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s, url.QueryEscape(s), url.PathEscape(s))
		}
	}
	if u, err := url.Parse(t.URL); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		add(u.User.String())
	}
	h := t.HTTP
	if h.BasicAuth != nil {
		add(string(h.BasicAuth.Password))
	}
	if h.Authorization != nil {
		add(string(h.Authorization.Credentials))
	}
	add(string(h.BearerToken))
	if h.OAuth2 != nil {
		add(string(h.OAuth2.ClientSecret))
		add(string(h.OAuth2.ClientCertificateKey))
	}
	add(string(h.TLSConfig.Key))
	if h.HTTPHeaders != nil {
		for _, hd := range h.HTTPHeaders.Headers {
			for _, v := range hd.Secrets {
				add(string(v))
			}
		}
	}
	return out
}

// ParseChainFlag reads --chain name=URL,name=URL,...: the targets of one
// chain in order. It returns the targets and their names.
func ParseChainFlag(s string) ([]Target, []string, error) {
	var targets []Target
	var names []string
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		t, err := ParseTarget(part)
		if err != nil {
			return nil, nil, fmt.Errorf("--chain: %w", err)
		}
		targets = append(targets, t)
		names = append(names, t.Name)
	}
	if len(targets) < 1 {
		return nil, nil, fmt.Errorf("--chain: want name=URL,name=URL,... from the user-facing layer down")
	}
	return targets, names, nil
}
