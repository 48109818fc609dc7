package analysis

import (
	"math"
	"reflect"
	"slices"
	"strconv"

	"github.com/retrytop/retrytop/model"
)

// The timeline's bins are most of a whole recording's JSON (the 1-hour
// dump: 720 rows x 360 bins, 637 MB), and encoding/json spends most of
// its time there on reflection, on compacting every model.Value's
// MarshalJSON output and on indenting the result in a second pass.
// appendBinJSON writes a bin's indented bytes directly, the bytes
// json.MarshalIndent writes for it (TestAppendBinJSONEqualsMarshalIndent),
// for the bins it can write: strings of printable ASCII that need no
// escape and no breakdown lists. Every other bin goes through
// json.MarshalIndent as before.

// signalsValueFields are model.Signals' Value fields in struct order with
// their JSON names. binFieldsMatch checks them against the struct, so a
// field added to model.Signals turns the direct path off (and
// TestBinJSONFieldsMatchSignals fails) instead of leaving it out.
var signalsValueFields = []struct {
	name string
	get  func(*model.Signals) model.Value
}{
	{"originals_per_s", func(s *model.Signals) model.Value { return s.OriginalsPerS }},
	{"attempts_per_s", func(s *model.Signals) model.Value { return s.AttemptsPerS }},
	{"amplification", func(s *model.Signals) model.Value { return s.Amplification }},
	{"attempts_per_original", func(s *model.Signals) model.Value { return s.AttemptsPerOriginal }},
	{"completed_per_s", func(s *model.Signals) model.Value { return s.CompletedPerS }},
	{"admitted_per_s", func(s *model.Signals) model.Value { return s.AdmittedPerS }},
	{"operation_attempts_per_s", func(s *model.Signals) model.Value { return s.OperationAttemptsPerS }},
	{"retries_per_s", func(s *model.Signals) model.Value { return s.RetriesPerS }},
	{"rescued_per_s", func(s *model.Signals) model.Value { return s.RescuedPerS }},
	{"budget_denied_per_s", func(s *model.Signals) model.Value { return s.BudgetDeniedPerS }},
	{"admission_rejected_per_s", func(s *model.Signals) model.Value { return s.AdmissionRejectedPerS }},
	{"provider_errors_per_s", func(s *model.Signals) model.Value { return s.ProviderErrorsPerS }},
	{"temporary_errors_per_s", func(s *model.Signals) model.Value { return s.TemporaryErrorsPerS }},
	{"permanent_errors_per_s", func(s *model.Signals) model.Value { return s.PermanentErrorsPerS }},
	{"timeouts_per_s", func(s *model.Signals) model.Value { return s.TimeoutsPerS }},
	{"successes_per_s", func(s *model.Signals) model.Value { return s.SuccessesPerS }},
	{"deadline_exhausted_per_s", func(s *model.Signals) model.Value { return s.DeadlineExhaustedPerS }},
	{"cancelled_attempts_per_s", func(s *model.Signals) model.Value { return s.CancelledAttemptsPerS }},
	{"abandoned_attempts_per_s", func(s *model.Signals) model.Value { return s.AbandonedAttemptsPerS }},
	{"late_successes_per_s", func(s *model.Signals) model.Value { return s.LateSuccessesPerS }},
	{"hedges_per_s", func(s *model.Signals) model.Value { return s.HedgesPerS }},
	{"hedges_won_per_s", func(s *model.Signals) model.Value { return s.HedgesWonPerS }},
	{"hedges_abandoned_per_s", func(s *model.Signals) model.Value { return s.HedgesAbandonedPerS }},
	{"limit_exceeded_per_s", func(s *model.Signals) model.Value { return s.RetryLimitExceededPerS }},
	{"request_timeouts_per_s", func(s *model.Signals) model.Value { return s.RequestTimeoutsPerS }},
	{"breaker_rejected_per_s", func(s *model.Signals) model.Value { return s.BreakerRejectedPerS }},
	{"breaker_state", func(s *model.Signals) model.Value { return s.BreakerState }},
	{"unsafe_originals_per_s", func(s *model.Signals) model.Value { return s.UnsafeOriginalsPerS }},
	{"unsafe_attempts_per_s", func(s *model.Signals) model.Value { return s.UnsafeAttemptsPerS }},
	// settings_off (omitempty) here: a bin with any goes the slow way.
	{"nested_operations_per_s", func(s *model.Signals) model.Value { return s.NestedPerS }},
	// nested_in (omitempty) here: a bin with any goes the slow way.
	{"effective_success", func(s *model.Signals) model.Value { return s.EffectiveSuccess }},
	{"attempt_success", func(s *model.Signals) model.Value { return s.AttemptSuccess }},
	{"active_calls", func(s *model.Signals) model.Value { return s.ActiveCalls }},
	{"concurrency_limit", func(s *model.Signals) model.Value { return s.ConcurrencyLimit }},
	{"pool_wait_p50_s", func(s *model.Signals) model.Value { return s.PoolWaitP50 }},
	{"pool_wait_p99_s", func(s *model.Signals) model.Value { return s.PoolWaitP99 }},
	{"pool_wait_mean_s", func(s *model.Signals) model.Value { return s.PoolWaitMean }},
	{"queue_depth", func(s *model.Signals) model.Value { return s.QueueDepth }},
	{"backoff_p50_s", func(s *model.Signals) model.Value { return s.BackoffP50 }},
	{"backoff_p99_s", func(s *model.Signals) model.Value { return s.BackoffP99 }},
	{"budget_balance", func(s *model.Signals) model.Value { return s.BudgetBalance }},
	{"policy_max_attempts", func(s *model.Signals) model.Value { return s.MaxAttempts }},
	{"policy_deadline_seconds", func(s *model.Signals) model.Value { return s.DeadlineSeconds }},
	{"dependency_received_per_s", func(s *model.Signals) model.Value { return s.DependencyReceivedPerS }},
	{"dependency_service_time_p50_s", func(s *model.Signals) model.Value { return s.DependencyServiceTimeP50 }},
	{"dependency_work_after_cancel_per_s", func(s *model.Signals) model.Value { return s.DependencyWorkAfterCancelPerS }},
	{"dependency_deadline_propagated_per_s", func(s *model.Signals) model.Value { return s.DependencyDeadlinePropagatedPerS }},
	{"dependency_deadline_missing_per_s", func(s *model.Signals) model.Value { return s.DependencyDeadlineMissingPerS }},
	{"edge_received_per_s", func(s *model.Signals) model.Value { return s.EdgeReceivedPerS }},
	{"edge_amplification", func(s *model.Signals) model.Value { return s.EdgeAmplification }},
}

// binJSONLayout is the JSON names of BinReport's encoded fields in order,
// as appendBinJSON writes them.
func binJSONLayout() []string {
	names := []string{"start_unix", "end_unix", "sampled_seconds", "target", "dependency", "dialect"}
	for _, f := range signalsValueFields {
		names = append(names, f.name)
		switch f.name {
		case "amplification":
			names = append(names, "amplification_basis")
		case "nested_operations_per_s":
			names = append(names, "nested_in")
		case "unsafe_attempts_per_s":
			names = append(names, "settings_off")
		}
	}
	return append(names, "admission_rejected_by", "results_per_s", "latency", "mixed_latency")
}

// encodedFields lists the JSON names of t's encoded fields in order, with
// embedded structs inlined, as encoding/json lays them out (no field of
// these types is shadowed).
func encodedFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name := tag
		for j := range len(tag) {
			if tag[j] == ',' {
				name = tag[:j]
				break
			}
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, encodedFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// binFieldsMatch is whether appendBinJSON knows every field BinReport
// encodes, in its order.
var binFieldsMatch = slices.Equal(binJSONLayout(), encodedFields(reflect.TypeFor[BinReport]()))

// plainJSONString is whether encoding/json writes s as its bytes within
// quotes: printable ASCII other than the quote, the backslash and the
// characters it escapes for HTML.
func plainJSONString(s string) bool {
	for i := range len(s) {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendJSONNumber appends f as encoding/json writes a float64 (false
// when it is not finite, which encoding/json refuses).
func appendJSONNumber(dst []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// jsonIndent appends a newline and depth levels of two-space indentation
// after prefix.
func jsonIndent(dst []byte, prefix string, depth int) []byte {
	dst = append(dst, '\n')
	dst = append(dst, prefix...)
	for range depth {
		dst = append(dst, "  "...)
	}
	return dst
}

// appendKey appends a key (known to be plain) and its colon.
func appendKey(dst []byte, prefix string, depth int, key string) []byte {
	dst = jsonIndent(dst, prefix, depth)
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, `": `...)
}

func appendValue(dst []byte, v model.Value) []byte {
	if !v.OK() {
		return append(dst, "null"...)
	}
	return model.AppendJSONFloat(dst, v.V())
}

func appendQuantiles(dst []byte, prefix string, depth int, q model.Quantiles) []byte {
	dst = append(dst, '{')
	dst = appendValue(appendKey(dst, prefix, depth+1, "p50"), q.P50)
	dst = append(dst, ',')
	dst = appendValue(appendKey(dst, prefix, depth+1, "p90"), q.P90)
	dst = append(dst, ',')
	dst = appendValue(appendKey(dst, prefix, depth+1, "p99"), q.P99)
	dst = jsonIndent(dst, prefix, depth)
	return append(dst, '}')
}

// appendBinJSON appends b as json.MarshalIndent(b, prefix, "  ") writes
// it; false (and dst as it was) when b is not one it writes directly.
func appendBinJSON(dst []byte, b *BinReport, prefix string) ([]byte, bool) {
	s := &b.Signals
	if !binFieldsMatch || len(s.NestedIn) > 0 || len(s.SettingsOff) > 0 || len(s.AdmissionRejectedBy) > 0 ||
		!plainJSONString(s.Target) || !plainJSONString(s.Dependency) || !plainJSONString(s.Dialect) || !plainJSONString(s.AmplificationBasis) {
		return dst, false
	}
	for k := range s.ResultsPerS {
		if !plainJSONString(k) {
			return dst, false
		}
	}
	for _, e := range s.Latency {
		if !plainJSONString(e.Class) {
			return dst, false
		}
	}
	out := append(dst, '{')
	var ok bool
	if out, ok = appendJSONNumber(appendKey(out, prefix, 1, "start_unix"), b.StartUnix); !ok {
		return dst, false
	}
	out = append(out, ',')
	if out, ok = appendJSONNumber(appendKey(out, prefix, 1, "end_unix"), b.EndUnix); !ok {
		return dst, false
	}
	out = append(out, ',')
	out = appendValue(appendKey(out, prefix, 1, "sampled_seconds"), b.SampledSeconds)
	str := func(key, v string) {
		out = append(out, ',')
		out = appendKey(out, prefix, 1, key)
		out = append(out, '"')
		out = append(out, v...)
		out = append(out, '"')
	}
	str("target", s.Target)
	str("dependency", s.Dependency)
	if s.Dialect != "" {
		str("dialect", s.Dialect)
	}
	for _, f := range signalsValueFields {
		out = append(out, ',')
		out = appendValue(appendKey(out, prefix, 1, f.name), f.get(s))
		if f.name == "amplification" && s.AmplificationBasis != "" {
			str("amplification_basis", s.AmplificationBasis)
		}
	}
	if len(s.ResultsPerS) > 0 {
		out = append(out, ',')
		out = appendKey(out, prefix, 1, "results_per_s")
		out = append(out, '{')
		keys := sortedStrings(s.ResultsPerS)
		for i, k := range keys {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendValue(appendKey(out, prefix, 2, k), s.ResultsPerS[k])
		}
		out = jsonIndent(out, prefix, 1)
		out = append(out, '}')
	}
	if len(s.Latency) > 0 {
		out = append(out, ',')
		out = appendKey(out, prefix, 1, "latency")
		out = append(out, '{')
		for i, e := range s.Latency { // sorted by class
			if i > 0 {
				out = append(out, ',')
			}
			out = appendQuantiles(appendKey(out, prefix, 2, e.Class), prefix, 2, e.V)
		}
		out = jsonIndent(out, prefix, 1)
		out = append(out, '}')
	}
	out = append(out, ',')
	out = appendQuantiles(appendKey(out, prefix, 1, "mixed_latency"), prefix, 1, s.MixedLatency)
	out = jsonIndent(out, prefix, 0)
	return append(out, '}'), true
}
