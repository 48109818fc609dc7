package promapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestScrapeInterval: the interval comes from the targets API (the longest
// of the targets the selector can match, a matcher on a label targets do
// not carry ignored), else from the median spacing of up's samples, else
// it is an error; a Source without a range uses twice it, or 1m with the
// reason in the server status.
func TestScrapeInterval(t *testing.T) {
	targets := `{"status":"success","data":{"activeTargets":[
		{"labels":{"job":"checkout","env":"prod"},"scrapeInterval":"15s"},
		{"labels":{"job":"checkout","env":"dev"},"scrapeInterval":"1m"},
		{"labels":{"job":"node"},"scrapeInterval":"30s"}]}}`
	// up: one series scraped every 10 s with one late sample, one every 5 s.
	up := `{"status":"success","data":{"resultType":"matrix","result":[
		{"metric":{"job":"a"},"values":[[1000,"1"],[1010,"1"],[1021,"1"],[1030,"1"]]},
		{"metric":{"job":"b"},"values":[[1000,"1"],[1005,"1"],[1010,"1"]]}]}}`
	for _, tt := range []struct {
		name, selector string
		targets, up    string // "" answers 404
		want           time.Duration
		how, err       string
	}{
		{"all targets", "", targets, "", time.Minute, "scrape interval of the server's targets", ""},
		{"selector", `{job="checkout",env="prod"}`, targets, "", 15 * time.Second, "scrape interval of the server's targets", ""},
		{"regex selector", `job=~"check.*|node", env!="dev"`, targets, "", 30 * time.Second, "scrape interval of the server's targets", ""},
		{"series label ignored", `{job="node",namespace="shop"}`, targets, "", 30 * time.Second, "scrape interval of the server's targets", ""},
		{"no targets API", "", "", up, 10 * time.Second, "sample spacing of up", ""},
		{"nothing", "", "", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, 0, "", "no targets API (HTTP 404)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/api/v1/targets" && tt.targets != "":
					fmt.Fprint(w, tt.targets)
				case r.URL.Path == "/api/v1/query" && tt.up != "" && strings.HasPrefix(r.FormValue("query"), "up"):
					fmt.Fprint(w, tt.up)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			c, err := NewClient(ClientConfig{URL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			got, how, err := c.ScrapeInterval(context.Background(), tt.selector, time.Unix(1030, 0))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want || how != tt.how {
				t.Errorf("ScrapeInterval = %v, %q, %v; want %v, %q", got, how, err, tt.want, tt.how)
			}
		})
	}

	// The Source: twice the interval, or 1m and the reason.
	for _, tt := range []struct {
		targets    string
		want       time.Duration
		statusNote string
	}{
		{targets, 2 * time.Minute, ""},
		{"", time.Minute, "scrape interval unknown (prometheus"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/v1/targets" && tt.targets != "" {
				fmt.Fprint(w, tt.targets)
				return
			}
			if r.URL.Path == "/api/v1/targets" {
				http.NotFound(w, r)
				return
			}
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		}))
		src, err := New(Options{Client: ClientConfig{URL: srv.URL}, Backfill: -1, Clock: func() time.Time { return time.Unix(1700000000, 0) }})
		if err != nil {
			t.Fatal(err)
		}
		st := src.Refresh(context.Background())
		if got := src.Range(); got != tt.want {
			t.Errorf("range %v, want %v", got, tt.want)
		}
		if !strings.Contains(st[0].LastError, tt.statusNote) || tt.statusNote == "" && st[0].LastError != "" {
			t.Errorf("server status %q, want it to hold %q", st[0].LastError, tt.statusNote)
		}
		if q := src.Queries(); len(q) == 0 || !strings.Contains(q[0].PromQL, "["+strings.TrimSuffix(tt.want.String(), "0s")+"]") {
			t.Errorf("queries carry no %v range: %v", tt.want, q[0].PromQL)
		}
		srv.Close()
	}
}
