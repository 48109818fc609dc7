package promapi

import (
	"fmt"
	"strings"
	"time"

	"github.com/retrytop/retrytop/model"
)

// Kind says how a query's results become store series.
type Kind int

const (
	// Increase queries return increase(F[range]) per series; the Source
	// integrates them into a synthetic counter.
	Increase Kind = iota
	// Level queries return a gauge's value as is.
	Level
)

// Query is one PromQL query of a refresh: it yields the flat series Name
// (F, F_bucket, F_count or F_sum) of the metric contract.
type Query struct {
	Name   string // flat series name stored, e.g. retry_pool_wait_seconds_bucket
	Kind   Kind
	PromQL string
}

// family is one contract family: its type, contract labels (besides
// dependency) and, for gauges, the aggregation across replicas.
type family struct {
	name   string
	typ    model.MetricType
	labels []string
	agg    string // gauges: sum or max
}

// families is the metric contract (docs/metrics.md) plus the server-side
// families, in a fixed order.
var families = []family{
	{model.MetricOriginals, model.Counter, []string{model.LabelPriority}, ""},
	{model.MetricAttempts, model.Counter, []string{model.LabelOutcome}, ""},
	{model.MetricRetries, model.Counter, nil, ""},
	{model.MetricRescued, model.Counter, nil, ""},
	{model.MetricBudgetDenied, model.Counter, nil, ""},
	{model.MetricAdmissionRejected, model.Counter, []string{model.LabelPriority, model.LabelReason}, ""},
	{model.MetricResults, model.Counter, []string{model.LabelPriority, model.LabelResult}, ""},
	// Fleet totals: in-flight calls, admitted calls and budget add up
	// across replicas (a limit of 10 on 20 replicas admits 200).
	{model.MetricActiveCalls, model.Gauge, nil, "sum"},
	{model.MetricConcurrencyLimit, model.Gauge, nil, "sum"},
	{model.MetricPoolWait, model.Histogram, nil, ""},
	{model.MetricRequestDuration, model.Histogram, []string{model.LabelResultClass}, ""},
	{model.MetricAttemptDuration, model.Histogram, []string{model.LabelOutcome}, ""},
	{model.MetricBackoff, model.Histogram, nil, ""},
	{model.MetricBudgetBalance, model.Gauge, nil, "sum"},
	// Policy settings are per replica: summing them would be meaningless,
	// the largest configured value is shown.
	{model.MetricPolicyMaxAttempts, model.Gauge, nil, "max"},
	{model.MetricPolicyDeadline, model.Gauge, nil, "max"},
	// Server side: no dependency label, so "dependency" simply drops out
	// of the result's labels.
	{model.MetricServerReceived, model.Counter, nil, ""},
	{model.MetricServerServiceTime, model.Histogram, nil, ""},
	{model.MetricServerWorkAfterCancel, model.Counter, nil, ""},
}

// BuildQueries returns the queries of one refresh: per counter family F
// `sum by (<by>, dependency, <F's labels>) (increase(F<selector>[<rng>]))`,
// per histogram the same for F_bucket (with le), F_count and F_sum, and per
// gauge `sum by (...) (F<selector>)` (max for policy settings). selector is
// empty or a matcher list such as `{job="checkout"}`, merged into every
// metric's selector.
func BuildQueries(by []string, selector string, rng time.Duration) ([]Query, error) {
	matchers, err := selectorMatchers(selector)
	if err != nil {
		return nil, err
	}
	if len(by) == 0 {
		return nil, fmt.Errorf("promapi: no grouping label (--by)")
	}
	for _, l := range by {
		if !validLabelName(l) {
			return nil, fmt.Errorf("promapi: %q is not a label name", l)
		}
	}
	if rng <= 0 {
		return nil, fmt.Errorf("promapi: range must be positive")
	}
	sel := func(name string) string {
		if matchers == "" {
			return name
		}
		return name + "{" + matchers + "}"
	}
	r := formatDuration(rng)
	var out []Query
	for _, f := range families {
		labels := append(append(append([]string(nil), by...), model.LabelDependency), f.labels...)
		switch f.typ {
		case model.Counter:
			out = append(out, Query{f.name, Increase, fmt.Sprintf("sum by (%s) (increase(%s[%s]))", groupList(labels), sel(f.name), r)})
		case model.Gauge:
			out = append(out, Query{f.name, Level, fmt.Sprintf("%s by (%s) (%s)", f.agg, groupList(labels), sel(f.name))})
		case model.Histogram:
			out = append(out, Query{f.name + "_bucket", Increase, fmt.Sprintf("sum by (%s) (increase(%s[%s]))", groupList(append(labels, "le")), sel(f.name+"_bucket"), r)})
			for _, suffix := range []string{"_count", "_sum"} {
				out = append(out, Query{f.name + suffix, Increase, fmt.Sprintf("sum by (%s) (increase(%s[%s]))", groupList(labels), sel(f.name+suffix), r)})
			}
		}
	}
	return out, nil
}

// groupList joins label names without duplicates, in order.
func groupList(labels []string) string {
	seen := make(map[string]bool, len(labels))
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return strings.Join(out, ", ")
}

// selectorMatchers turns `{job="checkout"}` (braces optional) into the
// matcher list `job="checkout"`. It only checks the shape; the server
// parses the matchers and reports its own errors.
func selectorMatchers(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	if strings.HasPrefix(s, "{") != strings.HasSuffix(s, "}") {
		return "", fmt.Errorf("promapi: selector %q: unbalanced braces; want {label=\"value\",...}", s)
	}
	if strings.HasPrefix(s, "{") {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	return strings.TrimSuffix(s, ","), nil
}

func validLabelName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// formatDuration renders d as a PromQL duration (1m, 90s, 1500ms).
func formatDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}
