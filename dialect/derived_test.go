package dialect_test

import (
	"strings"
	"testing"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
)

const derivedBody = `# TYPE shop_calls_total counter
shop_calls_total{upstream="pay"} 100
shop_calls_total{upstream="ship"} 40
# TYPE shop_sent_total counter
shop_sent_total{upstream="pay"} 130
shop_sent_total{upstream="ship"} 40
shop_sent_total{upstream="stock"} 9
# TYPE shop_refused_total counter
shop_refused_total{upstream="pay"} 10
shop_refused_total{upstream="ship"} 0
# TYPE shop_inflight gauge
shop_inflight{upstream="pay"} 6
# TYPE shop_limit gauge
shop_limit{upstream="pay"} 4
`

func derivedMapping(derived ...dialect.Derivation) dialect.Mapping {
	return dialect.Mapping{Name: "shop", DependencyLabel: "upstream", Signals: []dialect.Signal{
		{Family: model.MetricOriginals, Metric: "shop_calls_total"},
		{Family: model.MetricAttempts, Metric: "shop_sent_total"},
		{Family: model.MetricAdmissionRejected, Metric: "shop_refused_total"},
		{Family: model.MetricActiveCalls, Metric: "shop_inflight"},
		{Family: model.MetricConcurrencyLimit, Metric: "shop_limit"},
	}, Derived: derived}
}

// Derived signals: the example (retries = attempts - (originals -
// admission_rejected)) per dependency, clamped at 0, held monotonic, absent
// where an operand is; a gauge ratio; HELP marks them derived.
func TestDerived(t *testing.T) {
	m := derivedMapping(
		dialect.Derivation{Family: model.MetricRetries, Expr: "attempts - (originals - admission_rejected)"},
		dialect.Derivation{Family: model.MetricPendingCalls, Expr: "active_calls - concurrency_limit"},
		dialect.Derivation{Family: model.MetricBudgetBalance, Expr: "(concurrency_limit) / active_calls"},
	)
	d, err := dialect.NewCustom(m)
	if err != nil {
		t.Fatal(err)
	}
	s := d.Translate(snapOf(parse(t, derivedBody)))
	want(t, s, 130-(100-10), model.MetricRetries, dep, "pay")
	want(t, s, 0, model.MetricRetries, dep, "ship")
	absent(t, s, model.MetricRetries, dep, "stock") // no originals, no refusals
	want(t, s, 2, model.MetricPendingCalls, dep, "pay")
	want(t, s, 4.0/6, model.MetricBudgetBalance, dep, "pay")
	if f := family(s, model.MetricRetries); f == nil || f.Help != "derived: attempts - (originals - admission_rejected)" {
		t.Errorf("retries HELP = %+v", f)
	}
	if got := m.DerivedFamilies()[model.MetricRetries]; got != "attempts - (originals - admission_rejected)" {
		t.Errorf("DerivedFamilies = %q", got)
	}
	// A later scrape where originals were counted before their tries
	// (the difference dips while attempts did not fall): held at its
	// previous value, never read as a reset.
	s2 := d.Translate(snapOf(parse(t, strings.Replace(derivedBody, `shop_calls_total{upstream="pay"} 100`, `shop_calls_total{upstream="pay"} 115`, 1))))
	want(t, s2, 40, model.MetricRetries, dep, "pay")
	// The clamp: limit above in-flight is no negative queue.
	s3 := d.Translate(snapOf(parse(t, strings.Replace(derivedBody, `shop_limit{upstream="pay"} 4`, `shop_limit{upstream="pay"} 9`, 1))))
	want(t, s3, 0, model.MetricPendingCalls, dep, "pay")
}

// Bad derivations are errors naming the mapping, the family and where.
func TestDerivedErrors(t *testing.T) {
	for _, c := range []struct {
		d    dialect.Derivation
		want string
	}{
		{dialect.Derivation{Family: model.MetricRetries, Expr: "attempts - hedges"}, `at 12: "hedges" is not a family this mapping maps`},
		{dialect.Derivation{Family: model.MetricRetries, Expr: "attempts / originals"}, "a counter is a sum or difference"},
		{dialect.Derivation{Family: model.MetricRetries, Expr: "attempts - (originals"}, "at 22: missing )"},
		{dialect.Derivation{Family: model.MetricRetries, Expr: "attempts -"}, "expression ends early"},
		{dialect.Derivation{Family: model.MetricRetries, Expr: "attempts * 2"}, `unexpected "*"`},
		{dialect.Derivation{Family: model.MetricAttempts, Expr: "originals"}, "already mapped"},
		{dialect.Derivation{Family: model.MetricRequestDuration, Expr: "originals"}, "not a counter or gauge family"},
	} {
		_, err := dialect.NewCustom(derivedMapping(c.d))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `custom dialect "shop"`) {
			t.Errorf("%q: %v, want %q", c.d.Expr, err, c.want)
		}
	}
	// From YAML: the section parses strictly.
	y := "dialects:\n  - name: shop\n    dependency_label: upstream\n    signals:\n      - {family: retry_originals_total, metric: a_total}\n      - {family: retry_attempts_total, metric: b_total}\n    derived:\n      - {family: retry_retries_total, expr: attempts - originals}\n"
	ms, err := dialect.ParseMappings("c.yml", []byte(y))
	if err != nil || len(ms) != 1 || len(ms[0].Derived) != 1 {
		t.Fatalf("ParseMappings: %v %+v", err, ms)
	}
	if _, err := dialect.ParseMappings("c.yml", []byte(strings.Replace(y, "expr:", "exprs:", 1))); err == nil {
		t.Error("a misspelt key parses")
	}
}
