package promapi

import (
	"fmt"
	"strings"
	"time"

	"github.com/retrytop/retrytop/dialect"
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
	// LeScale multiplies the le label of a _bucket query's results into
	// seconds (Envoy's milliseconds: 0.001): PromQL cannot compute a label
	// from a number, so the Source does it.
	LeScale float64
	// Split is set when other queries yield the same _bucket series with
	// another le scale: the results keep a label le_scale apart, so that
	// the series of the queries never mix (analysis adds them up by le).
	Split bool
	// Dialects are the dialects whose expressions the query sums.
	Dialects []string
}

// LabelLeScale tells apart the bucket series of a histogram read through
// two queries with different le scales (Query.Split).
const LabelLeScale = "le_scale"

// BuildQueries returns the queries of one refresh for the native contract
// (docs/metrics.md): per counter family F `sum by (<by>, dependency, <F's
// labels>) (increase(F<selector>[<rng>]))`, per histogram the same for
// F_bucket (with le), F_count and F_sum, and per gauge `sum by (...)
// (F<selector>)` (max for policy settings). selector is empty or a matcher
// list such as `{job="checkout"}`, merged into every metric's selector.
func BuildQueries(by []string, selector string, rng time.Duration) ([]Query, error) {
	return BuildDialectQueries(nil, []string{dialect.NameNative}, by, selector, rng)
}

// BuildDialectQueries returns the queries of one refresh for the named
// dialects of tr (nil: the built-in dialects): one per flat series of the
// contract any of them computes, their expressions summed
// (dialect.Translator.Queries). A dialect without PromQL is an error naming
// it.
func BuildDialectQueries(tr *dialect.Translator, dialects []string, by []string, selector string, rng time.Duration) ([]Query, error) {
	matchers, err := selectorMatchers(selector)
	if err != nil {
		return nil, err
	}
	if tr == nil {
		tr = dialect.Auto()
	}
	dqs, err := tr.Queries(dialects, dialect.QueryOptions{By: by, Matchers: matchers, Range: rng})
	if err != nil {
		return nil, fmt.Errorf("promapi: %w", err)
	}
	count := map[string]int{}
	for _, q := range dqs {
		count[q.Name]++
	}
	out := make([]Query, len(dqs))
	for i, q := range dqs {
		k := Increase
		if q.Gauge {
			k = Level
		}
		out[i] = Query{Name: q.Name, Kind: k, PromQL: q.PromQL, LeScale: q.LeScale, Split: count[q.Name] > 1, Dialects: q.Dialects}
	}
	return out, nil
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
