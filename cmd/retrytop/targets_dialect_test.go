package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/replay"
	"github.com/retrytop/retrytop/sources"
)

// dialectFixtures are served one per target: their dialects as the
// detection rules find them (docs/dialects.md), and acme, which none reads.
var dialectFixtures = map[string]string{
	"kong":   "kong_3.x.prom",
	"spring": "resilience4j_spring.prom",
	"envoy":  "envoy.prom",
	"acme":   "custom_acme.prom",
}

// serveFixtures serves every fixture at its own URL and returns the
// name=URL arguments.
func serveFixtures(t *testing.T) []string {
	t.Helper()
	var args []string
	for name, file := range dialectFixtures {
		body, err := os.ReadFile(filepath.Join("../../dialect/testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write(body)
		}))
		t.Cleanup(srv.Close)
		args = append(args, name+"="+srv.URL+"/metrics")
	}
	return args
}

// targetDialects reads targets[].dialects of analyze's JSON by name.
func targetDialects(t *testing.T, out string) map[string][]string {
	t.Helper()
	var rep unreadReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := map[string][]string{}
	for _, tg := range rep.Targets {
		m[tg.Name] = tg.Dialects
	}
	return m
}

// targets[].dialects is the same for a recording as for the live run it
// recorded: the targets are scraped live by analyze, recorded by retrytop
// record, and the recording analysed (it said [] for every target).
func TestRecordingDialectsMatchLive(t *testing.T) {
	args := serveFixtures(t)
	out, stderr, err := execute(t, append([]string{"analyze", "--window", "300ms", "--interval", "100ms", "-q", "--format", "json"}, args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	live := targetDialects(t, out)
	if len(live) != len(dialectFixtures) || len(live["kong"]) == 0 || len(live["acme"]) != 0 {
		t.Fatalf("live dialects %v: want every target, kong read, acme not", live)
	}
	path := filepath.Join(t.TempDir(), "fixtures.rtd")
	if _, stderr, err := execute(t, append([]string{"record", "-o", path, "--interval", "100ms", "--duration", "500ms", "-q"}, args...)...); err != nil {
		t.Fatalf("record: %v\n%s", err, stderr)
	}
	out, stderr, err = execute(t, "analyze", path, "--format", "json", "--window", "300ms")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if rec := targetDialects(t, out); !reflect.DeepEqual(rec, live) {
		t.Errorf("recording's dialects %v\nlive run's %v", rec, live)
	}
}

// replay: the dashboard's source carries each target's dialects (any of
// the replay's translators that read it), and its header badge names the
// target none reads.
func TestReplayDialectsAndUnreadBadge(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "two.rtd")
	kong, err := os.ReadFile("../../dialect/testdata/kong_3.x.prom")
	if err != nil {
		t.Fatal(err)
	}
	acme, err := os.ReadFile(acmeFixture)
	if err != nil {
		t.Fatal(err)
	}
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= 10; i++ {
		at := recT0.Add(time.Duration(i) * time.Second)
		if err := w.Append("kong", at, "text/plain; version=0.0.4", kong); err != nil {
			t.Fatal(err)
		}
		if err := w.Append("acme", at.Add(10*time.Millisecond), "text/plain; version=0.0.4", acme); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var f replayFlags
	rs, err := f.src.forRecordings()
	if err != nil {
		t.Fatal(err)
	}
	d := replay.NewDialects(rs.NewTranslator, rs.Forced)
	var errs strings.Builder
	rec, err := openTranslated(&errs, path, "", d.Filter, nil, d.Wrap) // as replay opens it
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	player := replay.New(rec, replay.Options{NewTransform: d.Transform, Lookback: time.Minute})
	player.SeekEnd()
	player.Settle()
	got := map[string]string{}
	for _, s := range d.Source(player).Statuses() {
		got[s.Name] = s.Dialect
	}
	if got["kong"] != "kong" || got["acme"] != "" {
		t.Errorf("replay statuses' dialects %v, want kong read by kong, acme by none", got)
	}
	badge := sources.UnreadBadge(d.Latest, d.Source(player).Statuses, nil)()
	if badge != `no dialect reads "acme": retrytop dialect draft URL` {
		t.Errorf("badge %q", badge)
	}
	if err := d.Latest().Unread("acme", ""); err == nil || !strings.Contains(err.Error(), `families such as "acme_call_latency_ms"`) {
		t.Errorf("replay's Unread = %v, want acme's families named", err)
	}
}
