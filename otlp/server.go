package otlp

import (
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options configure a Receiver.
type Options struct {
	Limits
	// MaxBodyBytes bounds a request's body as sent (default 4 MiB);
	// MaxDecodedBytes after gzip (default 32 MiB, the scraper's body cap).
	MaxBodyBytes, MaxDecodedBytes int64
	// MaxPoints bounds the data points of one export (default 100,000).
	MaxPoints int
	// Token, when set, is the bearer token every export must carry.
	Token string
	// StaleAfter is how long after a resource's last export its
	// exposition answers 503, so its target shows down (default 5 min,
	// five of the SDKs' default export interval; negative: never).
	StaleAfter time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnRefuse, if set, is called with a sender's refusals after each
	// export refused, outside the receiver's lock.
	OnRefuse func(Refusal)
}

func (o Options) withDefaults() Options {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	if o.MaxDecodedBytes <= 0 {
		o.MaxDecodedBytes = 32 << 20
	}
	if o.MaxPoints <= 0 {
		o.MaxPoints = 100000
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = 5 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Receiver is the OTLP/HTTP endpoint (POST /v1/metrics) and, apart, what
// it holds as expositions for the scraper (Expositions).
type Receiver struct {
	opts  Options
	state *State

	mu      sync.Mutex
	refused map[string]int // per sender address
	last    map[string]string
	pushed  map[string]time.Time // per target, its last export
	changed chan struct{}        // closed when a resource appears, then replaced
}

// NewReceiver returns a receiver with an empty state.
func NewReceiver(opts Options) *Receiver {
	opts = opts.withDefaults()
	return &Receiver{opts: opts, state: NewState(opts.Limits), refused: map[string]int{}, last: map[string]string{}, pushed: map[string]time.Time{}, changed: make(chan struct{})}
}

// Changed is closed when a resource appears after the call: a reader
// takes the targets again, then waits on a new Changed.
func (r *Receiver) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

func (r *Receiver) announce() {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.changed)
	r.changed = make(chan struct{})
}

// State is what the receiver holds.
func (r *Receiver) State() *State { return r.state }

// MetricsPath is where the scraper reads target's exposition. '@' is
// escaped too: after a URL's path it would name a dialect
// (scrape.ParseTarget).
func MetricsPath(target string) string {
	return "/metrics/" + strings.ReplaceAll(url.PathEscape(target), "@", "%40")
}

// Refused is, per sender address, the exports refused and the last
// reason, sorted by address.
func (r *Receiver) Refused() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Refusal, 0, len(r.refused))
	for addr, n := range r.refused {
		out = append(out, Refusal{Sender: addr, Count: n, Last: r.last[addr]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Sender < out[j].Sender })
	return out
}

// Refusal counts one sender's refused exports.
type Refusal struct {
	Sender string
	Count  int
	Last   string
}

// ServeHTTP takes exports: POST /v1/metrics, nothing else. What was
// pushed is read through Expositions, on a listener of its own, so a
// sender never reads another's metrics.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/metrics" {
		http.NotFound(w, req)
		return
	}
	r.export(w, req)
}

// Expositions serves GET /metrics/TARGET (MetricsPath): a resource's
// exposition, for the scraper.
func (r *Receiver) Expositions() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet || !strings.HasPrefix(req.URL.Path, "/metrics/") {
			http.NotFound(w, req)
			return
		}
		name, err := url.PathUnescape(strings.TrimPrefix(req.URL.EscapedPath(), "/metrics/"))
		body, ok := r.state.Exposition(name)
		if err != nil || !ok {
			http.Error(w, "no export named this resource", http.StatusNotFound)
			return
		}
		if since := r.sincePush(name); r.opts.StaleAfter > 0 && since > r.opts.StaleAfter {
			http.Error(w, fmt.Sprintf("no export from this resource for %s", since.Round(time.Second)), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(body)
	})
}

// sincePush is the time since target's last export.
func (r *Receiver) sincePush(target string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.opts.Now().Sub(r.pushed[target])
}

// export takes one POST /v1/metrics.
func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	sender, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		sender = req.RemoteAddr
	}
	status, err := r.take(req, sender)
	if err != nil {
		r.mu.Lock()
		r.refused[sender]++
		r.last[sender] = err.Error()
		ref := Refusal{Sender: sender, Count: r.refused[sender], Last: err.Error()}
		r.mu.Unlock()
		if r.opts.OnRefuse != nil {
			r.opts.OnRefuse(ref)
		}
		http.Error(w, err.Error(), status)
		return
	}
	if isJSON(req.Header.Get("Content-Type")) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty ExportMetricsServiceResponse
}

func isJSON(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "application/json"
}

// take reads, decodes and applies one export; the status says why not.
func (r *Receiver) take(req *http.Request, sender string) (int, error) {
	if req.Method != http.MethodPost {
		return http.StatusMethodNotAllowed, fmt.Errorf("method %s: exports are POSTed", req.Method)
	}
	if r.opts.Token != "" {
		got, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(r.opts.Token)) != 1 {
			return http.StatusUnauthorized, errors.New("missing or wrong bearer token")
		}
	}
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if mt != "application/x-protobuf" && mt != "application/json" {
		return http.StatusUnsupportedMediaType, fmt.Errorf("content type %q: want application/x-protobuf or application/json", mt)
	}
	body, status, err := r.read(req)
	if err != nil {
		return status, err
	}
	var ex *Export
	if mt == "application/json" {
		ex, err = DecodeJSON(body, r.opts.MaxPoints)
	} else {
		ex, err = DecodeProto(body, r.opts.MaxPoints)
	}
	if err != nil {
		if errors.Is(err, errTooMany) {
			return http.StatusRequestEntityTooLarge, err
		}
		return http.StatusBadRequest, fmt.Errorf("malformed export: %w", err)
	}
	added, err := r.state.Apply(ex, sender)
	switch {
	case errors.Is(err, ErrLimit):
		return http.StatusRequestEntityTooLarge, err
	case err != nil:
		return http.StatusBadRequest, fmt.Errorf("export contradicts what was pushed: %w", err)
	}
	now := r.opts.Now()
	r.mu.Lock()
	for _, res := range ex.Resources {
		r.pushed[TargetName(res.Attrs)] = now
	}
	r.mu.Unlock()
	if added {
		r.announce()
	}
	return http.StatusOK, nil
}

// read is the body, gunzipped, within both limits.
func (r *Receiver) read(req *http.Request) ([]byte, int, error) {
	raw, err := io.ReadAll(io.LimitReader(req.Body, r.opts.MaxBodyBytes+1))
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("reading the body: %w", err)
	}
	if int64(len(raw)) > r.opts.MaxBodyBytes {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d bytes", r.opts.MaxBodyBytes)
	}
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "", "identity":
		return raw, http.StatusOK, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("gzip: %w", err)
		}
		body, err := io.ReadAll(io.LimitReader(zr, r.opts.MaxDecodedBytes+1))
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("gzip: %w", err)
		}
		if int64(len(body)) > r.opts.MaxDecodedBytes {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d bytes once decompressed", r.opts.MaxDecodedBytes)
		}
		return body, http.StatusOK, nil
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("content encoding %q: want gzip or none", enc)
	}
}
