package scrape

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/config"

	"github.com/retrytop/retrytop/internal/expotest"
	"github.com/retrytop/retrytop/model"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// stepClock returns a clock that starts at t0 and advances a second per
// call, so successive scrapes get increasing timestamps.
func stepClock() func() time.Time {
	var n atomic.Int64
	return func() time.Time { return t0.Add(time.Duration(n.Add(1)-1) * time.Second) }
}

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func exposition(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write([]byte(body))
	}
}

const smallBody = "# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"db\"} 7\n"

// target is a test target scraped every second. Its timeout is long: a
// loopback answer can take seconds beside a CPU hog under -race, and the
// tests that are about timeouts set their own.
func target(name, url string) Target {
	return Target{Name: name, URL: url, Interval: time.Second, Timeout: 30 * time.Second, HTTP: config.DefaultHTTPClientConfig}
}

func statusOf(t *testing.T, sts []model.TargetStatus, name string) model.TargetStatus {
	t.Helper()
	for _, st := range sts {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no status for %q in %+v", name, sts)
	return model.TargetStatus{}
}

func TestScrapeOnceStoresSnapshot(t *testing.T) {
	var accept, encoding, timeout string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		accept, encoding = r.Header.Get("Accept"), r.Header.Get("Accept-Encoding")
		timeout = r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds")
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write(readFixture(t, "text_good.prom"))
	})
	store := model.NewStore(model.StoreConfig{})
	s := NewScraper([]Target{{URL: srv.URL + "/metrics", Layer: "app", Interval: 2 * time.Second, Timeout: 1500 * time.Millisecond}}, store, Options{Clock: stepClock()})
	sts := s.ScrapeOnce(t.Context())

	name := strings.TrimPrefix(srv.URL, "http://") // defaults to host:port
	st := statusOf(t, sts, name)
	if !st.Up || st.LastError != "" || st.Scrapes != 1 || st.Failures != 0 {
		t.Fatalf("status = %+v, want up after one scrape", st)
	}
	if !st.LastSuccess.Equal(t0) || !st.LastScrape.Equal(t0) || st.Layer != "app" || st.URL != srv.URL+"/metrics" {
		t.Errorf("status = %+v", st)
	}
	// 1 gauge + 2 counters + summary (2 quantiles, sum, count) + histogram (3 buckets, sum, count) + 1 untyped
	if st.Series != 1+2+4+5+1 {
		t.Errorf("series = %d, want 13", st.Series)
	}
	// A loopback target is asked for its body uncompressed (TestAcceptEncoding).
	if accept != DefaultAcceptHeader || encoding != "identity" || timeout != "1.5" {
		t.Errorf("request headers: Accept %q, Accept-Encoding %q, timeout %q", accept, encoding, timeout)
	}
	got := store.Select(name, "retry_originals_total", nil)
	if len(got) != 2 || got[0].Points[0].V != 50 || got[0].Points[0].T != t0.UnixMilli() {
		t.Errorf("stored series = %+v", got)
	}
	if got := store.Select(name, "retry_request_duration_seconds_bucket", nil); len(got) != 3 {
		t.Errorf("stored buckets = %d series, want 3", len(got))
	}
}

// toServer carries every request to srv whatever host its URL names, so
// that a test target can have a name that is not loopback.
type toServer struct{ srv *httptest.Server }

func (ts toServer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Host = strings.TrimPrefix(ts.srv.URL, "http://")
	return ts.srv.Client().Transport.RoundTrip(r)
}

func TestScrapeGzip(t *testing.T) {
	body := readFixture(t, "text_good.prom")
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			http.Error(w, "want gzip", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", ctText)
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = zw.Write(body)
		_ = zw.Close()
	})
	// Not loopback by name, so gzip is asked for.
	s := NewScraper([]Target{target("gz", "http://metrics.example:9100/metrics")}, nil, Options{Clock: stepClock(), Transport: toServer{srv}})
	for i := 0; i < 2; i++ { // the second scrape reuses the gzip reader
		st := s.ScrapeOnce(t.Context())[0]
		if !st.Up || st.Series != 13 {
			t.Fatalf("scrape %d: status = %+v", i, st)
		}
	}
	if n := len(s.Store().Times("gz")); n != 2 {
		t.Errorf("store has %d scrapes, want 2", n)
	}
}

// TestAcceptEncoding: a loopback target is asked for identity (compression
// costs both processes CPU and saves no bandwidth there), any other for
// gzip; a gzipped answer to either is read.
func TestAcceptEncoding(t *testing.T) {
	body := readFixture(t, "text_good.prom")
	var asked atomic.Value
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		asked.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Type", ctText)
		w.Header().Set("Content-Encoding", "gzip") // whatever was asked
		zw := gzip.NewWriter(w)
		_, _ = zw.Write(body)
		_ = zw.Close()
	})
	for _, tc := range []struct {
		url, want string
	}{
		{"http://127.0.0.1:9100/metrics", "identity"},
		{"http://127.9.8.7:9100/metrics", "identity"},
		{"http://[::1]:9100/metrics", "identity"},
		{"http://localhost:9100/metrics", "identity"},
		{"http://app.localhost:9100/metrics", "identity"},
		{"http://[::ffff:127.0.0.1]:9100/metrics", "identity"},
		{"http://10.0.0.5:9100/metrics", "gzip"},
		{"http://metrics.example:9100/metrics", "gzip"},
		{"http://localhost.example:9100/metrics", "gzip"},
		{"http://[2001:db8::1]:9100/metrics", "gzip"},
	} {
		s := NewScraper([]Target{target("t", tc.url)}, nil, Options{Clock: stepClock(), Transport: toServer{srv}})
		st := s.ScrapeOnce(t.Context())[0]
		if got, _ := asked.Load().(string); got != tc.want || !st.Up || st.Series != 13 {
			t.Errorf("%s: Accept-Encoding %q (want %q), status %+v", tc.url, got, tc.want, st)
		}
	}
}

func TestScrapeBodyLimit(t *testing.T) {
	big := "# TYPE m gauge\n" + strings.Repeat("m{pad=\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"} 1\n", 100) // > 1 KiB
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"declared", exposition(big), "body exceeds the body limit of 1 KiB"},
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctText)
			for i := 0; i < 10; i++ {
				_, _ = w.Write([]byte(big[:len(big)/10]))
				w.(http.Flusher).Flush()
			}
		}, "body exceeds the body limit of 1 KiB"},
		{"gzipbomb", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			_, _ = zw.Write(bytes.Repeat([]byte("# comment\n"), 100000)) // 1 MB that compresses to ~2 KB
			_ = zw.Close()
		}, "body exceeds the body limit of 1 KiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc.handler)
			s := NewScraper([]Target{target(tc.name, srv.URL)}, nil, Options{BodyLimit: 1024})
			st := s.ScrapeOnce(t.Context())[0]
			if want := "GET " + srv.URL + ": " + tc.want; st.Up || st.LastError != want {
				t.Fatalf("status = %+v, want down with %q", st, want)
			}
		})
	}
}

func TestDeadTargetDoesNotStopOthers(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL + "/metrics"
	dead.Close() // nothing listens there any more
	live := serve(t, exposition(smallBody))

	s := NewScraper([]Target{target("dead", deadURL), target("live", live.URL)}, nil, Options{Clock: stepClock()})
	for i := 0; i < 3; i++ {
		s.ScrapeOnce(t.Context())
	}
	sts := s.Statuses()
	if sts[0].Name != "dead" || sts[1].Name != "live" {
		t.Fatalf("statuses not in target order: %+v", sts)
	}
	d := sts[0]
	if d.Up || d.Scrapes != 3 || d.Failures != 3 || !d.LastSuccess.IsZero() {
		t.Errorf("dead status = %+v", d)
	}
	if !strings.HasPrefix(d.LastError, "GET "+deadURL+": ") || !strings.Contains(d.LastError, "refused") {
		t.Errorf("dead error = %q", d.LastError)
	}
	l := sts[1]
	if !l.Up || l.Scrapes != 3 || l.Failures != 0 || l.Series != 1 {
		t.Errorf("live status = %+v", l)
	}
	if n := len(s.Store().Times("live")); n != 3 {
		t.Errorf("live target has %d scrapes stored, want 3", n)
	}
	if n := len(s.Store().Times("dead")); n != 0 {
		t.Errorf("dead target has %d scrapes stored, want 0", n)
	}
}

// blockingServer answers only when the test ends.
func blockingServer(t *testing.T) *httptest.Server {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: unblock, then close
	return srv
}

func TestSlowTargetDoesNotBlockOthers(t *testing.T) {
	slow := blockingServer(t)
	fast := serve(t, exposition(smallBody))
	slowT := target("slow", slow.URL)
	slowT.Timeout = 100 * time.Millisecond
	s := NewScraper([]Target{slowT, target("fast", fast.URL)}, nil, Options{Clock: stepClock()})

	sts := s.ScrapeOnce(t.Context())
	if st := statusOf(t, sts, "fast"); !st.Up {
		t.Errorf("fast status = %+v", st)
	}
	st := statusOf(t, sts, "slow")
	if want := "GET " + slow.URL + ": timed out after 100ms"; st.Up || st.LastError != want {
		t.Errorf("slow status = %+v", st)
	}
}

// TestRunSlowTargetDoesNotDelayOthers runs the scraper loop with a target
// that never answers within its long timeout and waits, through Updates,
// for the fast target to be scraped several times.
func TestRunSlowTargetDoesNotDelayOthers(t *testing.T) {
	slow := blockingServer(t)
	fast := serve(t, exposition(smallBody))
	slowT := target("slow", slow.URL)
	slowT.Interval, slowT.Timeout = time.Minute, time.Minute
	fastT := target("fast", fast.URL)
	fastT.Interval = 10 * time.Millisecond
	s := NewScraper([]Target{slowT, fastT}, nil, Options{})

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	deadline := time.After(10 * time.Second)
	for statusOf(t, s.Statuses(), "fast").Scrapes < 5 {
		select {
		case <-s.Updates():
		case <-deadline:
			t.Fatalf("fast target not scraped 5 times: %+v", s.Statuses())
		}
	}
	if err := s.Run(ctx); err == nil {
		t.Error("second concurrent Run returned nil, want an error")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil after cancel", err)
	}
	if st := statusOf(t, s.Statuses(), "fast"); !st.Up || st.Failures != 0 {
		t.Errorf("fast status = %+v", st)
	}
	// The abandoned slow scrape is not reported as a failure.
	if st := statusOf(t, s.Statuses(), "slow"); st.Scrapes != 0 && st.Failures != 0 {
		t.Errorf("slow status = %+v", st)
	}
}

func TestUpdatesDoNotBlock(t *testing.T) {
	srv := serve(t, exposition(smallBody))
	s := NewScraper([]Target{target("a", srv.URL), target("b", srv.URL)}, nil, Options{Clock: stepClock()})
	for i := 0; i < 3; i++ {
		s.ScrapeOnce(t.Context()) // nobody reads Updates: must not block
	}
	select {
	case <-s.Updates():
	default:
		t.Fatal("no pending update after scrapes")
	}
	select {
	case <-s.Updates():
		t.Fatal("updates queued a backlog")
	default:
	}
}

func TestBasicAuth(t *testing.T) {
	const user, pass = "scraper", "hunter2-secret"
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="metrics"`)
			http.Error(w, "unauthorized "+p, http.StatusUnauthorized) // a server that echoes secrets
			return
		}
		exposition(smallBody)(w, r)
	})
	good := target("good", srv.URL)
	good.HTTP.BasicAuth = &config.BasicAuth{Username: user, Password: pass}
	bad := target("bad", srv.URL)
	bad.HTTP.BasicAuth = &config.BasicAuth{Username: user, Password: "wrong-password-123"}
	inURL := target("inurl", strings.Replace(srv.URL, "http://", "http://scraper:wrong-url-password@", 1))
	s := NewScraper([]Target{good, bad, inURL}, nil, Options{})
	sts := s.ScrapeOnce(t.Context())
	if !sts[0].Up {
		t.Errorf("good: %+v", sts[0])
	}
	for _, st := range sts[1:] {
		if st.Up || !strings.Contains(st.LastError, "401 Unauthorized") {
			t.Errorf("%s: %+v", st.Name, st)
		}
		for _, secret := range []string{"wrong-password-123", "wrong-url-password", "scraper:"} {
			if strings.Contains(st.LastError, secret) || strings.Contains(st.URL, secret) {
				t.Errorf("%s: secret %q shown: error %q, url %q", st.Name, secret, st.LastError, st.URL)
			}
		}
	}
	// Connection errors carry the URL too: it must be shown without userinfo.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	s = NewScraper([]Target{target("dead", strings.Replace(dead.URL, "http://", "http://u:p4ssw0rd@", 1))}, nil, Options{})
	if st := s.ScrapeOnce(t.Context())[0]; strings.Contains(st.LastError, "p4ssw0rd") || strings.Contains(st.LastError, "u:") {
		t.Errorf("dead target error shows credentials: %q", st.LastError)
	}
}

func TestBearerTokenFromFile(t *testing.T) {
	const token = "tok-7c2f9e1d-very-secret"
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	if err := os.WriteFile(good, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(dir, "wrong")
	if err := os.WriteFile(wrong, []byte("tok-wrong-also-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer "+token {
			http.Error(w, "forbidden: "+got, http.StatusForbidden)
			return
		}
		exposition(smallBody)(w, r)
	})
	withFile := func(name, file string) Target {
		t := target(name, srv.URL)
		t.HTTP.Authorization = &config.Authorization{Type: "Bearer", CredentialsFile: file}
		return t
	}
	legacy := target("legacy", srv.URL)
	legacy.HTTP.BearerTokenFile = good
	s := NewScraper([]Target{withFile("good", good), legacy, withFile("wrong", wrong), withFile("missing", filepath.Join(dir, "nope"))}, nil, Options{})
	sts := s.ScrapeOnce(t.Context())
	if !sts[0].Up || !sts[1].Up {
		t.Errorf("token from file refused: %+v", sts[:2])
	}
	if st := sts[2]; st.Up || !strings.Contains(st.LastError, "403 Forbidden") || strings.Contains(st.LastError, "tok-wrong") {
		t.Errorf("wrong token: %+v", st)
	}
	if st := sts[3]; st.Up || !strings.Contains(st.LastError, filepath.Join(dir, "nope")) {
		t.Errorf("missing token file: %+v", st)
	}
	for _, st := range sts {
		if strings.Contains(st.LastError, token) {
			t.Errorf("%s: token shown in %q", st.Name, st.LastError)
		}
	}
}

func TestTLSWithCAAndClientCertificate(t *testing.T) {
	dir := t.TempDir()
	caKey, caCert := newCA(t)
	clientCert, clientKey := newLeaf(t, caKey, caCert, "retrytop-client")
	writePEM(t, filepath.Join(dir, "client.crt"), "CERTIFICATE", clientCert)
	writePEM(t, filepath.Join(dir, "client.key"), "PRIVATE KEY", clientKey)

	srv := httptest.NewUnstartedServer(exposition(smallBody))
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	writePEM(t, filepath.Join(dir, "server-ca.crt"), "CERTIFICATE", srv.Certificate().Raw)

	ok := target("mtls", srv.URL)
	ok.HTTP.TLSConfig = config.TLSConfig{
		CAFile:   filepath.Join(dir, "server-ca.crt"),
		CertFile: filepath.Join(dir, "client.crt"),
		KeyFile:  filepath.Join(dir, "client.key"),
	}
	noCert := target("nocert", srv.URL)
	noCert.HTTP.TLSConfig = config.TLSConfig{CAFile: filepath.Join(dir, "server-ca.crt")}
	noCA := target("noca", srv.URL)
	missingCA := target("missingca", srv.URL)
	missingCA.HTTP.TLSConfig = config.TLSConfig{CAFile: filepath.Join(dir, "absent.crt")}

	s := NewScraper([]Target{ok, noCert, noCA, missingCA}, nil, Options{})
	sts := s.ScrapeOnce(t.Context())
	if !sts[0].Up {
		t.Errorf("mTLS: %+v", sts[0])
	}
	if sts[1].Up || sts[1].LastError == "" {
		t.Errorf("without client certificate: %+v", sts[1])
	}
	if sts[2].Up || !strings.Contains(sts[2].LastError, "certificate") {
		t.Errorf("without CA: %+v", sts[2])
	}
	if st := sts[3]; st.Up || st.Scrapes != 0 || !strings.HasPrefix(st.LastError, "HTTP settings: ") || !strings.Contains(st.LastError, "absent.crt") {
		t.Errorf("missing CA file: %+v", st)
	}
}

type fakeParser struct{ err error }

func (p fakeParser) Parse(string, []byte, string, func(string) bool) ([]model.Family, error) {
	return nil, p.err
}

func TestErrorsAreSanitised(t *testing.T) {
	srv := serve(t, exposition(smallBody))
	evil := "bad \x1b[31mred\x1b[0m\nsecond line \u202eevil\xff " + strings.Repeat("x", 2000)
	s := NewScraper([]Target{target("evil", srv.URL)}, nil, Options{Parser: fakeParser{errors.New(evil)}})
	st := s.ScrapeOnce(t.Context())[0]
	if st.Up {
		t.Fatal("scrape succeeded")
	}
	if strings.ContainsAny(st.LastError, "\x1b\n\u202e") || !strings.Contains(st.LastError, `\x1b[31mred`) {
		t.Errorf("error not sanitised: %q", st.LastError)
	}
	if len(st.LastError) > maxTextLen || !strings.HasPrefix(st.LastError, "parse: bad") {
		t.Errorf("error = %q (%d bytes)", st.LastError, len(st.LastError))
	}
}

func TestGarbageTarget(t *testing.T) {
	garbage := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok_metric 1\n\x00\x1b[2J\xff\xfe garbage\n"))
	})
	html := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>login</html>\n"))
	})
	status := serve(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusServiceUnavailable) })
	encoding := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "br")
		_, _ = w.Write([]byte("xx"))
	})
	good := serve(t, exposition(smallBody))
	s := NewScraper([]Target{
		target("garbage", garbage.URL), target("html", html.URL), target("status", status.URL),
		target("encoding", encoding.URL), target("good", good.URL),
	}, nil, Options{})
	sts := s.ScrapeOnce(t.Context())
	wants := []string{
		"line 2: invalid metric name",
		`line 1: not a Prometheus exposition: it starts with '<', a web page (content type "text/html")`,
		"GET " + status.URL + ": server returned HTTP status 503 Service Unavailable",
		"GET " + encoding.URL + `: unsupported Content-Encoding "br"`,
	}
	for i, want := range wants {
		if sts[i].Up || sts[i].LastError != want {
			t.Errorf("%s: error %q, want %q", sts[i].Name, sts[i].LastError, want)
		}
		if strings.ContainsAny(sts[i].LastError, "\x00\x1b") {
			t.Errorf("%s: raw control characters in %q", sts[i].Name, sts[i].LastError)
		}
	}
	if !strings.Contains(sts[1].LastError, `content type "text/html"`) {
		t.Errorf("html error does not mention the content type: %q", sts[1].LastError)
	}
	if !sts[4].Up {
		t.Errorf("good target: %+v", sts[4])
	}
}

func TestNewScraperBadTargets(t *testing.T) {
	srv := serve(t, exposition(smallBody))
	s := NewScraper([]Target{
		{Name: "ftp", URL: "ftp://user:pw-secret@host/"},
		{URL: "::not a url"},
		target("dup", srv.URL),
		target("dup", srv.URL),
		{Name: "conflict", URL: srv.URL, HTTP: config.HTTPClientConfig{BearerToken: "abc-secret", BearerTokenFile: "/x"}},
		target("good", srv.URL),
	}, nil, Options{})
	sts := s.Statuses() // reported before any scrape
	wants := []string{
		`target URL "ftp://host/": scheme "ftp" not supported`,
		`target URL "::not a url": `,
		"",
		"duplicate name; name each target with name=URL",
		"HTTP settings: at most one of bearer_token & bearer_token_file",
		"",
	}
	for i, want := range wants {
		if !strings.HasPrefix(sts[i].LastError, want) || (want == "") != (sts[i].LastError == "") {
			t.Errorf("target %d (%s): error %q, want prefix %q", i, sts[i].Name, sts[i].LastError, want)
		}
	}
	sts = s.ScrapeOnce(t.Context())
	if !sts[2].Up || !sts[5].Up || sts[3].Up || sts[3].Scrapes != 0 {
		t.Errorf("statuses after scrape: %+v", sts)
	}
	for _, st := range sts {
		if strings.Contains(st.LastError, "pw-secret") || strings.Contains(st.URL, "pw-secret") {
			t.Errorf("secret shown: %+v", st)
		}
	}
}

func TestStatusesAreCopies(t *testing.T) {
	srv := serve(t, exposition(smallBody))
	s := NewScraper([]Target{target("a", srv.URL)}, nil, Options{})
	sts := s.Statuses()
	sts[0].Name = "changed"
	if s.Statuses()[0].Name != "a" {
		t.Error("Statuses returned the scraper's own slice")
	}
}

func TestScrapeOnceCancelled(t *testing.T) {
	srv := serve(t, exposition(smallBody))
	s := NewScraper([]Target{target("a", srv.URL)}, nil, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if st := s.ScrapeOnce(ctx)[0]; st.Scrapes != 0 || st.Failures != 0 {
		t.Errorf("cancelled scrape was recorded: %+v", st)
	}
}

// TestClientGolangServesText checks the Accept header against a real
// client_golang handler that could serve OpenMetrics: it serves the text
// format, with UTF-8 names unescaped.
func TestClientGolangServesText(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "retry.originals_total", Help: "h"}, []string{"dependency"})
	reg.MustRegister(c)
	c.WithLabelValues("db").Add(3)
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
	var ct atomic.Value
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		ct.Store(w.Header().Get("Content-Type"))
	})
	s := NewScraper([]Target{target("cg", srv.URL)}, nil, Options{})
	if st := s.ScrapeOnce(t.Context())[0]; !st.Up {
		t.Fatalf("status = %+v", st)
	}
	if got, _ := ct.Load().(string); !strings.HasPrefix(got, "text/plain; version=0.0.4") {
		t.Errorf("served content type %q, want the text format", got)
	}
	if got := s.Store().Select("cg", "retry.originals_total", nil); len(got) != 1 || got[0].Points[0].V != 3 {
		t.Errorf("stored = %+v (names %v)", got, s.Store().Names("cg"))
	}
}

func TestFilterAppliesToScrapes(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write(readFixture(t, "text_good.prom"))
	})
	s := NewScraper([]Target{target("f", srv.URL)}, nil, Options{Filter: only("retry_request_duration_seconds")})
	st := s.ScrapeOnce(t.Context())[0]
	if !st.Up || st.Series != 5 {
		t.Fatalf("status = %+v, want 5 series of the histogram", st)
	}
	if names := s.Store().Names("f"); len(names) != 3 {
		t.Errorf("stored names = %v", names)
	}
}

func TestJitterIsDeterministicAndWithinInterval(t *testing.T) {
	names := []string{"a", "b", "c", "d", "localhost:9090"}
	for _, iv := range []time.Duration{time.Second, 15 * time.Second, 7 * time.Millisecond} {
		for _, slots := range []int{0, 1, 4, 63} {
			for _, name := range names {
				j := jitter(name, iv, slots)
				if j != jitter(name, iv, slots) || j < 0 || j >= iv {
					t.Errorf("jitter(%q, %v, %d) = %v", name, iv, slots, j)
				}
			}
		}
	}
}

// TestPhasesGroupTargets: a small set shares one phase (one wake-up per
// interval, not one per target), a fleet is spread over phases of about
// phaseGroup targets each, on a grid of interval/slots.
func TestPhasesGroupTargets(t *testing.T) {
	phases := func(n int) map[time.Duration]int {
		out := map[time.Duration]int{}
		for i := range n {
			out[jitter(fmt.Sprintf("10.0.%d.%d:9100", i/256, i%256), time.Second, phaseSlots(n))]++
		}
		return out
	}
	for _, n := range []int{1, 10, 16} {
		if p := phases(n); len(p) != 1 {
			t.Errorf("%d targets: %d phases %v, want 1", n, len(p), p)
		}
	}
	if p := phases(17); len(p) != 2 {
		t.Errorf("17 targets: %d phases, want 2", len(p))
	}
	const n = 1000
	slots := phaseSlots(n)
	if slots != 63 {
		t.Fatalf("phaseSlots(%d) = %d, want 63", n, slots)
	}
	p := phases(n)
	// 1,000 names hashed into 63 slots: a slot left empty has probability
	// (62/63)^1000 < 1e-6, one holding over 3x the mean (48) far less.
	if len(p) != slots {
		t.Errorf("%d targets on %d phases, want %d", n, len(p), slots)
	}
	base := jitter("x", time.Second, 1)
	step := time.Second / time.Duration(slots)
	for at, k := range p {
		if (at-base+time.Second)%time.Second%step != 0 {
			t.Errorf("phase %v is off the grid of %v from %v", at, step, base)
		}
		if k > 3*phaseGroup {
			t.Errorf("phase %v holds %d targets", at, k)
		}
	}
}

func newCA(t *testing.T) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "retrytop test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

func newLeaf(t *testing.T, caKey *ecdsa.PrivateKey, ca *x509.Certificate, cn string) (certDER, keyDER []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	certDER, err = x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err = x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return certDER, keyDER
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRunWithoutUsableTargetsWaitsForCancel(t *testing.T) {
	s := NewScraper([]Target{{URL: "not a url"}}, nil, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("Run returned %v before cancel", err)
	default:
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// pathServer answers every path with smallBody and counts requests per
// path.
type pathServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newPathServer(t *testing.T) *pathServer {
	ps := &pathServer{hits: map[string]int{}}
	ps.Server = serve(t, func(w http.ResponseWriter, r *http.Request) {
		ps.mu.Lock()
		ps.hits[r.URL.Path]++
		ps.mu.Unlock()
		exposition(smallBody)(w, r)
	})
	return ps
}

// batchServer holds requests until limit of them wait, then answers that
// batch with smallBody, so that scrapes pile up behind a concurrency cap
// of limit: the cap is reached, and maxIn shows whether it was ever
// exceeded. (A handler returns before its response is flushed, so a
// client's next request always finds the previous one counted out.) A
// request whose client goes away is dropped.
type batchServer struct {
	*httptest.Server
	mu       sync.Mutex
	inFlight int
	maxIn    int
	waiting  int
	batch    chan struct{}
}

func newBatchServer(t *testing.T, limit int) *batchServer {
	bs := &batchServer{batch: make(chan struct{})}
	bs.Server = serve(t, func(w http.ResponseWriter, r *http.Request) {
		bs.mu.Lock()
		bs.inFlight++
		bs.maxIn = max(bs.maxIn, bs.inFlight)
		b := bs.batch
		if bs.waiting++; bs.waiting == limit {
			close(bs.batch)
			bs.batch = make(chan struct{})
			bs.waiting = 0
		}
		bs.mu.Unlock()
		defer func() {
			bs.mu.Lock()
			bs.inFlight--
			bs.mu.Unlock()
		}()
		select {
		case <-b:
			exposition(smallBody)(w, r)
		case <-r.Context().Done():
		}
	})
	return bs
}

func (bs *batchServer) max() int {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return bs.maxIn
}

func (ps *pathServer) count(path string) int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.hits[path]
}

// waitFor waits, through Updates, until cond holds; it fails the test
// after 10 s.
func waitFor(t *testing.T, s *Scraper, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-s.Updates():
		case <-deadline:
			t.Fatalf("timed out waiting for %s: %+v", what, s.Statuses())
		}
	}
}

func scrapesOf(s *Scraper, name string) int {
	for _, st := range s.Statuses() {
		if st.Name == name {
			return st.Scrapes
		}
	}
	return -1
}

func namesOf(sts []model.TargetStatus) []string {
	var out []string
	for _, st := range sts {
		out = append(out, st.Name)
	}
	return out
}

// TestSetTargetsWhileRunning changes the target set under a running
// scraper: a new target is scraped, a removed one is not any more and
// leaves the statuses, a kept one keeps its status and store history.
func TestSetTargetsWhileRunning(t *testing.T) {
	ps := newPathServer(t)
	fast := func(name string) Target {
		tg := target(name, ps.URL+"/"+name)
		tg.Interval = 10 * time.Millisecond
		tg.Timeout = 5 * time.Second
		return tg
	}
	var forgotten nameLog
	s := NewScraper([]Target{fast("a"), fast("b")}, nil, Options{OnForget: forgotten.add})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()

	waitFor(t, s, "a and b scraped twice", func() bool { return scrapesOf(s, "a") >= 2 && scrapesOf(s, "b") >= 2 })
	aBefore := scrapesOf(s, "a")
	s.SetTargets([]Target{fast("c"), fast("a")})
	if got := namesOf(s.Statuses()); !slices.Equal(got, []string{"c", "a"}) {
		t.Fatalf("statuses after SetTargets = %v, want [c a] in the new order", got)
	}
	if n := scrapesOf(s, "a"); n < aBefore {
		t.Errorf("kept target a: %d scrapes after SetTargets, had %d: its status was reset", n, aBefore)
	}
	waitFor(t, s, "c scraped 3 times", func() bool { return scrapesOf(s, "c") >= 3 })
	bStopped := ps.count("/b")
	cNow := scrapesOf(s, "c")
	waitFor(t, s, "c scraped 5 more times", func() bool { return scrapesOf(s, "c") >= cNow+5 })
	if n := ps.count("/b"); n != bStopped {
		t.Errorf("removed target b was requested %d more times", n-bStopped)
	}
	if n := scrapesOf(s, "a"); n < aBefore+5 {
		t.Errorf("kept target a: %d scrapes, want at least %d", n, aBefore+5)
	}
	// a's history continued; b's went with it.
	if n, sc := len(s.Store().Times("a")), scrapesOf(s, "a"); n != sc && n != sc-1 && n != sc+1 {
		t.Errorf("a has %d scrapes stored for %d scrapes: its history was not kept", n, sc)
	}
	if n := len(s.Store().Times("b")); n != 0 {
		t.Errorf("removed b still has %d scrapes in the store", n)
	}
	if got := forgotten.names(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("OnForget called for %v, want [b]", got)
	}
}

// TestSetTargetsChangedAndBad replaces a target whose URL changed (same
// name: its counts carry over), keeps a duplicate reported down, and
// shares one HTTP client between targets with the same settings.
func TestSetTargetsChangedAndBad(t *testing.T) {
	ps := newPathServer(t)
	s := NewScraper([]Target{target("a", ps.URL+"/a"), target("b", ps.URL+"/b")}, nil, Options{Clock: stepClock()})
	s.ScrapeOnce(t.Context())
	s.mu.Lock()
	nClients := len(s.clients)
	s.mu.Unlock()
	if nClients != 1 {
		t.Errorf("%d HTTP clients for two targets with the same settings, want 1", nClients)
	}

	s.SetTargets([]Target{target("a", ps.URL+"/a2"), target("a", ps.URL+"/a3"), {Name: "bad", URL: "ftp://x/"}})
	sts := s.ScrapeOnce(t.Context())
	if got := namesOf(sts); !slices.Equal(got, []string{"a", "a", "bad"}) {
		t.Fatalf("names = %v", got)
	}
	if sts[0].Scrapes != 2 || sts[0].URL != ps.URL+"/a2" || !sts[0].Up {
		t.Errorf("a after its URL changed = %+v, want 2 scrapes (counts carried over) of /a2", sts[0])
	}
	if !strings.Contains(sts[1].LastError, "duplicate name") || sts[2].Up || !strings.Contains(sts[2].LastError, `scheme "ftp" not supported`) {
		t.Errorf("duplicate and bad targets = %+v, %+v", sts[1], sts[2])
	}
	if ps.count("/a2") != 1 || ps.count("/a3") != 0 || ps.count("/b") != 1 {
		t.Errorf("requests: /a2 %d, /a3 %d, /b %d; want 1, 0, 1", ps.count("/a2"), ps.count("/a3"), ps.count("/b"))
	}

	s.SetTargets(nil)
	s.mu.Lock()
	nClients = len(s.clients)
	s.mu.Unlock()
	if len(s.Statuses()) != 0 || nClients != 0 {
		t.Errorf("after SetTargets(nil): %d statuses, %d clients; want none", len(s.Statuses()), nClients)
	}
}

// TestScrapeOnceConcurrencyCap scrapes 60 targets with MaxConcurrent 4
// against a batchServer: the cap is reached and never exceeded.
func TestScrapeOnceConcurrencyCap(t *testing.T) {
	const limit = 4
	bs := newBatchServer(t, limit)
	var targets []Target
	for i := range 60 { // a multiple of the cap: the last batch fills too
		targets = append(targets, target(fmt.Sprintf("t%02d", i), fmt.Sprintf("%s/t%02d", bs.URL, i)))
	}
	s := NewScraper(targets, nil, Options{MaxConcurrent: limit})
	for _, st := range s.ScrapeOnce(t.Context()) {
		if !st.Up {
			t.Fatalf("status = %+v", st)
		}
	}
	if m := bs.max(); m != limit {
		t.Errorf("max scrapes in flight = %d, want exactly the cap %d", m, limit)
	}
}

// TestRunConcurrencyCapManyTargets runs 200 targets at 20 ms with
// MaxConcurrent 5 against a batchServer, so scrapes always pile up
// behind the cap: it is reached and never exceeded, and the scraper's
// goroutines stay bounded (not one per target).
func TestRunConcurrencyCapManyTargets(t *testing.T) {
	const limit, n = 5, 200
	bs := newBatchServer(t, limit)
	var targets []Target
	for i := range n {
		tg := target(fmt.Sprintf("t%03d", i), fmt.Sprintf("%s/t%03d", bs.URL, i))
		tg.Interval, tg.Timeout = 20*time.Millisecond, 10*time.Second
		targets = append(targets, tg)
	}
	base := runtime.NumGoroutine()
	s := NewScraper(targets, nil, Options{MaxConcurrent: limit})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	maxG := 0
	waitFor(t, s, "every target scraped twice", func() bool {
		maxG = max(maxG, runtime.NumGoroutine()-base)
		for _, st := range s.Statuses() {
			if st.Scrapes < 2 {
				return false
			}
		}
		return true
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	for _, st := range s.Statuses() {
		if st.Failures != 0 {
			t.Fatalf("status = %+v, want no failure", st)
		}
	}
	if m := bs.max(); m != limit {
		t.Errorf("max requests in flight = %d, want exactly the cap %d", m, limit)
	}
	// Workers and scheduler, plus per open connection two goroutines of
	// the client and two of the test server: about 26, far below one
	// per target.
	if maxG > 60 {
		t.Errorf("%d goroutines above the baseline with %d targets, want at most 60", maxG, n)
	}
	t.Logf("%d goroutines above the baseline", maxG)
}

// TestRunDiscover feeds target sets through Options.Discover while Run
// runs: the second set's target is scraped and the first's stops.
func TestRunDiscover(t *testing.T) {
	ps := newPathServer(t)
	fast := func(name string) Target {
		tg := target(name, ps.URL+"/"+name)
		tg.Interval = 10 * time.Millisecond
		return tg
	}
	sets := make(chan []Target)
	s := NewScraper(nil, nil, Options{Discover: func(ctx context.Context, set func([]Target)) {
		for {
			select {
			case <-ctx.Done():
				return
			case ts := <-sets:
				set(ts)
			}
		}
	}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	sets <- []Target{fast("x")}
	waitFor(t, s, "x scraped", func() bool { return scrapesOf(s, "x") >= 2 })
	sets <- []Target{fast("y")}
	waitFor(t, s, "y scraped", func() bool { return scrapesOf(s, "y") >= 2 })
	if got := namesOf(s.Statuses()); !slices.Equal(got, []string{"y"}) {
		t.Errorf("statuses = %v, want [y]", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// TestRemovedTargetInFlightIsAbandoned removes a target whose scrape
// hangs: the scrape is cancelled at once, not recorded as a failure, and
// Run carries on.
func TestRemovedTargetInFlightIsAbandoned(t *testing.T) {
	slow := blockingServer(t)
	slowT := target("slow", slow.URL)
	slowT.Interval, slowT.Timeout = 10*time.Millisecond, time.Minute
	s := NewScraper([]Target{slowT}, nil, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	// Wait until the scrape is in flight: its cancel func is set.
	var st *scrapeTarget
	for st == nil {
		s.mu.Lock()
		if len(s.targets) == 1 && s.targets[0].cancel != nil {
			st = s.targets[0]
		}
		s.mu.Unlock()
		runtime.Gosched()
	}
	s.SetTargets(nil)
	// The abandoned scrape releases the target's lock when it returns.
	st.mu.Lock()
	st.mu.Unlock()
	s.mu.Lock()
	status := st.status
	s.mu.Unlock()
	if status.Scrapes != 0 || status.Failures != 0 {
		t.Errorf("removed target's abandoned scrape was recorded: %+v", status)
	}
}

// processCPU is this process's user+system CPU time from /proc/self/stat
// (Linux; ok is false elsewhere), in clock ticks of 10 ms.
func processCPU() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	var ticks int64
	for _, s := range f[11:13] { // utime, stime: fields 14 and 15
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, true
}

// BenchmarkManyTargets scrapes 200 targets, one loopback server answering
// on 200 paths with an Envoy-shaped exposition of 280 series each (the
// demo's largest endpoint has 277), at a 1 s interval. The server runs in
// this process, so its CPU share is included. docs/performance.md
// ("Many targets") records the numbers and the command.
//
//   - round: one ScrapeOnce of all 200, the work of one interval, with
//     cpu-ms/op (process CPU per round).
//   - run: Run for b.N seconds after a 2 s warm-up (every target's first
//     scrape allocates its store rings); %cpu of one core in steady
//     state, goroutines above the baseline (the most seen, sampled every
//     100 ms) and the live heap after it (the store at its default
//     900-scrape history).
func BenchmarkManyTargets(b *testing.B) {
	const n = 200
	body, series := expotest.GenEnvoy(280, false)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	targets := make([]Target, n)
	for i := range targets {
		targets[i] = target(fmt.Sprintf("t%03d", i), fmt.Sprintf("%s/t%03d", srv.URL, i))
	}
	checkUp := func(b *testing.B, s *Scraper, minScrapes int) {
		for _, st := range s.Statuses() {
			if !st.Up || st.Scrapes < minScrapes || st.Series != series {
				b.Fatalf("status = %+v, want up with %d series after %d scrapes", st, series, minScrapes)
			}
		}
	}

	b.Run(fmt.Sprintf("targets=%d/series=%d/round", n, series), func(b *testing.B) {
		s := NewScraper(targets, nil, Options{Clock: stepClock()})
		s.ScrapeOnce(b.Context()) // allocates the store's rings
		cpu0, ok := processCPU()
		for b.Loop() {
			s.ScrapeOnce(b.Context())
		}
		if cpu1, ok1 := processCPU(); ok && ok1 {
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		}
		checkUp(b, s, 2)
	})

	b.Run(fmt.Sprintf("targets=%d/series=%d/run", n, series), func(b *testing.B) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		s := NewScraper(targets, nil, Options{})
		ctx, cancel := context.WithCancel(b.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		maxG := 0
		tick := time.NewTicker(100 * time.Millisecond)
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); <-tick.C {
			maxG = max(maxG, runtime.NumGoroutine()-g0)
		}
		b.ResetTimer()
		cpu0, ok := processCPU()
		start := time.Now()
		for end := start.Add(time.Duration(b.N) * time.Second); time.Now().Before(end); <-tick.C {
			maxG = max(maxG, runtime.NumGoroutine()-g0)
		}
		tick.Stop()
		cpu1, ok1 := processCPU()
		wall := time.Since(start)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		checkUp(b, s, b.N)
		runtime.GC()
		runtime.ReadMemStats(&after)
		if ok && ok1 {
			b.ReportMetric(100*(cpu1-cpu0).Seconds()/wall.Seconds(), "%cpu")
		}
		b.ReportMetric(float64(maxG), "goroutines")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MiB")
		runtime.KeepAlive(s)
	})
}

// nameLog collects names from callbacks on other goroutines.
type nameLog struct {
	mu sync.Mutex
	ns []string
}

func (l *nameLog) add(n string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ns = append(l.ns, n)
}

func (l *nameLog) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.ns...)
}
