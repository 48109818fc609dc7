package sim

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrytop/retrytop/internal/testpeer"
)

// A stack on fixed ports frees them on Close: a second run right after
// gets them again. This is the real-socket test of the loopback stack; it
// asserts nothing that a slow machine could change (the traffic's numbers
// are checked in virtual time, TestHiddenHopInVirtualTime and
// TestScenariosInVirtualTime).
func TestStackPorts(t *testing.T) {
	if testing.Short() {
		t.Skip("loopback run of about 3s")
	}
	sc, _ := ScenarioByName("baseline")
	base := testpeer.FreePortRun(t, 5)
	opts := Options{ListenBase: base, Healthy: 300 * time.Millisecond, Slow: 700 * time.Millisecond, Recovered: 300 * time.Millisecond, HiddenHop: true}
	for run := range 2 {
		s, err := Start(context.Background(), sc, opts)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		tg := s.Targets()
		var names []string
		for i, x := range tg {
			names = append(names, x.Name)
			if want := "http://127.0.0.1:" + strconv.Itoa(base+i) + "/metrics"; i < 3 && x.URL != want {
				t.Errorf("target %s at %s, want %s", x.Name, x.URL, want)
			}
			if !strings.HasPrefix(x.URL, "http://127.0.0.1:") || !strings.HasSuffix(x.URL, "/metrics") {
				t.Errorf("target URL %s", x.URL)
			}
		}
		if strings.Join(names, ",") != "browser,app,client,provider" {
			t.Fatalf("targets %v; the hidden proxy must not be one", names)
		}
		// The provider serves its /metrics over the socket.
		resp, err := http.Get(tg[len(tg)-1].URL)
		if err != nil {
			t.Fatalf("run %d: GET provider metrics: %v", run, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "sim_provider_requests_received_total") {
			t.Errorf("run %d: provider /metrics: %s\n%.200s", run, resp.Status, body)
		}
		s.Wait()
		tr := s.Truth()
		if err := s.Close(); err != nil {
			t.Fatalf("run %d: Close: %v", run, err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if !tr.Done || tr.User.Sent == 0 || tr.User.InFlight != 0 {
			t.Errorf("truth after Wait: done %v, sent %d, in flight %d", tr.Done, tr.User.Sent, tr.User.InFlight)
		}
		if tr.User.Sent+tr.User.Dropped != int64(opts.Healthy+opts.Slow+opts.Recovered)*DefaultRate/int64(time.Second) {
			t.Errorf("run %d: sent %d + dropped %d, want the schedule's %d arrivals", run, tr.User.Sent, tr.User.Dropped,
				int64(opts.Healthy+opts.Slow+opts.Recovered)*DefaultRate/int64(time.Second))
		}
	}
}

// The hidden hop retries without showing up anywhere: its caller names
// the next visible target, and during the slowdown the provider receives
// more than the client sent. In virtual time, with short phases.
func TestHiddenHopInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc, _ := ScenarioByName("baseline")
		opts := Options{Healthy: 2 * time.Second, Slow: 4 * time.Second, Recovered: 3 * time.Second, HiddenHop: true, InProcess: true, Seed: 3}
		s, err := Start(context.Background(), sc, opts)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, x := range s.Targets() {
			names = append(names, x.Name)
			if want := "http://" + x.Name + ".sim/metrics"; x.URL != want {
				t.Errorf("target %s at %s, want %s", x.Name, x.URL, want)
			}
		}
		if strings.Join(names, ",") != "browser,app,client,provider" {
			t.Fatalf("targets %v; the hidden proxy must not be one", names)
		}
		s.Wait()
		tr := s.Truth()
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		deps := map[string]string{}
		for _, h := range tr.Hops {
			deps[h.Name] = h.Dependency
		}
		if deps["browser"] != "app" || deps["app"] != "client" || deps["client"] != "provider" || deps["proxy"] != "provider" {
			t.Errorf("dependencies %v: each must name the next visible target", deps)
		}
		proxy, ok := tr.hop(NameProxy)
		client, _ := tr.hop(NameClient)
		// An attempt cancelled before it was written never reaches the
		// provider, so received <= proxy attempts; but during the slowdown
		// the proxy's retries show as more requests at the provider than
		// the client ever sent.
		if !ok || !proxy.Hidden || proxy.Originals != client.Attempts || tr.Provider.Received > proxy.Attempts ||
			tr.Provider.Received <= client.Attempts {
			t.Errorf("proxy %+v, client attempts %d, provider received %d", proxy, client.Attempts, tr.Provider.Received)
		}
		if !tr.Done || tr.User.Sent != 9*DefaultRate || tr.User.InFlight != 0 {
			t.Errorf("truth after Wait: done %v, sent %d (want 9 s x 50/s), in flight %d", tr.Done, tr.User.Sent, tr.User.InFlight)
		}
		var buf bytes.Buffer
		tr.WriteTable(&buf)
		for _, want := range []string{"scenario baseline", "proxy (hidden)", "provider: received", "slow"} {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("table lacks %q:\n%s", want, buf.String())
			}
		}
	})
}

func TestStartRejectsBadScenario(t *testing.T) {
	sc, _ := ScenarioByName("bounded")
	sc.Layers = append(sc.Layers, Layer{Name: NameApp})
	if s, err := Start(context.Background(), sc, Options{}); err == nil {
		_ = s.Close()
		t.Fatal("Start accepted two layers named app")
	}
}
