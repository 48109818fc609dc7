package dialect_test

import (
	"github.com/retrytop/retrytop/internal/testpeer"

	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// provider is the HAProxy test's provider: it answers every n-th request
// with a 503 and counts what reached it. Every response carries
// X-Provider, so the client can tell the provider's 503 from HAProxy's own.
type provider struct {
	every    int64 // every n-th request fails; 0: none
	service  time.Duration
	received atomic.Int64
	failed   atomic.Int64
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := p.received.Add(1)
	_, _ = io.Copy(io.Discard, r.Body)
	if p.service > 0 {
		t := time.NewTimer(p.service) // the provider's work, not a synchronisation
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	w.Header().Set("X-Provider", "1")
	if p.every > 0 && n%p.every == 0 {
		p.failed.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

// clientTruth is what the clients sent and saw.
type clientTruth struct {
	sent, ok, provider503, haproxy503, other atomic.Int64
}

type haScenario struct {
	name                string
	workers, perWorker  int
	failEvery           int64
	service, queueLimit time.Duration
	maxconn             int
	wantRejections      bool
}

func TestHAProxyIntegration(t *testing.T) {
	bin := testpeer.Require(t, "haproxy", "haproxy")
	if out, err := exec.Command(bin, "-vv").CombinedOutput(); err != nil || !strings.Contains(string(out), "prometheus-exporter") {
		if testpeer.Required() {
			t.Fatalf("haproxy at %s lacks the built-in Prometheus exporter (-vv: %v)", bin, err)
		}
		t.Skipf("haproxy at %s lacks the built-in Prometheus exporter; skipping", bin)
	}
	for _, sc := range []haScenario{
		// Errors: a fifth of the provider's answers are 503, retried;
		// concurrency stays under maxconn, so nothing is refused.
		{name: "errors", workers: 3, perWorker: 150, failEvery: 5, service: 2 * time.Millisecond,
			queueLimit: 2 * time.Second, maxconn: 4},
		// Overload: far more concurrent requests than server slots, a
		// short queue timeout: HAProxy refuses many in its queue, and
		// still retries the provider's 503s.
		{name: "overload", workers: 32, perWorker: 25, failEvery: 5, service: 15 * time.Millisecond,
			queueLimit: 80 * time.Millisecond, maxconn: 4, wantRejections: true},
	} {
		t.Run(sc.name, func(t *testing.T) { runHAProxy(t, bin, sc) })
	}
}

func runHAProxy(t *testing.T, bin string, sc haScenario) {
	prov := &provider{every: sc.failEvery, service: sc.service}
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	psrv := &http.Server{Handler: prov, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = psrv.Serve(pl) }()
	t.Cleanup(func() { _ = psrv.Close() })

	fePort, promPort := freePort(t), freePort(t)
	cfg := fmt.Sprintf(`global
    log stderr format raw local0 err
defaults
    mode http
    timeout connect 1s
    timeout client 10s
    timeout server 5s
    timeout queue %dms
    retries 2
    retry-on conn-failure empty-response response-timeout 503
    option redispatch
frontend fe
    bind 127.0.0.1:%d
    default_backend provider
frontend prometheus
    bind 127.0.0.1:%d
    http-request use-service prometheus-exporter if { path /metrics }
backend provider
    server p1 %s maxconn %d
`, sc.queueLimit.Milliseconds(), fePort, promPort, pl.Addr().String(), sc.maxconn)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-db", "-f", cfgPath)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("haproxy stderr:\n%s", stderr.String())
		}
	})
	alive := func() error {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("%v: %s", err, stderr.String())
		default:
			return nil
		}
	}
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", promPort)
	waitHTTP(t, metricsURL, 10*time.Second, alive)

	// retrytop's side: a scraper with the auto-detecting translator and
	// a clock set by hand, so rate x window is the exact increase.
	tr := dialect.Auto()
	target, err := scrape.ParseTarget("haproxy=" + metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	target.Timeout = 5 * time.Second
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	scraper := scrape.NewScraper([]scrape.Target{target}, model.NewStore(model.StoreConfig{}),
		scrape.Options{Clock: clock.Now, Translate: tr.Translate, Filter: tr.Filter})
	start := clock.now
	if st := scraper.ScrapeOnce(context.Background()); !st[0].Up {
		t.Fatalf("first scrape: %s", st[0].LastError)
	}

	// Load: closed-loop workers through HAProxy's frontend.
	var truth clientTruth
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: sc.workers}}
	defer client.CloseIdleConnections()
	url := fmt.Sprintf("http://127.0.0.1:%d/work", fePort)
	var wg sync.WaitGroup
	for range sc.workers {
		wg.Go(func() {
			for range sc.perWorker {
				truth.sent.Add(1)
				resp, err := client.Get(url)
				if err != nil {
					truth.other.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusOK:
					truth.ok.Add(1)
				case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("X-Provider") != "":
					truth.provider503.Add(1)
				case resp.StatusCode == http.StatusServiceUnavailable:
					truth.haproxy503.Add(1)
				default:
					truth.other.Add(1)
				}
			}
		})
	}
	wg.Wait()

	// Every request has been answered, so HAProxy's counters are final.
	clock.now = start.Add(10 * time.Second)
	st := scraper.ScrapeOnce(context.Background())
	if !st[0].Up {
		t.Fatalf("last scrape: %s", st[0].LastError)
	}
	if st[0].Dialect != dialect.NameHAProxy {
		t.Errorf("status dialect = %q, want %q", st[0].Dialect, dialect.NameHAProxy)
	}
	sig := analysis.SignalsFor(scraper.Store(), "haproxy", "provider", start.UnixMilli(), clock.now.UnixMilli())
	times := func(v model.Value) model.Value {
		if v.OK() {
			v = model.Some(v.V() * 10)
		}
		return v
	}
	sent, received := float64(truth.sent.Load()), float64(prov.received.Load())
	rejected := float64(truth.haproxy503.Load())
	t.Logf("ground truth: sent %.0f, ok %d, provider 503 %d, haproxy 503 %.0f, other %d; provider received %.0f, failed %d",
		sent, truth.ok.Load(), truth.provider503.Load(), rejected, truth.other.Load(), received, prov.failed.Load())
	if truth.other.Load() != 0 {
		t.Errorf("%d requests ended otherwise than 200 or 503", truth.other.Load())
	}
	if sc.wantRejections && rejected < 0.05*sent {
		t.Errorf("scenario did not overload: only %.0f of %.0f requests refused", rejected, sent)
	}
	if !sc.wantRejections && rejected != 0 {
		t.Errorf("scenario overloaded: %.0f requests refused", rejected)
	}
	within(t, "originals", times(sig.OriginalsPerS), sent, 0.03)
	within(t, "attempts", times(sig.AttemptsPerS), received, 0.03)
	within(t, "admission rejections", times(sig.AdmissionRejectedPerS), rejected, 0.03)
	// Retries decided: every provider 503 but the final ones.
	within(t, "retries", times(sig.RetriesPerS), float64(prov.failed.Load()-truth.provider503.Load()), 0.03)
	within(t, "successes", times(sig.SuccessesPerS), float64(truth.ok.Load()), 0.03)
	// What HAProxy cannot tell stays absent.
	for name, v := range map[string]model.Value{"rescued": sig.RescuedPerS, "budget denied": sig.BudgetDeniedPerS,
		"backoff p50": sig.BackoffP50, "pool wait p50": sig.PoolWaitP50} {
		if v.OK() {
			t.Errorf("%s = %v, want absent (HAProxy does not export it)", name, v.V())
		}
	}
	if lim, ok := sig.ConcurrencyLimit.Get(); !ok || lim != float64(sc.maxconn) {
		t.Errorf("concurrency limit = %v, want %d (the server's maxconn)", sig.ConcurrencyLimit, sc.maxconn)
	}
}
