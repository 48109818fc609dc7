package dialect

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Draft writes a commented YAML custom mapping (a config file's dialects:
// section, docs/dialects.md "Custom") for an exposition no dialect reads:
// it proposes originals, attempts, retries, refusals, outcomes and
// latency from the families' names, types, units and label values, and
// says in comments why it chose each and what it could not guess. The
// draft parses and compiles as it is; every guess is meant to be
// reviewed. source names the exposition in the header. Names and values
// from the exposition are quoted, never written raw.
func Draft(source string, fams []model.Family) string {
	d := drafter{fams: fams}
	d.classify()
	return d.render(source)
}

// draftSignal is one proposed signal and why.
type draftSignal struct {
	Signal
	why string
}

type drafter struct {
	fams    []model.Family
	signals []draftSignal
	missing []string
	depLbl  string
	depWhy  string
	used    map[string]bool
}

// draftStatusLabels are label names that carry a call's status, most
// specific first.
var draftStatusLabels = []string{"http_response_status_code", "status_code", "http_status", "grpc_code", "grpc_status", "code", "status", "outcome", "result"}

// draftDepLabels are label names that usually name the callee, in order of
// preference.
var draftDepLabels = []string{"dependency", "upstream", "downstream", "service", "target", "server_address", "host", "peer", "backend", "cluster", "destination", "endpoint", "client", "remote", "name"}

// draftUnit returns the scale into seconds a family's name implies, and
// whether the name said.
func draftUnit(n string) (float64, bool) {
	for _, u := range []struct {
		suffix string
		scale  float64
	}{{"_seconds", 1}, {"_milliseconds", 0.001}, {"_ms", 0.001}, {"_microseconds", 1e-6}, {"_us", 1e-6}, {"_nanoseconds", 1e-9}, {"_ns", 1e-9}, {"_nanos", 1e-9}, {"_millis", 0.001}} {
		if strings.HasSuffix(n, u.suffix) {
			return u.scale, true
		}
	}
	return 1, false
}

func has(n string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// statusLabel returns the status-like label of a family and its values
// (sorted), "" when none.
func statusLabel(f *model.Family) (string, []string) {
	for _, l := range draftStatusLabels {
		var vs []string
		for i := range f.Samples {
			if v := f.Samples[i].Labels.Get(l); v != "" && !slices.Contains(vs, v) {
				vs = append(vs, v)
			}
		}
		if len(vs) > 0 {
			sort.Strings(vs)
			return l, vs
		}
	}
	return "", nil
}

// statusKind tells HTTP status codes from gRPC code names.
func statusKind(vs []string) string {
	http, grpc := true, true
	for _, v := range vs {
		if len(v) != 3 || v[0] < '1' || v[0] > '5' {
			http = false
		}
		if _, ok := gpCanonicalNames[strings.ToUpper(strings.ReplaceAll(v, "_", ""))]; !ok {
			grpc = false
		}
	}
	switch {
	case http:
		return "http"
	case grpc:
		return "grpc"
	}
	return ""
}

// gpCanonicalNames are gRPC's code names, upper case without underscores.
var gpCanonicalNames = map[string]bool{
	"OK": true, "CANCELLED": true, "CANCELED": true, "UNKNOWN": true, "INVALIDARGUMENT": true, "DEADLINEEXCEEDED": true,
	"NOTFOUND": true, "ALREADYEXISTS": true, "PERMISSIONDENIED": true, "RESOURCEEXHAUSTED": true, "FAILEDPRECONDITION": true,
	"ABORTED": true, "OUTOFRANGE": true, "UNIMPLEMENTED": true, "INTERNAL": true, "UNAVAILABLE": true, "DATALOSS": true, "UNAUTHENTICATED": true,
}

// split proposes the outcome (or result) signals of one counter by its
// status label.
func (d *drafter) split(family, metric, label string, vs []string, outcome bool) bool {
	key, fail, ok := model.LabelOutcome, model.OutcomeTemporaryError, model.OutcomeSuccess
	if !outcome {
		key, fail, ok = model.LabelResult, model.ResultProviderError, model.ResultSuccess
	}
	var failRe string
	switch statusKind(vs) {
	case "http":
		failRe = "5..|429"
	case "grpc":
		failRe = "(?i)unavailable|resource_?exhausted|aborted|internal|unknown|deadline_?exceeded"
	default:
		return false
	}
	why := fmt.Sprintf("%s values %s", label, draftList(vs, 6))
	d.signals = append(d.signals,
		draftSignal{Signal{Family: family, Metric: metric, Match: []string{label + `=~"` + failRe + `"`}, Labels: map[string]string{key: fail}}, why + ": failures"},
		draftSignal{Signal{Family: family, Metric: metric, Match: []string{label + `!~"` + failRe + `"`}, Labels: map[string]string{key: ok}}, "the other values"})
	return true
}

func (d *drafter) classify() {
	d.used = map[string]bool{}
	var originals, attempts, retries, latency bool
	add := func(f *model.Family, family, why string, scale float64) {
		d.signals = append(d.signals, draftSignal{Signal{Family: family, Metric: f.Name, Scale: scale}, why})
		d.used[f.Name] = true
	}
	fams := make([]*model.Family, len(d.fams))
	for i := range d.fams {
		fams[i] = &d.fams[i]
	}
	sort.SliceStable(fams, func(i, j int) bool { return fams[i].Name < fams[j].Name })
	for _, f := range fams {
		n := strings.ToLower(f.Name)
		counter := f.Type == model.Counter || f.Type == model.Untyped && strings.HasSuffix(n, "_total")
		switch {
		case counter && has(n, "budget", "exhaust", "throttl", "denied"):
			add(f, model.MetricBudgetDenied, "counter named for a budget or throttle", 0)
		case counter && has(n, "reject", "shed", "overflow", "ratelimit", "rate_limit", "limited"):
			add(f, model.MetricAdmissionRejected, "counter named for refusals", 0)
		case counter && has(n, "retr") && !retries:
			retries = true
			add(f, model.MetricRetries, "counter named for retries", 0)
		case counter && has(n, "attempt", "tries", "_try") && !attempts:
			attempts = true
			d.used[f.Name] = true
			if l, vs := statusLabel(f); l == "" || !d.split(model.MetricAttempts, f.Name, l, vs, true) {
				add(f, model.MetricAttempts, "counter named for attempts or tries (no status label to split outcomes by)", 0)
			}
		case counter && has(n, "timeout"):
			add(f, model.MetricRequestTimeouts, "counter named for timeouts", 0)
		case counter && has(n, "request", "call", "operation", "_ops", "invocation", "quer") && !originals:
			originals = true
			add(f, model.MetricOriginals, "counter named for requests or calls, not for retries or tries", 0)
			if l, vs := statusLabel(f); l != "" {
				d.split(model.MetricResults, f.Name, l, vs, false)
			}
		case (f.Type == model.Histogram || f.Type == model.Summary) && has(n, "latency", "duration", "time", "wait", "_seconds", "_ms", "_milliseconds"):
			scale, said := draftUnit(n)
			unit := "unit from the name"
			if !said {
				unit = "no unit in the name: seconds assumed, set scale"
			}
			switch {
			case has(n, "attempt", "try", "tries"):
				add(f, model.MetricAttemptDuration, f.Type.String()+" of tries' durations; "+unit, scale)
			case has(n, "wait", "acquire", "pool", "queue"):
				add(f, model.MetricPoolWait, f.Type.String()+" of waits; "+unit, scale)
			case has(n, "backoff", "delay", "sleep"):
				add(f, model.MetricBackoff, f.Type.String()+" of backoff delays; "+unit, scale)
			case !latency:
				latency = true
				add(f, model.MetricRequestDuration, f.Type.String()+" of request durations; "+unit, scale)
			}
		case f.Type == model.Gauge && has(n, "in_flight", "inflight", "active", "concurrent", "outstanding"):
			add(f, model.MetricActiveCalls, "gauge of calls in progress", 0)
		case f.Type == model.Gauge && has(n, "pending", "queue", "waiting"):
			add(f, model.MetricPendingCalls, "gauge of waiting calls", 0)
		}
	}
	if !originals && latency {
		for _, s := range d.signals {
			if s.Family == model.MetricRequestDuration {
				d.signals = append(d.signals, draftSignal{Signal{Family: model.MetricOriginals, Metric: s.Metric},
					"no counter of requests: the latency's count, one per request"})
				originals = true
				break
			}
		}
	}
	if !originals {
		d.missing = append(d.missing, "retry_originals_total: no counter named for requests or calls and no latency histogram")
	}
	if !attempts {
		d.missing = append(d.missing, "retry_attempts_total: no counter named for attempts or tries (if the requests counter counts every try, map it here instead)")
	}
	if !retries {
		d.missing = append(d.missing, "retry_retries_total: no counter named for retries (attempts - originals once both are right)")
	}
	if !latency {
		d.missing = append(d.missing, "retry_request_duration_seconds: no histogram or summary named for latency or duration")
	}
	d.dependency()
}

// dependency picks the label naming the callee among the mapped
// families' labels.
func (d *drafter) dependency() {
	values := map[string][]string{}
	for i := range d.fams {
		f := &d.fams[i]
		if !d.used[f.Name] {
			continue
		}
		for j := range f.Samples {
			for _, l := range f.Samples[j].Labels {
				if l.Name != "le" && l.Name != "quantile" && !slices.Contains(draftStatusLabels, l.Name) && !slices.Contains(values[l.Name], l.Value) {
					values[l.Name] = append(values[l.Name], l.Value)
				}
			}
		}
	}
	for _, l := range draftDepLabels {
		if len(values[l]) > 0 {
			d.depLbl, d.depWhy = l, "a label usually naming the callee, values "+draftList(values[l], 6)
			return
		}
	}
	best := ""
	for l, vs := range values {
		if strings.Contains(l, "method") || strings.Contains(l, "path") || strings.Contains(l, "route") {
			continue
		}
		if best == "" || len(vs) > len(values[best]) || len(vs) == len(values[best]) && l < best {
			best = l
		}
	}
	if best != "" {
		d.depLbl, d.depWhy = best, "the label with most values, "+draftList(values[best], 6)+": check it names the callee"
		return
	}
	d.missing = append(d.missing, "dependency: no label names the callee; every series is one dependency named below (rename it)")
}

// draftList quotes up to n values.
func draftList(vs []string, n int) string {
	var qs []string
	for i, v := range vs {
		if i == n {
			qs = append(qs, fmt.Sprintf("… (%d in all)", len(vs)))
			break
		}
		qs = append(qs, strconv.Quote(v))
	}
	return strings.Join(qs, ", ")
}

// yq writes a YAML double-quoted scalar: Go's escapes (\" \\ \n \t \xNN
// \uNNNN) are YAML's too.
func yq(s string) string { return strconv.Quote(s) }

// comment makes one line of text safe for a YAML comment (and a terminal).
func comment(s string) string {
	q := strconv.Quote(s)
	return strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
}

func (d *drafter) render(source string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Draft custom mapping for %s, written by retrytop dialect draft.\n", comment(source))
	b.WriteString("# Every line is a guess from family names, types, units and label values:\n")
	b.WriteString("# review it, save it under a config file's dialects: section and try it\n")
	b.WriteString("# with retrytop analyze FILE --config F (docs/dialects.md, \"Custom\").\n")
	b.WriteString("dialects:\n  - name: draft\n")
	if d.depLbl != "" {
		fmt.Fprintf(&b, "    # %s\n    dependency_label: %s\n", comment(d.depWhy), yq(d.depLbl))
	} else {
		b.WriteString("    dependency: \"unknown\"\n")
	}
	if len(d.signals) == 0 {
		b.WriteString("    # No family looked like a retry, request or latency signal: write the\n")
		b.WriteString("    # signals by hand (the one below only makes the draft valid).\n")
		b.WriteString("    signals:\n      - family: retry_originals_total\n        metric: \"CHANGE_ME_total\"\n")
	} else {
		b.WriteString("    signals:\n")
	}
	for _, s := range d.signals {
		fmt.Fprintf(&b, "      # %s\n", comment(s.why))
		fmt.Fprintf(&b, "      - family: %s\n        metric: %s\n", s.Family, yq(s.Metric))
		if len(s.Match) > 0 {
			qs := make([]string, len(s.Match))
			for i, m := range s.Match {
				qs[i] = yq(m)
			}
			fmt.Fprintf(&b, "        match: [%s]\n", strings.Join(qs, ", "))
		}
		if len(s.Labels) > 0 {
			keys := make([]string, 0, len(s.Labels))
			for k := range s.Labels {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var kv []string
			for _, k := range keys {
				kv = append(kv, k+": "+s.Labels[k])
			}
			fmt.Fprintf(&b, "        labels: {%s}\n", strings.Join(kv, ", "))
		}
		if s.Scale != 0 && s.Scale != 1 {
			fmt.Fprintf(&b, "        scale: %s\n", strconv.FormatFloat(s.Scale, 'g', -1, 64))
		}
	}
	if len(d.missing) > 0 {
		b.WriteString("# Not guessed:\n")
		for _, m := range d.missing {
			fmt.Fprintf(&b, "#   - %s\n", comment(m))
		}
	}
	var rest []string
	for i := range d.fams {
		if !d.used[d.fams[i].Name] {
			rest = append(rest, d.fams[i].Name)
		}
	}
	if len(rest) > 0 {
		sort.Strings(rest)
		fmt.Fprintf(&b, "# Families not mapped: %s\n", comment(draftList(rest, 12)))
	}
	return b.String()
}

// SeenFamilies lists up to n family names of an exposition, sorted, for
// an error that says no dialect reads a target.
func SeenFamilies(fams []model.Family, n int) string {
	names := make([]string, 0, len(fams))
	for i := range fams {
		names = append(names, fams[i].Name)
	}
	sort.Strings(names)
	return draftList(names, n)
}
