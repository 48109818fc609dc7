package main

import (
	"net"
	"net/http"
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

// record --otlp, with no other target: a service pushing over OTLP/HTTP
// is recorded as a target of its own (its resource's name), its pushes
// as the exposition the dialects read, so the recording replays.
func TestRecordOTLPPushes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	path := t.TempDir() + "/pushed.rtd"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // a pushing service: every 50 ms until the recording ends
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				resp, err := http.Post("http://"+addr+"/v1/metrics", "application/json", strings.NewReader(pushBody))
				if err == nil {
					resp.Body.Close()
				}
			}
		}
	})
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
