package sources

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/discovery"
)

// TestResolve: arguments and --chain add up, a name given twice with
// one URL is one target, with two URLs an error; chains are numbered.
func TestResolve(t *testing.T) {
	spec := &Spec{Chains: []string{"app=http://a:1/metrics,db=http://d:2/metrics@envoy"}}
	src, err := spec.Resolve([]string{"app=http://a:1/metrics", "web=http://w:3/metrics"}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range src.Targets {
		names = append(names, tg.Name+"@"+tg.Dialect+"/"+tg.Interval.String())
	}
	if got, want := strings.Join(names, " "), "app@/2s web@/2s db@envoy/2s"; got != want {
		t.Errorf("targets %q, want %q", got, want)
	}
	if len(src.Chains) != 1 || src.Chains[0].Name != "chain1" || strings.Join(src.Chains[0].Targets, ",") != "app,db" {
		t.Errorf("chains %+v", src.Chains)
	}
	if src.Translate == nil {
		t.Error("no translator")
	}
	if _, err := spec.Resolve([]string{"app=http://other:1/metrics"}, time.Second); err == nil || !strings.Contains(err.Error(), `"app" is given twice`) {
		t.Errorf("a name with two URLs: %v", err)
	}
	if _, err := (&Spec{}).Resolve(nil, time.Second); !errors.Is(err, ErrNoTargets) {
		t.Errorf("nothing given: %v, want ErrNoTargets", err)
	}
	if _, err := (&Spec{Jobs: []string{"api"}}).Resolve(nil, time.Second); err == nil || !strings.Contains(err.Error(), "--prometheus-config") {
		t.Errorf("--job alone: %v", err)
	}
	if _, err := (&Spec{Chains: []string{"app=http://a:1/metrics@nosuch"}}).Resolve(nil, time.Second); err == nil || !strings.Contains(err.Error(), `target "app"`) {
		t.Errorf("an unknown forced dialect: %v", err)
	}
}

// TestForRecordings: no target is required; a forced dialect and the
// chains carry over.
func TestForRecordings(t *testing.T) {
	rs, err := (&Spec{}).ForRecordings()
	if err != nil || len(rs.Forced) != 0 || rs.Chains != nil {
		t.Fatalf("empty spec: %+v, %v", rs, err)
	}
	rs, err = (&Spec{Chains: []string{"gw=http://g:1/metrics@envoy,app=http://a:2/metrics"}}).ForRecordings()
	if err != nil {
		t.Fatal(err)
	}
	if rs.Forced["gw"] != "envoy" || len(rs.Forced) != 1 {
		t.Errorf("forced %v, want gw: envoy", rs.Forced)
	}
	if len(rs.Chains) != 1 || strings.Join(rs.Chains[0].Targets, ",") != "gw,app" {
		t.Errorf("chains %+v", rs.Chains)
	}
	if rs.NewTranslator() == rs.NewTranslator() {
		t.Error("NewTranslator returned the same translator twice: dialects keep per-target state")
	}
}

// TestStatusBadge: the first discovery problem, its file's base name, how
// many more, then the previous badge; none without a watcher.
func TestStatusBadge(t *testing.T) {
	prev := func() string { return "● REC" }
	src := &Sources{}
	if got := src.Status(prev)(); got != "● REC" {
		t.Errorf("no discovery: %q", got)
	}
	src.watcher = &discovery.Watcher{}
	src.setBadge(discovery.Set{Errors: []string{"/etc/prom/targets.json: line 3: bad"}, Warnings: []string{"w"}})
	if got, want := src.Status(prev)(), "discovery: targets.json: line 3: bad (+1 more) ● REC"; got != want {
		t.Errorf("badge %q, want %q", got, want)
	}
	src.setBadge(discovery.Set{})
	if got := src.Status(prev)(); got != "● REC" {
		t.Errorf("problems gone: %q", got)
	}
}
