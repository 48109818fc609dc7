package sources

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/scrape"
)

// issue makes a key and a certificate signed by parent (self-signed when
// parent is nil), both written as PEM files in dir.
func issue(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, server bool) (*x509.Certificate, *ecdsa.PrivateKey, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	if parent == nil {
		tmpl.IsCA = true
		parent, parentKey = tmpl, key
	} else if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	kder, _ := x509.MarshalECPrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	for file, b := range map[string][]byte{name + ".crt": certPEM, name + ".key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pair
}

// With a certificate and a client CA, the push port speaks TLS and takes
// only clients with a certificate that CA signed (mutual TLS); what was
// pushed is read on the local listener, never on the push port.
func TestOTLPMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey, _ := issue(t, dir, "ca", nil, nil, false)
	issue(t, dir, "server", ca, caKey, true)
	_, _, clientPair := issue(t, dir, "client", ca, caKey, false)
	p, err := listenOTLP(OTLPSpec{Addr: "127.0.0.1:0", CertFile: filepath.Join(dir, "server.crt"), KeyFile: filepath.Join(dir, "server.key"),
		ClientCAFile: filepath.Join(dir, "ca.crt")}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan []scrape.Target, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(ctx, func() []scrape.Target { return nil }, func(ts []scrape.Target) {
			if len(ts) > 0 {
				got <- ts
			}
		})
	}()
	defer func() { cancel(); <-done }()
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	push := func(certs []tls.Certificate) (int, error) {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
		body := `{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeMetrics":[{"metrics":[{"name":"g","gauge":{"dataPoints":[{"asInt":"1"}]}}]}]}]}`
		resp, err := c.Post("https://"+p.ln.Addr().String()+"/v1/metrics", "application/json", strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := push(nil); err == nil {
		t.Errorf("a push without a client certificate answered %d", code)
	}
	if code, err := push([]tls.Certificate{clientPair}); err != nil || code != http.StatusOK {
		t.Fatalf("a push with the client certificate: %d %v", code, err)
	}
	ts := <-got
	if len(ts) != 1 || ts[0].Name != "svc" || !strings.HasPrefix(ts[0].URL, "http://"+p.local.Addr().String()+"/metrics/") {
		t.Fatalf("targets %+v, want svc on the local listener", ts)
	}
	resp, err := http.Get(ts[0].URL)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the local exposition: %v %v", resp, err)
	}
	resp.Body.Close()
}

// The TLS flags without --otlp, or a certificate without its key, are
// usage errors that say so.
func TestOTLPFlagsNeedEachOther(t *testing.T) {
	for _, tc := range []struct {
		spec OTLPSpec
		want string
	}{
		{OTLPSpec{TokenFile: "t"}, "need --otlp HOST:PORT"},
		{OTLPSpec{Addr: "127.0.0.1:0", CertFile: "c"}, "go together"},
	} {
		_, err := (&Spec{OTLP: tc.spec}).Resolve(nil, time.Second)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.want)
		}
	}
}

// loopbackPushes is a receiver on loopback, closed when t ends.
func loopbackPushes(t *testing.T) *pushes {
	t.Helper()
	p, err := listenOTLP(OTLPSpec{Addr: "127.0.0.1:0"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.ln.Close(); p.local.Close() })
	return p
}

// A pushing resource is a target named job@instance in its job's layer
// (service.namespace/service.name), so replicas fold as a job's do.
func TestOTLPTargetLayerIsJob(t *testing.T) {
	p := loopbackPushes(t)
	for _, inst := range []string{"a", "b"} {
		body := `{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}},` +
			`{"key":"service.namespace","value":{"stringValue":"shop"}},{"key":"service.instance.id","value":{"stringValue":"` + inst + `"}}]},` +
			`"scopeMetrics":[{"metrics":[{"name":"g","gauge":{"dataPoints":[{"asInt":"1"}]}}]}]}]}`
		req := httptest.NewRequest(http.MethodPost, "/v1/metrics", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		p.recv.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("push: %d %s", rec.Code, rec.Body)
		}
	}
	ts := p.targets()
	if len(ts) != 2 || ts[0].Name != "shop/svc@a" || ts[1].Name != "shop/svc@b" || ts[0].Layer != "shop/svc" || ts[1].Layer != "shop/svc" {
		t.Errorf("targets %+v, want shop/svc@a and @b in layer shop/svc", ts)
	}
}

// The dashboard's header names the receiver's refusals: how many, and
// the sender refused most with its last reason, before what prev shows.
func TestOTLPRefusalBadge(t *testing.T) {
	p := loopbackPushes(t)
	s := &Sources{pushes: p}
	status := s.Status(func() string { return "REC" })
	if got := status(); got != "REC" {
		t.Errorf("before a refusal: %q", got)
	}
	var log bytes.Buffer
	w := io.Writer(&log)
	p.log.Store(&w)
	for i, sender := range []string{"10.0.0.66", "10.0.0.66", "10.0.0.7"} {
		req := httptest.NewRequest(http.MethodPost, "/v1/metrics", strings.NewReader(`{"resourceMetrics":[`))
		req.RemoteAddr = sender + ":1234"
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		p.recv.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			t.Fatalf("export %d: %d", i, rec.Code)
		}
	}
	want := "otlp: 3 exports refused, 2 from 10.0.0.66: malformed export: request: unexpected EOF REC"
	if got := status(); got != want {
		t.Errorf("badge %q\nwant %q", got, want)
	}
	// The log names each sender's first refusal, then its 10th, 100th, ….
	wantLog := "retrytop: otlp: export from 10.0.0.66 refused (1 so far): malformed export: request: unexpected EOF\n" +
		"retrytop: otlp: export from 10.0.0.7 refused (1 so far): malformed export: request: unexpected EOF\n"
	if log.String() != wantLog {
		t.Errorf("log\n%s\nwant\n%s", log.String(), wantLog)
	}
	for n, want := range map[int]bool{1: true, 2: false, 10: true, 20: false, 100: true, 101: false, 1000: true} {
		if powerOfTen(n) != want {
			t.Errorf("powerOfTen(%d) = %v", n, !want)
		}
	}
}
