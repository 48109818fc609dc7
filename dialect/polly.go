package dialect

import (
	"slices"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Polly v8 resilience pipelines (.NET; Microsoft.Extensions.Http.Resilience
// builds on them) through their "Polly" meter and the OpenTelemetry
// Prometheus exporter: dots become underscores, unit "ms" adds
// _milliseconds, counters get _total. The pipeline (pipeline_name) is the
// dependency.
const (
	plEvents      = "resilience_polly_strategy_events_total"
	plAttempt     = "resilience_polly_strategy_attempt_duration_milliseconds"
	plAttemptBare = "resilience_polly_strategy_attempt_duration" // exporters without the unit suffix
	plPipeline    = "resilience_polly_pipeline_duration_milliseconds"
	plPipeBare    = "resilience_polly_pipeline_duration"
	plPipelineLbl = "pipeline_name"
	plEventLbl    = "event_name"
)

type polly struct{}

func (polly) Name() string { return NamePolly }

func (polly) Families() []string {
	return []string{plEvents, plAttempt, plAttemptBare, plPipeline, plPipeBare}
}

// Detect: the strategy events counter or the attempt or pipeline
// duration.
func (polly) Detect(fams []model.Family) bool {
	return index(fams).has(plEvents, plAttempt, plAttemptBare, plPipeline, plPipeBare)
}

// plOutcome classifies one attempt: handled by the retry predicate (a
// failure worth retrying), else an exception the predicate did not
// handle, else an accepted result.
func plOutcome(ls model.Labels) string {
	switch {
	case strings.EqualFold(ls.Get("attempt_handled"), "true"):
		return model.OutcomeTemporaryError
	case ls.Get("exception_type") != "":
		return model.OutcomePermanentError
	}
	return model.OutcomeSuccess
}

func (polly) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	each := func(f *model.Family, fn func(s *model.Sample, ls model.Labels)) {
		if f == nil {
			return
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			if p := s.Labels.Get(plPipelineLbl); p != "" {
				fn(s, relabel(s.Labels, p, plPipelineLbl, "attempt_handled", "attempt_number", "exception_type", plEventLbl, "event_severity"))
			}
		}
	}
	// Originals: one pipeline execution each, when it ends (its
	// duration's count). Its only outcome label is exception_type, and a
	// handled result (an HTTP 503 returned, not thrown) ends without one:
	// no results.
	pipe := r.first(plPipeline, plPipeBare)
	each(pipe, func(s *model.Sample, ls model.Labels) {
		o.counter(model.MetricOriginals, ls, scalar(pipe, s))
		switch pipe.Type {
		case model.Histogram:
			o.histogram(model.MetricRequestDuration, ls, s, 0.001)
		case model.Summary:
			o.countSum(model.MetricRequestDuration, ls, s.Count, s.Sum*0.001)
		}
	})
	// Attempts: the retry (or hedging) strategy's ExecutionAttempt, one
	// per try when it ends, with its number (0: the first) and whether
	// the retry predicate handled it.
	att := r.first(plAttempt, plAttemptBare)
	later := map[string]float64{}
	numbered := map[string]bool{}
	withAttempts := map[string]model.Labels{}
	var order []string
	each(att, func(s *model.Sample, ls model.Labels) {
		v := scalar(att, s)
		base := ls.Without("strategy_name", "operation_key", "pipeline_instance")
		dep := ls.Get(model.LabelDependency)
		if _, ok := withAttempts[dep]; !ok {
			withAttempts[dep] = base
			order = append(order, dep)
		}
		n := s.Labels.Get("attempt_number")
		numbered[dep] = numbered[dep] || n != ""
		if n != "" && n != "0" {
			later[dep] += v
		}
		ols := ls.With(model.LabelOutcome, plOutcome(s.Labels))
		o.seed(model.MetricAttempts, ls, model.LabelOutcome, model.OutcomeSuccess, model.OutcomeTemporaryError, model.OutcomePermanentError)
		o.counter(model.MetricAttempts, ols, v)
		if att.Type == model.Histogram {
			o.histogram(model.MetricAttemptDuration, ols, s, 0.001)
		}
	})
	// Retries: a pipeline's attempts numbered 1 and up, counted as they
	// end like every attempt; without numbers, its OnRetry events (a
	// severity provider can silence them; then they say nothing).
	// Without either: unknown. One source per pipeline, always the same:
	// an OnRetry series Polly creates on the first retry must not take
	// over from the attempts and count their history again.
	onRetry := map[string]bool{}
	events := r[plEvents]
	breakers := newPlBreakers()
	each(events, func(s *model.Sample, ls model.Labels) {
		ev := s.Labels.Get(plEventLbl)
		breakers.add(ev, ls, scalar(events, s))
		switch ev {
		case "OnRetry":
			dep := ls.Get(model.LabelDependency)
			if numbered[dep] {
				return
			}
			onRetry[dep] = true
			o.counter(model.MetricRetries, ls, scalar(events, s))
		case "OnHedging":
			// One per hedged action launched; its ExecutionAttempt is
			// an attempt numbered 1 and up like a retry's.
			o.counter(model.MetricHedges, ls, scalar(events, s))
		case "OnTimeout":
			o.counter(model.MetricRequestTimeouts, ls, scalar(events, s))
		case "OnRateLimiterRejected":
			o.counter(model.MetricAdmissionRejected, ls.With(model.LabelReason, "rate"), scalar(events, s))
		}
	})
	for _, dep := range order {
		if numbered[dep] {
			o.counter(model.MetricRetries, withAttempts[dep], later[dep])
		}
	}
	breakers.emit(o)
	return o.snapshot(snap)
}

// Polly's circuit breaker reports its transitions as events, never its
// state: OnCircuitOpened (from closed, or from half-open when the probe
// fails), OnCircuitHalfOpened (from open, when the break ends) and
// OnCircuitClosed (from half-open, when the probe succeeds).
const (
	plOpened   = "OnCircuitOpened"
	plHalfOpen = "OnCircuitHalfOpened"
	plClosed   = "OnCircuitClosed"
)

// plTransitions are the transitions in plBreakers' count order.
var plTransitions = []string{plOpened, plHalfOpen, plClosed}

// plBreakers counts each pipeline's breaker transitions since the process
// started, which is when its breaker was closed. Every half-open follows
// an open, so more opens than half-opens means open now. With as many
// of each, every half-open ended (closed, or opened again) or one runs
// now; only when the closes match too is the breaker certainly closed.
// Otherwise, and when the pipeline reported no transition at all, the
// state is unknown: counts cannot tell a closed breaker from a half-open
// one. A manual Isolate or Close (CircuitBreakerManualControl) breaks the
// sequence the counts rely on, as does a severity provider that silences
// one of the three events (docs/dialects.md).
type plBreakers struct {
	order  []string
	labels map[string]model.Labels
	counts map[string]*[3]float64 // opened, half-opened, closed
}

func newPlBreakers() *plBreakers {
	return &plBreakers{labels: map[string]model.Labels{}, counts: map[string]*[3]float64{}}
}

func (b *plBreakers) add(event string, ls model.Labels, v float64) {
	i := slices.Index(plTransitions, event)
	if i < 0 {
		return
	}
	dep := ls.Get(model.LabelDependency)
	c := b.counts[dep]
	if c == nil {
		c = &[3]float64{}
		b.counts[dep] = c
		b.labels[dep] = ls.Without(plEventLbl, "event_severity", "strategy_name", "operation_key", "pipeline_instance")
		b.order = append(b.order, dep)
	}
	c[i] += v // a count that is not a number makes the state unknown
}

func (b *plBreakers) emit(o *out) {
	for _, dep := range b.order {
		c := b.counts[dep]
		switch opened, half, closed := c[0], c[1], c[2]; {
		case !valid(opened) || !valid(half) || !valid(closed):
		case opened > half:
			o.gauge(model.MetricBreakerState, b.labels[dep], model.BreakerOpen)
		case opened == half && half == closed:
			o.gauge(model.MetricBreakerState, b.labels[dep], model.BreakerClosed)
		}
	}
}
