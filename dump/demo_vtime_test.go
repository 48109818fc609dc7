package dump

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/sim"
)

// TestDemoVirtualBytesPerSample records the demo (sim's baseline scenario,
// every target at 1 s) in virtual time, a synctest bubble over the sim's
// in-process transport, for RETRYTOP_DEMO_VIRTUAL (a duration of virtual
// time, e.g. 10m), and reports bytes per sample as TestDemoBytesPerSample
// does for a real recording. Only when asked: 10 virtual minutes cost
// about a minute of CPU.
//
//	RETRYTOP_DEMO_VIRTUAL=10m go test ./dump -run DemoVirtualBytesPerSample -v
//
// RETRYTOP_DEMO_RAW=FILE also writes every body as scraped ("target ns
// length\n" then the body) for experiments with the encoding.
func TestDemoVirtualBytesPerSample(t *testing.T) {
	env := os.Getenv("RETRYTOP_DEMO_VIRTUAL")
	if env == "" {
		t.Skip("set RETRYTOP_DEMO_VIRTUAL=10m to record the demo in virtual time and measure bytes per sample")
	}
	d, err := time.ParseDuration(env)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "demo.rtd")
	var raw bytes.Buffer
	var rawMu sync.Mutex // the scraper calls OnScrape from a goroutine per target
	synctest.Test(t, func(t *testing.T) {
		sc, _ := sim.ScenarioByName("baseline")
		ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
		defer cancel()
		stack, err := sim.Start(ctx, sc, sim.Options{Duration: d, Seed: 7, InProcess: true})
		if err != nil {
			t.Fatal(err)
		}
		defer stack.Close()
		w, err := Create(path, true, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var targets []scrape.Target
		for _, st := range stack.Targets() {
			targets = append(targets, scrape.Target{Name: st.Name, URL: st.URL, Layer: st.Layer, Interval: time.Second})
		}
		hook := w.Hook(func(err error) { t.Error(err) })
		onScrape := func(target string, at time.Time, body []byte, ct string, err error) {
			if err == nil {
				rawMu.Lock()
				defer rawMu.Unlock()
				raw.WriteString(target + " " + strconv.FormatInt(at.UnixNano(), 10) + " " + strconv.Itoa(len(body)) + "\n")
				raw.Write(body)
			}
			hook(target, at, body, ct, err)
		}
		sc2 := scrape.NewScraper(targets, model.NewStore(model.StoreConfig{}), scrape.Options{OnScrape: onScrape, Transport: stack.Transport()})
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
			sc2.ScrapeOnce(ctx)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	})
	if p := os.Getenv("RETRYTOP_DEMO_RAW"); p != "" {
		if err := os.WriteFile(p, raw.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	measure(t, path)
	fmt.Fprint(os.Stderr, "")
}
