package dialect_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// parserFunc makes a dialect.ParseFunc a expo.Parser.
type parserFunc dialect.ParseFunc

func (f parserFunc) Parse(target string, body []byte, ct string, filter func(string) bool) ([]model.Family, error) {
	return f(target, body, ct, filter)
}

// A live target no dialect reads: the scraper parses with the
// translator's filter, which drops every family of it, so without Parsing
// Unread can name none; with it, the one scrape after the first is parsed
// whole once and Unread names the target's own families (runtime ones
// last), while what is stored stays the filtered parse.
func TestUnreadLiveNamesFamilies(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "custom_acme.prom"))
	if err != nil {
		t.Fatal(err)
	}
	// A Go service's runtime families beside acme's: they sort first but
	// say nothing of what the target is.
	body = append([]byte("# TYPE go_goroutines gauge\ngo_goroutines 7\n# TYPE go_gc_duration_seconds summary\ngo_gc_duration_seconds_sum 1\ngo_gc_duration_seconds_count 2\n"), body...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	tg, err := scrape.ParseTarget("acme=" + srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, wrap := range []bool{false, true} {
		tr := dialect.Auto()
		var whole atomic.Int32
		var stored []model.Family
		parse := func(target string, b []byte, ct string, filter func(string) bool) ([]model.Family, error) {
			if filter == nil {
				whole.Add(1)
			}
			return expo.ExpfmtParser{}.Parse(target, b, ct, filter)
		}
		opts := scrape.Options{Translate: func(d string, s *model.Snapshot) (*model.Snapshot, string, error) {
			stored = s.Families
			return tr.Translate(d, s)
		}, Filter: tr.Filter, Parser: parserFunc(parse)}
		if wrap {
			opts.Parser = parserFunc(tr.Parsing(parse))
		}
		sc := scrape.NewScraper([]scrape.Target{tg}, model.NewStore(model.StoreConfig{}), opts)
		for range 3 {
			if st := sc.ScrapeOnce(context.Background()); !st[0].Up {
				t.Fatalf("scrape: %s", st[0].LastError)
			}
		}
		err := tr.Unread("acme", srv.URL+"/metrics")
		if err == nil {
			t.Fatal("Unread = nil for a target no dialect reads")
		}
		msg := err.Error()
		if !strings.Contains(msg, `retrytop dialect draft "`+srv.URL+`/metrics"`) || !strings.HasPrefix(msg, `no dialect reads "acme"`) {
			t.Errorf("wrap=%v: Unread = %s", wrap, msg)
		}
		if !wrap {
			if whole.Load() != 0 || !strings.Contains(msg, "none of the families a dialect reads") {
				t.Errorf("filtered only: %d whole parses, Unread = %s", whole.Load(), msg)
			}
			continue
		}
		want := `families such as "acme_call_latency_ms", "acme_calls_total", "acme_tries_total", "go_gc_duration_seconds", "go_goroutines"`
		if !strings.Contains(msg, want) {
			t.Errorf("Unread = %s\nwant %s", msg, want)
		}
		if n := whole.Load(); n != 1 {
			t.Errorf("%d whole parses over 3 scrapes, want 1 (the second)", n)
		}
		filtered, err := expo.ExpfmtParser{}.Parse("acme", body, "text/plain; version=0.0.4", tr.Filter)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(stored, filtered) {
			t.Errorf("stored after the whole parse %v, want the filtered parse %v", stored, filtered)
		}
	}
}

// A body that fails to parse whole (a bad line in a family the filter
// drops) still parses filtered, as without Parsing.
func TestParsingFallsBackToFilter(t *testing.T) {
	tr := dialect.Auto()
	snap := &model.Snapshot{Target: "x", Time: t0, Families: []model.Family{{Name: "acme_calls_total", Type: model.Counter}}}
	if _, _, err := tr.Translate("", snap); err != nil {
		t.Fatal(err)
	}
	body := []byte("acme_bad{ 1\n# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"d\"} 3\n")
	fams, err := tr.Parsing(expo.ExpfmtParser{}.Parse)("x", body, "text/plain; version=0.0.4", tr.Filter)
	if err != nil || len(fams) != 1 || fams[0].Name != "retry_originals_total" {
		t.Fatalf("Parsing = %v, %v; want the filtered parse", fams, err)
	}
}

// Unread's families and target are quoted: no control character reaches
// the terminal; a recording (no URL) is pointed at its /metrics URL.
func TestUnreadEscapes(t *testing.T) {
	tr := dialect.Auto()
	evil := "evil\x1b[31m_total\u202e"
	snap := &model.Snapshot{Target: "t\x1b]0;x\a", Time: t0, Families: []model.Family{{Name: evil, Type: model.Counter, Samples: []model.Sample{{Value: 1}}}}}
	if _, _, err := tr.Translate("", snap); err != nil {
		t.Fatal(err)
	}
	err := tr.Unread(snap.Target, "")
	if err == nil {
		t.Fatal("Unread = nil")
	}
	if strings.ContainsAny(err.Error(), "\x1b\a\u202e") {
		t.Errorf("control characters in %q", err)
	}
	if !strings.Contains(err.Error(), `"evil\x1b[31m_total\u202e"`) || !strings.Contains(err.Error(), "'retrytop dialect draft URL' on its /metrics URL") {
		t.Errorf("Unread = %s", err)
	}
}
