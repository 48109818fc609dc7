package sources

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/otlp"
	"github.com/retrytop/retrytop/scrape"
)

// OTLPSpec is the receiver a command asks for (--otlp and its flags).
type OTLPSpec struct {
	// Addr is HOST:PORT to receive pushes on.
	Addr string
	// TokenFile holds the bearer token every push must carry.
	TokenFile string
	// CertFile and KeyFile serve the pushes over TLS; ClientCAFile, with
	// them, requires and verifies a client certificate (mTLS).
	CertFile, KeyFile, ClientCAFile string
	// MaxBytes bounds the memory the received series take (0: the
	// receiver's default, otlp.Limits.Bytes).
	MaxBytes int64
}

// pushes is an OTLP receiver listening for a command: each resource that
// pushes becomes a target the scraper reads, at the command's interval,
// from a loopback listener of its own (the push port serves nothing
// else than POST /v1/metrics).
type pushes struct {
	ln, local net.Listener
	recv      *otlp.Receiver
	interval  time.Duration
	// log, once set (Follow's), is told of refused exports.
	log atomic.Pointer[io.Writer]
}

// refused tells log of a sender's first refused export, then of its
// 10th, 100th, … (a hostile sender must not flood it).
func (p *pushes) refused(r otlp.Refusal) {
	w := p.log.Load()
	if w == nil || !powerOfTen(r.Count) {
		return
	}
	fmt.Fprintf(*w, "retrytop: otlp: export from %s refused (%d so far): %s\n",
		safetext.TerminalN(r.Sender, 40), r.Count, safetext.TerminalN(r.Last, 200))
}

func powerOfTen(n int) bool {
	for n >= 10 && n%10 == 0 {
		n /= 10
	}
	return n == 1
}

// listenOTLP opens the receiver's two listeners. An address without a
// host would listen on every interface: that must be asked for by naming
// one (0.0.0.0:4318), so ":4318" is refused.
func listenOTLP(spec OTLPSpec, interval time.Duration) (*pushes, error) {
	host, _, err := net.SplitHostPort(spec.Addr)
	if err != nil {
		return nil, fmt.Errorf("--otlp %q: %w (want HOST:PORT, e.g. 127.0.0.1:4318)", spec.Addr, err)
	}
	if host == "" {
		return nil, fmt.Errorf("--otlp %q: name the address to listen on: 127.0.0.1:4318 for this machine, 0.0.0.0:4318 for every interface", spec.Addr)
	}
	opts := otlp.Options{Limits: otlp.Limits{Bytes: spec.MaxBytes}}
	if spec.TokenFile != "" {
		b, err := os.ReadFile(spec.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("--otlp-token-file: %w", err)
		}
		if opts.Token = strings.TrimSpace(string(b)); opts.Token == "" {
			return nil, fmt.Errorf("--otlp-token-file %s: empty", spec.TokenFile)
		}
	}
	tlsCfg, err := serverTLS(spec)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", spec.Addr)
	if err != nil {
		return nil, fmt.Errorf("--otlp: %w", err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	local, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("--otlp: %w", err)
	}
	p := &pushes{ln: ln, local: local, interval: interval}
	opts.OnRefuse = p.refused
	p.recv = otlp.NewReceiver(opts)
	return p, nil
}

// serverTLS is the push port's TLS: nil without a certificate.
func serverTLS(spec OTLPSpec) (*tls.Config, error) {
	switch {
	case spec.CertFile == "" && spec.KeyFile == "" && spec.ClientCAFile == "":
		return nil, nil
	case spec.CertFile == "" || spec.KeyFile == "":
		return nil, errors.New("--otlp-tls-cert-file and --otlp-tls-key-file go together")
	}
	cert, err := tls.LoadX509KeyPair(spec.CertFile, spec.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("--otlp-tls-cert-file: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if spec.ClientCAFile != "" {
		pem, err := os.ReadFile(spec.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--otlp-tls-client-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--otlp-tls-client-ca-file %s: no PEM certificate", spec.ClientCAFile)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// targets are the receiver's resources as scrape targets on its local
// listener, each in its job's layer.
func (p *pushes) targets() []scrape.Target {
	base := "http://" + p.local.Addr().String()
	var out []scrape.Target
	for _, name := range p.recv.State().Targets() {
		t, err := scrape.ParseTarget(base + otlp.MetricsPath(name))
		if err != nil {
			continue // a URL the receiver made: parseable
		}
		t.Name = name
		t.Layer = p.recv.State().Job(name) // replicas of a service fold as a job's do
		t.Interval = p.interval
		out = append(out, t)
	}
	return out
}

// run serves both listeners until ctx ends, handing set the static
// targets plus one per resource each time a new resource pushes.
func (p *pushes) run(ctx context.Context, static func() []scrape.Target, set func([]scrape.Target)) {
	servers := []*http.Server{
		{Handler: p.recv, ReadHeaderTimeout: 10 * time.Second},
		{Handler: p.recv.Expositions(), ReadHeaderTimeout: 10 * time.Second},
	}
	done := make(chan struct{}, len(servers))
	for i, ln := range []net.Listener{p.ln, p.local} {
		go func() {
			defer func() { done <- struct{}{} }()
			_ = servers[i].Serve(ln) // ends with ErrServerClosed
		}()
	}
	var known []string
	for {
		changed := p.recv.Changed()
		if names := p.recv.State().Targets(); !slices.Equal(names, known) {
			known = names
			set(append(slices.Clone(static()), p.targets()...))
		}
		select {
		case <-ctx.Done():
			for _, srv := range servers {
				_ = srv.Close()
			}
			for range servers {
				<-done
			}
			return
		case <-changed:
		}
	}
}

// OTLPAddr is the address the OTLP receiver listens on ("" without
// --otlp): targets appear as resources push.
func (s *Sources) OTLPAddr() string {
	if s.pushes == nil {
		return ""
	}
	return s.pushes.ln.Addr().String()
}

// badge is the receiver's refusals, then what prev shows: how many
// exports were refused, and the sender refused most with its last
// reason.
func (p *pushes) badge(prev func() string) func() string {
	return func() string {
		ref := p.recv.Refused()
		b := ""
		if len(ref) > 0 {
			total, most := 0, ref[0]
			for _, r := range ref {
				total += r.Count
				if r.Count > most.Count {
					most = r
				}
			}
			b = fmt.Sprintf("otlp: %d exports refused, %d from %s: %s", total, most.Count,
				safetext.TerminalN(most.Sender, 40), safetext.TerminalN(most.Last, 60))
		}
		return joinBadges(b, prev)
	}
}
