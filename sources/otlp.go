package sources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/retrytop/retrytop/otlp"
	"github.com/retrytop/retrytop/scrape"
)

// pushes is an OTLP receiver listening for a command (--otlp): each
// resource that pushes becomes a target the scraper reads from the
// receiver, at the command's interval.
type pushes struct {
	ln       net.Listener
	recv     *otlp.Receiver
	interval time.Duration
}

// listenOTLP opens the receiver's address. An address without a host
// would listen on every interface: that must be asked for by naming one
// (0.0.0.0:4318), so ":4318" is refused.
func listenOTLP(addr string, interval time.Duration, opts otlp.Options) (*pushes, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--otlp %q: %w (want HOST:PORT, e.g. 127.0.0.1:4318)", addr, err)
	}
	if host == "" {
		return nil, fmt.Errorf("--otlp %q: name the address to listen on: 127.0.0.1:4318 for this machine, 0.0.0.0:4318 for every interface", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--otlp: %w", err)
	}
	return &pushes{ln: ln, recv: otlp.NewReceiver(opts), interval: interval}, nil
}

// targets are the receiver's resources as scrape targets on its own
// listener.
func (p *pushes) targets() []scrape.Target {
	base := "http://" + p.ln.Addr().String()
	var out []scrape.Target
	for _, name := range p.recv.State().Targets() {
		t, err := scrape.ParseTarget(base + otlp.MetricsPath(name))
		if err != nil {
			continue // a URL the receiver made: parseable
		}
		t.Name = name
		t.Interval = p.interval
		out = append(out, t)
	}
	return out
}

// run serves the receiver until ctx ends, handing set the static targets
// plus one per resource each time a new resource pushes.
func (p *pushes) run(ctx context.Context, static func() []scrape.Target, set func([]scrape.Target)) {
	srv := &http.Server{Handler: p.recv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(p.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return
		}
	}()
	var known []string
	for {
		changed := p.recv.Changed()
		if names := p.recv.State().Targets(); !slices.Equal(names, known) {
			known = names
			set(append(slices.Clone(static()), p.targets()...))
		}
		select {
		case <-ctx.Done():
			_ = srv.Close()
			<-done
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
