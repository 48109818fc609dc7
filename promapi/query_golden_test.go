package promapi

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/internal/testpeer"
)

var update = flag.Bool("update", false, "rewrite testdata/queries/*.promql from the current queries")

// goldenQueries are the query sets kept in testdata/queries: every dialect
// alone (pools with an attachment, acme the custom mapping of
// custom_acme.prom) and combinations that change the PromQL (Istio next
// to Envoy; expressions of several dialects for one series).
var goldenQueries = []struct {
	file     string
	dialects []string
}{
	{"native", []string{"native"}},
	{"envoy", []string{"envoy"}},
	{"istio", []string{"istio"}},
	{"linkerd", []string{"linkerd"}},
	{"haproxy", []string{"haproxy"}},
	{"grpc", []string{"grpc"}},
	{"resilience4j", []string{"resilience4j"}},
	{"pools", []string{"pools"}},
	{"client-go", []string{"client-go"}},
	{"traefik", []string{"traefik"}},
	{"grpc-prometheus", []string{"grpc-prometheus"}},
	{"polly", []string{"polly"}},
	{"kong", []string{"kong"}},
	{"apisix", []string{"apisix"}},
	{"linkerd1", []string{"linkerd1"}},
	{"otel-http", []string{"otel-http"}},
	{"aws-sdk", []string{"aws-sdk"}},
	{"acme", []string{"acme"}},
	{"acmed", []string{"acmed"}},
	{"istio+envoy", []string{"istio", "envoy"}},
	{"envoy+pools+native", []string{"envoy", "pools", "native"}},
}

func goldenTranslator(t *testing.T) *dialect.Translator {
	t.Helper()
	tr, err := dialect.NewTranslator(dialect.Config{Custom: []dialect.Mapping{acmeMapping, acmeDerived},
		PoolDependency: map[string]string{"HikariPool-1": "orders-db"}})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// renderQueries writes a query set as the golden files hold it.
func renderQueries(qs []Query) string {
	var b strings.Builder
	for _, q := range qs {
		kind := "increase"
		if q.Kind == Level {
			kind = "level"
		}
		fmt.Fprintf(&b, "# %s (%s", q.Name, kind)
		if q.LeScale != 1 {
			fmt.Fprintf(&b, ", le x %g", q.LeScale)
		}
		if q.Split {
			b.WriteString(", split")
		}
		fmt.Fprintf(&b, ") from %s\n%s\n\n", strings.Join(q.Dialects, "+"), q.PromQL)
	}
	return b.String()
}

// TestDialectQueriesGolden compares every dialect's PromQL with
// testdata/queries/*.promql (go test -run Golden -update rewrites them).
func TestDialectQueriesGolden(t *testing.T) {
	tr := goldenTranslator(t)
	for _, g := range goldenQueries {
		qs, err := BuildDialectQueries(tr, g.dialects, []string{"namespace", "job"}, `{namespace="shop"}`, time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", g.file, err)
		}
		got := renderQueries(qs)
		path := filepath.Join("testdata", "queries", g.file+".promql")
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs from the golden file (run with -update and review the diff):\n%s", path, firstDiff(string(want), got))
		}
	}
}

// firstDiff shows the first differing line.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n want %s\n got  %s", i+1, w, g)
		}
	}
	return ""
}

// TestQueriesParseWithPromtool has promtool parse every golden query (as
// recording rules): the strings above are PromQL, not just strings.
func TestQueriesParseWithPromtool(t *testing.T) {
	bin := testpeer.Require(t, "promtool", "prometheus")
	tr := goldenTranslator(t)
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: retrytop\n    rules:\n")
	n := 0
	for _, g := range goldenQueries {
		qs, err := BuildDialectQueries(tr, g.dialects, []string{"namespace", "job"}, `{namespace="shop"}`, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			n++
			fmt.Fprintf(&rules, "      - record: retrytop:q%d\n        expr: %q\n", n, q.PromQL)
		}
	}
	tr2 := dialect.Auto()
	fmt.Fprintf(&rules, "      - record: retrytop:detect\n        expr: %q\n", tr2.DetectQuery(dialect.QueryOptions{By: []string{"job"}, Matchers: `namespace="shop"`}))
	path := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "check", "rules", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("SUCCESS: %d rules found", n+1)) {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}
