package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
)

// pushBody is an OTLP/JSON export of checkout (instance a): 40 attempts
// to payments, cumulative.
const pushBody = `{"resourceMetrics":[{"resource":{"attributes":[
 {"key":"service.name","value":{"stringValue":"checkout"}},{"key":"service.instance.id","value":{"stringValue":"a"}}]},
 "scopeMetrics":[{"metrics":[{"name":"retry.attempts","unit":"{attempt}","sum":{"aggregationTemporality":2,"isMonotonic":true,
 "dataPoints":[{"attributes":[{"key":"dependency","value":{"stringValue":"payments"}},{"key":"outcome","value":{"stringValue":"success"}}],
 "startTimeUnixNano":"1","timeUnixNano":"2","asInt":"40"}]}}]}]}]}`

// pushUntil pushes body to addr every 50 ms until stop closes, with the
// bearer token when given, and returns the last status answered.
func pushUntil(addr, token, body string, stop <-chan struct{}) int {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := 0
	for {
		select {
		case <-stop:
			return last
		case <-tick.C:
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/metrics", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			if resp, err := http.DefaultClient.Do(req); err == nil {
				last = resp.StatusCode
				resp.Body.Close()
			}
		}
	}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// With --otlp-token-file, a push without the token is refused (401) and
// its resource never becomes a target; one with it is recorded.
func TestRecordOTLPToken(t *testing.T) {
	addr := freeAddr(t)
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/token", []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := strings.ReplaceAll(pushBody, `"checkout"`, `"intruder"`)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var good, bad int
	wg.Go(func() { good = pushUntil(addr, "s3cret", pushBody, stop) })
	wg.Go(func() { bad = pushUntil(addr, "", other, stop) })
	_, stderr, err := execute(t, "record", "--otlp", addr, "--otlp-token-file", dir+"/token", "-o", dir+"/p.rtd", "--interval", "100ms", "--duration", "1500ms", "-q")
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("record: %v\n%s", err, stderr)
	}
	if good != http.StatusOK || bad != http.StatusUnauthorized {
		t.Errorf("pushes answered %d with the token, %d without; want 200 and 401", good, bad)
	}
	rec, err := dump.OpenRecording(dir+"/p.rtd", dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if got := rec.Targets(); len(got) != 1 || got[0] != "checkout@a" {
		t.Errorf("targets %v, want only the pusher with the token", got)
	}
}

// record --otlp, with no other target: a service pushing over OTLP/HTTP
// is recorded as a target of its own (its resource's name), its pushes
// as the exposition the dialects read, so the recording replays.
func TestRecordOTLPPushes(t *testing.T) {
	addr := freeAddr(t)
	path := t.TempDir() + "/pushed.rtd"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { pushUntil(addr, "", pushBody, stop) })
	_, stderr, err := execute(t, "record", "--otlp", addr, "-o", path, "--interval", "100ms", "--duration", "2s", "-q")
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("record: %v\n%s", err, stderr)
	}
	rec, err := dump.OpenRecording(path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if got := rec.Targets(); len(got) != 1 || got[0] != "checkout@a" {
		t.Fatalf("targets %v, want the pushing resource", got)
	}
	found := false
	for i := range rec.Len() {
		snap, err := rec.Snapshot(i)
		if err != nil || snap == nil {
			continue
		}
		for _, fam := range snap.Families {
			if fam.Name == model.MetricAttempts {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no %s in the recording of the pushes", model.MetricAttempts)
	}
}

// ":4318" would listen on every interface: it must be asked for by name.
func TestOTLPAddressMustNameHost(t *testing.T) {
	_, _, err := execute(t, "record", "--otlp", ":4318", "-o", t.TempDir()+"/x.rtd", "--duration", "1s", "-q")
	if err == nil || !strings.Contains(err.Error(), "0.0.0.0:4318 for every interface") {
		t.Errorf("err %v", err)
	}
}

// analyze --otlp reads a service that only pushes: over the window its
// resource is a target, its attempts a row.
func TestAnalyzeOTLPPushes(t *testing.T) {
	addr := freeAddr(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { pushUntil(addr, "", pushBody, stop) })
	out, stderr, err := execute(t, "analyze", "--otlp", addr, "--window", "2s", "--interval", "200ms", "--format", "json")
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("analyze: %v\n%s", err, stderr)
	}
	for _, want := range []string{`"name": "checkout@a"`, `"dependency": "payments"`} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in\n%.2000s", want, out)
		}
	}
}

// Two services that only push, checkout calling payments and payments
// calling a database: each resource is named by its attributes
// (service@instance), and its service is service.name, so checkout's
// dependency "payments" links to the pushed payments by name and the
// chain is inferred, as for scraped services.
func TestAnalyzeOTLPChainLinksByService(t *testing.T) {
	addr := freeAddr(t)
	payments := strings.NewReplacer(`"checkout"`, `"payments"`, `"stringValue":"a"`, `"stringValue":"p-1"`,
		`"stringValue":"payments"}},{"key":"outcome"`, `"stringValue":"orders-db"}},{"key":"outcome"`).Replace(pushBody)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { pushUntil(addr, "", pushBody, stop) })
	wg.Go(func() { pushUntil(addr, "", payments, stop) })
	out, stderr, err := execute(t, "analyze", "--otlp", addr, "--window", "2s", "--interval", "200ms", "--format", "json")
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("analyze: %v\n%s", err, stderr)
	}
	var rep struct {
		Targets []struct {
			Name       string `json:"name"`
			Service    string `json:"service"`
			NameSource string `json:"name_source"`
		} `json:"targets"`
		Links []struct {
			Target     string `json:"target"`
			Dependency string `json:"dependency"`
			Service    string `json:"service"`
			Link       string `json:"link"`
		} `json:"links"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	services := map[string]string{}
	for _, tg := range rep.Targets {
		services[tg.Name] = tg.Service + " (" + tg.NameSource + ")"
	}
	if services["checkout@a"] != "checkout (target_info)" || services["payments@p-1"] != "payments (target_info)" {
		t.Errorf("services %v, want checkout and payments from target_info", services)
	}
	linked := false
	for _, l := range rep.Links {
		if l.Target == "checkout" && l.Dependency == "payments" {
			linked = l.Service == "payments" && l.Link == "name"
			if !linked {
				t.Errorf("checkout → payments linked as %+v, want to service payments by name", l)
			}
		}
	}
	if !linked {
		t.Errorf("no link for checkout → payments in %+v", rep.Links)
	}
}
