package retry

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// buckets are the upper bounds, in seconds, of every duration histogram
// (pool wait, request, attempt, backoff). They resolve a sub-millisecond
// local refusal (0.5 ms, 1 ms) as well as a multi-second slow call (2.5 s,
// 5 s, 10 s) on a 1-2.5-5 ladder: 14 buckets plus +Inf. docs/metrics.md
// lists them; change both together.
var buckets = []float64{
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// Attempt outcomes, the retry_attempts_total / retry_attempt_duration_seconds
// "outcome" label values.
const (
	outcomeSuccess = iota
	outcomeTemporary
	outcomePermanent
	outcomeTimeout
	outcomeCancelled
	numOutcomes
)

// outcomeNames: "cancelled" is an attempt stopped by its caller's cancel,
// never a provider's answer, so it is kept apart from permanent_error.
var outcomeNames = [numOutcomes]string{"success", "temporary_error", "permanent_error", "timeout", "cancelled"}

// Request duration classes, the "result_class" label values.
const (
	classSuccess = iota
	classFastFailure
	classFailure
	numResultClasses
)

var resultClassNames = [numResultClasses]string{"success", "fast_failure", "failure"}

// Metrics holds the contract's metric families (docs/metrics.md). One
// Metrics serves any number of dependencies, told apart by the "dependency"
// label; give each dependency one Owner. Create one Metrics per registry.
type Metrics struct {
	originals         *prometheus.CounterVec
	attempts          *prometheus.CounterVec
	retries           *prometheus.CounterVec
	rescued           *prometheus.CounterVec
	budgetDenied      *prometheus.CounterVec
	admissionRejected *prometheus.CounterVec
	results           *prometheus.CounterVec
	active            *prometheus.GaugeVec
	concurrencyLimit  *prometheus.GaugeVec
	poolWait          *prometheus.HistogramVec
	requestDuration   *prometheus.HistogramVec
	attemptDuration   *prometheus.HistogramVec
	backoff           *prometheus.HistogramVec
	policyMaxAttempts *prometheus.GaugeVec
	policyDeadline    *prometheus.GaugeVec
	budgetBalance     *budgetCollector
	abandoned         *prometheus.CounterVec
	lateSuccesses     *prometheus.CounterVec
	nested            *prometheus.CounterVec
	hedges            *prometheus.CounterVec
	hedgesWon         *prometheus.CounterVec
	hedgesAbandoned   *prometheus.CounterVec
	operationAttempts *prometheus.CounterVec
	panics            *prometheus.CounterVec
}

// NewMetrics creates the metric families and registers them on reg (never
// on the global registry). It panics if registration fails, as
// prometheus.MustRegister does, e.g. when reg already holds them. A nil reg
// leaves the families unregistered, which is how an Owner without Metrics
// runs.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	m := &Metrics{
		originals: counter("retry_originals_total",
			"Logical operations started, one per caller request.", "dependency", "priority"),
		attempts: counter("retry_attempts_total",
			"Attempts that went to the provider, first tries and retries, by outcome.", "dependency", "outcome"),
		retries: counter("retry_retries_total",
			"Attempts after the first.", "dependency"),
		rescued: counter("retry_rescued_total",
			"Operations that succeeded after at least one retry.", "dependency"),
		budgetDenied: counter("retry_budget_denied_total",
			"Retries not made because the shared retry budget was empty.", "dependency"),
		admissionRejected: counter("retry_admission_rejected_total",
			"Attempts refused locally before reaching the provider (load shedding).", "dependency", "priority", "reason"),
		results: counter("retry_results_total",
			"Final result of each operation.", "dependency", "priority", "result"),
		active: gauge("retry_active_calls",
			"Attempts in flight now.", "dependency"),
		concurrencyLimit: gauge("retry_concurrency_limit",
			"Admission limit on concurrent attempts; absent when unlimited.", "dependency"),
		poolWait: histogram("retry_pool_wait_seconds",
			"Time waiting for a connection or slot before an attempt could start.", "dependency"),
		requestDuration: histogram("retry_request_duration_seconds",
			"Whole-operation latency; fast_failure means refused locally without waiting on the provider.", "dependency", "result_class"),
		attemptDuration: histogram("retry_attempt_duration_seconds",
			"One attempt's latency, by outcome.", "dependency", "outcome"),
		backoff: histogram("retry_backoff_seconds",
			"Time slept between attempts, Retry-After included; a sleep cut short by the caller's cancel records the part slept.", "dependency"),
		policyMaxAttempts: gauge("retry_policy_max_attempts",
			"Configured attempt cap, first try included.", "dependency"),
		policyDeadline: gauge("retry_policy_deadline_seconds",
			"Configured operation deadline cap; absent when there is none.", "dependency"),
		abandoned: counter("retry_abandoned_attempts_total",
			"Attempts that ignored their ctx: still running 100 ms after the owner stopped waiting for them (deadline, cancel, hedge lost); they finish in the background, holding their slot.", "dependency"),
		lateSuccesses: counter("retry_late_successes_total",
			"Abandoned attempts that later succeeded: work the provider did for nobody.", "dependency"),
		nested: counter("retry_nested_operations_total",
			"Operations started inside an attempt of another owner (outer_dependency); its result is final there, never retried.", "dependency", "outer_dependency"),
		operationAttempts: counter("retry_operation_attempts_total",
			"Attempts of the operations that ended, added when each ends: over the admitted operations that ended, amplification counted at one moment.", "dependency"),
		hedges: counter("retry_hedges_total",
			"Hedged attempts: sent while an earlier attempt of the same operation was still running (also counted as attempts and retries).", "dependency"),
		hedgesWon: counter("retry_hedges_won_total",
			"Hedged attempts whose success decided their operation: the hedge answered first.", "dependency"),
		hedgesAbandoned: counter("retry_hedges_abandoned_total",
			"Hedged attempts still running when their round was decided (an earlier attempt answered first, or the operation ended): cancelled, their answer unused.", "dependency"),
		panics: counter("retry_attempt_panics_total",
			"Attempts that panicked: re-raised in Do's goroutine when Do waited for them, recovered and handed to Config.OnPanic otherwise.", "dependency"),
		budgetBalance: &budgetCollector{
			desc: prometheus.NewDesc("retry_budget_balance",
				"Retries the shared retry budget would allow now; absent without a budget.", []string{"dependency"}, nil),
			budgets: map[string]*Budget{},
		},
	}
	if reg != nil {
		reg.MustRegister(m.originals, m.attempts, m.retries, m.rescued, m.budgetDenied,
			m.admissionRejected, m.results, m.active, m.concurrencyLimit, m.poolWait,
			m.requestDuration, m.attemptDuration, m.backoff, m.policyMaxAttempts,
			m.policyDeadline, m.budgetBalance, m.abandoned, m.lateSuccesses, m.nested, m.hedges, m.hedgesWon, m.hedgesAbandoned, m.operationAttempts,
			m.panics)
	}
	return m
}

// budgetCollector reads budget balances at scrape time: the balance changes
// on every operation, and reading it then is exact and costs Do nothing.
type budgetCollector struct {
	desc    *prometheus.Desc
	mu      sync.Mutex
	budgets map[string]*Budget
}

func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for dep, b := range c.budgets {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(b.Retries()), dep)
	}
}

func (c *budgetCollector) set(dep string, b *Budget) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b == nil {
		delete(c.budgets, dep)
		return
	}
	c.budgets[dep] = b
}

// instruments are one dependency's children, resolved once in New so Do
// never looks labels up. Creating them also exports every series at zero
// from the start, so rates work before the first event.
type instruments struct {
	originals         [numPriorities]prometheus.Counter
	admissionRejected [numPriorities]prometheus.Counter
	results           [numPriorities][numResults]prometheus.Counter
	attempts          [numOutcomes]prometheus.Counter
	attemptDuration   [numOutcomes]prometheus.Observer
	requestDuration   [numResultClasses]prometheus.Observer
	retries           prometheus.Counter
	rescued           prometheus.Counter
	budgetDenied      prometheus.Counter
	active            prometheus.Gauge
	poolWait          prometheus.Observer
	backoff           prometheus.Observer
	abandoned         prometheus.Counter
	lateSuccesses     prometheus.Counter
	hedges            prometheus.Counter
	hedgesWon         prometheus.Counter
	hedgesAbandoned   prometheus.Counter
	operationAttempts prometheus.Counter
	panics            prometheus.Counter
	nested            *prometheus.CounterVec // by outer dependency, rare: looked up per use
	dep               string
}

func (m *Metrics) bind(dep string, p Policy, l *Limiter, b *Budget) *instruments {
	in := &instruments{
		retries:           m.retries.WithLabelValues(dep),
		rescued:           m.rescued.WithLabelValues(dep),
		budgetDenied:      m.budgetDenied.WithLabelValues(dep),
		active:            m.active.WithLabelValues(dep),
		poolWait:          m.poolWait.WithLabelValues(dep),
		backoff:           m.backoff.WithLabelValues(dep),
		abandoned:         m.abandoned.WithLabelValues(dep),
		lateSuccesses:     m.lateSuccesses.WithLabelValues(dep),
		hedges:            m.hedges.WithLabelValues(dep),
		hedgesWon:         m.hedgesWon.WithLabelValues(dep),
		hedgesAbandoned:   m.hedgesAbandoned.WithLabelValues(dep),
		operationAttempts: m.operationAttempts.WithLabelValues(dep),
		panics:            m.panics.WithLabelValues(dep),
		nested:            m.nested,
		dep:               dep,
	}
	for _, pri := range []Priority{Sheddable, Critical} {
		i := pri.index()
		in.originals[i] = m.originals.WithLabelValues(dep, pri.String())
		// Only "concurrency" is pre-created: this library has no queue or
		// rate limiter, and a series it can never move would mislead.
		in.admissionRejected[i] = m.admissionRejected.WithLabelValues(dep, pri.String(), "concurrency")
		for r := range numResults {
			in.results[i][r] = m.results.WithLabelValues(dep, pri.String(), resultNames[r])
		}
	}
	for o := range numOutcomes {
		in.attempts[o] = m.attempts.WithLabelValues(dep, outcomeNames[o])
		in.attemptDuration[o] = m.attemptDuration.WithLabelValues(dep, outcomeNames[o])
	}
	for c := range numResultClasses {
		in.requestDuration[c] = m.requestDuration.WithLabelValues(dep, resultClassNames[c])
	}
	m.policyMaxAttempts.WithLabelValues(dep).Set(float64(p.MaxAttempts))
	if p.Deadline > 0 {
		m.policyDeadline.WithLabelValues(dep).Set(p.Deadline.Seconds())
	} else {
		m.policyDeadline.DeleteLabelValues(dep)
	}
	if l != nil {
		m.concurrencyLimit.WithLabelValues(dep).Set(float64(l.Limit()))
	} else {
		m.concurrencyLimit.DeleteLabelValues(dep)
	}
	m.budgetBalance.set(dep, b)
	return in
}
