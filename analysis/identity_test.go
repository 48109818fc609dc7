package analysis

import (
	"slices"
	"testing"

	"github.com/retrytop/retrytop/model"
)

func TestIdentities(t *testing.T) {
	st := load(t, nil, "127.0.0.1:9101", every(t0, 1000, 2),
		ts{model.MetricTargetInfo, []string{"service_name", "app", "service_namespace", "shop", "service_instance_id", "a1"}, "1 1"})
	load(t, st, "127.0.0.1:9102", every(t0, 1000, 2),
		ts{model.MetricTargetInfo, []string{"service_name", "unknown_service:go"}, "1 1"})
	load(t, st, "mine", every(t0, 1000, 2),
		ts{model.MetricTargetInfo, []string{"service_name", "app"}, "1 1"})
	// Resources pushed over OTLP, named by the receiver from their
	// attributes.
	load(t, st, "shop/payments@p-1", every(t0, 1000, 2),
		ts{model.MetricTargetInfo, []string{"service_name", "payments", "service_namespace", "shop", "service_instance_id", "p-1"}, "1 1"})
	load(t, st, "checkout", every(t0, 1000, 2),
		ts{model.MetricTargetInfo, []string{"service_name", "checkout"}, "1 1"})
	load(t, st, "unknown_service:go@x", every(t0, 1000, 2),
		ts{model.MetricTargetInfo, []string{"service_name", "unknown_service:go", "service_instance_id", "x"}, "1 1"})
	statuses := []model.TargetStatus{
		{Name: "127.0.0.1:9101", URL: "http://127.0.0.1:9101/metrics"},
		{Name: "127.0.0.1:9102", URL: "http://127.0.0.1:9102/metrics", Layer: "checkout"},
		{Name: "mine", URL: "http://127.0.0.1:9103/metrics"},
		{Name: "10.0.0.7:8080", URL: "http://10.0.0.7:8080/metrics"},
		{Name: "target-3", URL: "http://[::1]:1/metrics"},
		{Name: "shop/payments@p-1", URL: "http://127.0.0.1:40001/metrics/shop%2Fpayments%40p-1", Layer: "shop/payments"},
		{Name: "checkout", URL: "http://127.0.0.1:40001/metrics/checkout", Layer: "checkout"},
		{Name: "unknown_service:go@x", URL: "http://127.0.0.1:40001/metrics/unknown_service%3Ago%40x", Layer: "unknown_service:go"},
	}
	got := Identities(st, statuses)
	want := map[string]Identity{
		// target_info names an unnamed target.
		"127.0.0.1:9101": {Service: "app", Namespace: "shop", Instance: "a1", Source: NameTargetInfo},
		// An SDK's default service name says nothing: the job does.
		"127.0.0.1:9102": {Service: "checkout", Source: NameJob},
		// A name the user gave wins over target_info.
		"mine":          {Service: "mine", Source: NameUser},
		"10.0.0.7:8080": {Service: "10.0.0.7:8080", Source: NameAddress},
		"target-3":      {Service: "target-3", Source: NameAddress},
		// A pushed resource's name is its attributes', not the user's:
		// the service is service.name, so callers' dependencies link.
		"shop/payments@p-1": {Service: "payments", Namespace: "shop", Instance: "p-1", Source: NameTargetInfo},
		"checkout":          {Service: "checkout", Source: NameTargetInfo},
		// Without a service name, the job (the receiver's layer) names
		// it, as for a scraped target.
		"unknown_service:go@x": {Service: "unknown_service:go", Instance: "x", Source: NameJob},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %+v, want %+v", k, got[k], w)
		}
	}
}

func TestLinkerRules(t *testing.T) {
	statuses := []model.TargetStatus{
		{Name: "127.0.0.1:9101", URL: "http://127.0.0.1:9101/metrics"},
		{Name: "reviews-1", URL: "http://10.1.0.5:9080/stats/prometheus"},
		{Name: "reviews-2", URL: "http://10.1.0.6:9080/stats/prometheus"},
		{Name: "ratings", URL: "http://10.1.0.9:9080/metrics"},
		{Name: "ratings-canary", URL: "http://10.1.0.10:9080/metrics"},
		{Name: "pay-eu", URL: "http://10.2.0.1:80/metrics"},
		{Name: "pay-us", URL: "http://10.2.0.2:80/metrics"},
	}
	ids := map[string]Identity{
		"127.0.0.1:9101": {Service: "client", Source: NameTargetInfo},
		"reviews-1":      {Service: "reviews", Namespace: "bookinfo", Source: NameTargetInfo},
		"reviews-2":      {Service: "reviews", Namespace: "bookinfo", Source: NameTargetInfo},
		"ratings":        {Service: "ratings", Namespace: "bookinfo", Source: NameUser},
		"ratings-canary": {Service: "ratings", Namespace: "canary", Source: NameUser},
		"pay-eu":         {Service: "payments.eu", Source: NameUser},
		"pay-us":         {Service: "payments.us", Source: NameUser},
	}
	l := NewLinker(statuses, ids, []LinkRule{{Dependency: "legacy-db", Service: "ratings"}})
	tests := []struct {
		dep, service, how string
		ambiguous         []string
	}{
		{"client", "client", LinkName, nil},
		{"127.0.0.1:9101", "client", LinkAddress, nil},
		{"http://127.0.0.1:9101/api", "client", LinkAddress, nil},
		{"10.1.0.5:9080", "reviews", LinkAddress, nil},
		{"10.1.0.5", "reviews", LinkAddress, nil},
		{"reviews.bookinfo.svc.cluster.local", "reviews", LinkDNS, nil},
		{"outbound|9080||reviews.bookinfo.svc.cluster.local", "reviews", LinkDNS, nil},
		{"reviews.bookinfo:9080", "reviews", LinkDNS, nil},
		// A namespace that disagrees is no match.
		{"reviews.other.svc.cluster.local", "", "", nil},
		// Two services answer to the name: reported, not guessed.
		{"payments.svc", "", "", []string{"payments.eu", "payments.us"}},
		{"legacy-db", "ratings", LinkConfig, nil},
		// A provider seen only from its callers: a hop with no target.
		{"api.stripe.com", "", "", nil},
		{"provider", "", "", nil},
	}
	for _, tt := range tests {
		s, how, amb := l.Resolve(tt.dep)
		if s != tt.service || how != tt.how || !slices.Equal(amb, tt.ambiguous) {
			t.Errorf("Resolve(%q) = %q %q %v, want %q %q %v", tt.dep, s, how, amb, tt.service, tt.how, tt.ambiguous)
		}
	}
}

// Bare URLs of the chain scenario name themselves through target_info,
// and replicas fold: the chain is browser -> app -> client -> provider,
// with each hop's rates summed over its replicas.
func TestServiceViewFormsTheChain(t *testing.T) {
	sv := model.Some
	row := func(target, dep string, orig, att, maxAtt float64) model.Signals {
		s := model.Signals{Target: target, Dependency: dep, OriginalsPerS: sv(orig), AttemptsPerS: sv(att), MaxAttempts: sv(maxAtt)}
		deriveRatios(&s)
		return s
	}
	rows := []model.Signals{
		row("127.0.0.1:1", "app", 50, 60, 3),
		row("127.0.0.1:2", "client", 30, 45, 3),
		row("127.0.0.1:3", "client", 30, 45, 3),
		row("127.0.0.1:4", "provider", 90, 200, 3),
	}
	ids := map[string]Identity{
		"127.0.0.1:1": {Service: "browser", Source: NameTargetInfo},
		"127.0.0.1:2": {Service: "app", Source: NameTargetInfo},
		"127.0.0.1:3": {Service: "app", Source: NameTargetInfo},
		"127.0.0.1:4": {Service: "client", Source: NameTargetInfo},
	}
	var statuses []model.TargetStatus
	for _, r := range rows {
		statuses = append(statuses, model.TargetStatus{Name: r.Target, URL: "http://" + r.Target + "/metrics"})
	}
	bins := [][]model.Signals{{row("127.0.0.1:2", "client", 30, 45, 3)}, {row("127.0.0.1:3", "client", 30, 45, 3)}}
	for _, v := range bins {
		v[0].StartMs, v[0].EndMs = 0, 10000
	}
	out, outTl, links := ServiceView(rows, timelines(bins...), ids, NewLinker(statuses, ids, nil))
	chains := InferChains(out)
	if len(chains) != 1 || chains[0].Name != "browser -> app -> client -> provider" {
		t.Fatalf("chains %+v", chains)
	}
	r := EvaluateChain(chains[0], out)
	checkValue(t, "worst case", r.WorstCaseAmplification, 27)
	checkValue(t, "app hop attempts (two replicas)", r.Hops[1].AttemptsPerS, 90)
	if got := outTl[model.Key{Target: "app", Dependency: "client"}].Bins(); len(got) != 1 || got[0].AttemptsPerS != sv(90) {
		t.Errorf("app -> client timeline %+v, want one bin of 90 attempts/s", got)
	}
	wantLinks := []Link{
		{Target: "app", Dependency: "client", Service: "client", How: LinkName},
		{Target: "browser", Dependency: "app", Service: "app", How: LinkName},
		{Target: "client", Dependency: "provider"},
	}
	if len(links) != len(wantLinks) {
		t.Fatalf("links %+v", links)
	}
	for i := range wantLinks {
		if links[i].Target != wantLinks[i].Target || links[i].Dependency != wantLinks[i].Dependency ||
			links[i].Service != wantLinks[i].Service || links[i].How != wantLinks[i].How {
			t.Errorf("link %d = %+v, want %+v", i, links[i], wantLinks[i])
		}
	}

	// Every target its own service, names linked as they are: untouched.
	plain := []model.Signals{row("a", "b", 1, 1, 1), row("b", "c", 1, 1, 1)}
	pids := map[string]Identity{"a": {Service: "a", Source: NameUser}, "b": {Service: "b", Source: NameUser}}
	same, _, _ := ServiceView(plain, nil, pids, NewLinker([]model.TargetStatus{{Name: "a"}, {Name: "b"}}, pids, nil))
	if &same[0] != &plain[0] {
		t.Error("a trivial view was copied")
	}
}
