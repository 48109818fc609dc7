package dialect_test

import (
	"testing"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
)

// Linkerd 1: service rows (originals, retries, results, the budget's
// refusals) and client rows (requeues over physical requests); the
// per-exception failures are not counted twice, the per-interval stats
// (latency) not read as counters.
func TestLinkerd1(t *testing.T) {
	s := translate(t, dialect.NameLinkerd1, "linkerd1_1.7.prom")
	contractOnly(t, s)
	u := []string{dep, "svc/users", "rt", "http"}
	want(t, s, 1000, model.MetricOriginals, u...)
	want(t, s, 60, model.MetricRetries, u...)
	want(t, s, 1060, model.MetricAttempts, u...)
	want(t, s, 4, model.MetricBudgetDenied, u...)
	want(t, s, 17, model.MetricBudgetBalance, u...)
	want(t, s, 2, model.MetricActiveCalls, u...)
	for result, v := range map[string]float64{model.ResultSuccess: 950, model.ResultProviderError: 50, model.ResultCapacityRejected: 0} {
		want(t, s, v, model.MetricResults, append(u, res, result)...)
	}
	// A service without retries: 0 retries is a count (RetryFilter
	// increments retries:total on every retry), attempts its originals.
	o := []string{dep, "svc/orders"}
	want(t, s, 0, model.MetricRetries, o...)
	want(t, s, 200, model.MetricAttempts, o...)
	c := []string{dep, "#/io.l5d.k8s/default/http/users"}
	want(t, s, 1072, model.MetricAttempts, c...)
	want(t, s, 12, model.MetricRetries, c...)
	want(t, s, 0, model.MetricBudgetDenied, c...)
	want(t, s, 1, model.MetricRetryLimitExceeded, c...)
	absent(t, s, model.MetricOriginals, c...)
	absent(t, s, model.MetricResults, c...)
	for _, f := range []string{model.MetricRequestDuration, model.MetricAttemptDuration} {
		absent(t, s, f)
	}
	sig := windowSignals(t, load(t, "linkerd1_1.7.prom"), "svc/users")
	checkSignals(t, map[string]model.Value{"originals": sig.OriginalsPerS, "attempts": sig.AttemptsPerS, "retries": sig.RetriesPerS,
		"effective_success": sig.EffectiveSuccess, "budget_denied": sig.BudgetDeniedPerS},
		map[string]float64{"originals": 100, "attempts": 106, "retries": 6, "effective_success": 0.95, "budget_denied": 0.4})
	// A service whose retries:total is not exposed (a router without
	// linkerd's RetryFilter): retries and attempts unknown, not 0.
	d, _ := dialect.New(dialect.NameLinkerd1)
	s2 := d.Translate(snapOf(parse(t, "rt:service:requests{rt=\"thrift\", service=\"svc/x\"} 5\n")))
	want(t, s2, 5, model.MetricOriginals, dep, "svc/x")
	absent(t, s2, model.MetricRetries)
	absent(t, s2, model.MetricAttempts)
}
