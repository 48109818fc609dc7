package main

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// docValueWords are the words docs/analyze-json.md puts in backquotes
// that are values or names of other things, not keys of the report:
// enumerations, result classes, dialect names and Go names.
var docValueWords = map[string]bool{
	// identity and links
	"user": true, "target_info": true, "job": true, "address": true, "config": true, "name": true, "dns": true, "ambiguous": true,
	// amplification_basis, a gap's basis
	"operations": true, "admitted": true, "completed": true, "started": true, "ended": true,
	// span kinds
	"incident": true, "recording": true, "window": true,
	// result classes (results_per_s keys, latency classes)
	"success": true, "fast_failure": true, "failure": true, "deadline_exhausted": true, "provider_error": true,
	"capacity_rejected": true, "budget_exhausted": true, "permanent_error": true, "cancelled": true, "not_retryable": true,
	// fates.budget's model and unit
	"exported": true, "grpc": true, "envoy": true, "finagle": true, "tokens": true, "retries": true,
	// derived families
	"pending_calls": true,
	// services' sources
	"sim": true, "promhttp": true, "otel": true,
	// finding codes and severities, phase kinds
	"info": true, "warning": true, "critical": true, "healthy": true, "degraded": true, "overloaded": true, "recovering": true, "no_data": true,
	// dialects
	"native": true,
	// a label, JSON null
	"outer_dependency": true, "null": true,
	// Go names
	"analysis": true, "model": true,
}

// docKeyWord is a word that may be a key: lower case, digits, underscores.
var docKeyWord = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// documentedWords reads docs/analyze-json.md: the words in its backquoted
// spans (a span quoting a value, a path, a flag or an expression is
// skipped; "targets[].dialect" gives "targets" and "dialect") and the keys
// of its JSON example.
func documentedWords(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../docs/analyze-json.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	words := map[string]bool{}
	_, example, _ := strings.Cut(doc, "```json\n")
	example, rest, _ := strings.Cut(example, "```")
	for _, m := range regexp.MustCompile(`"([a-z][a-z0-9_]*)":`).FindAllStringSubmatch(example, -1) {
		words[m[1]] = true
	}
	for _, span := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(rest, -1) {
		s := span[1]
		if strings.ContainsAny(s, "\"'{}/ *:=(-+") {
			continue
		}
		for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == '[' || r == ']' || r == '.' || r == ',' }) {
			if docKeyWord.MatchString(w) && !strings.HasPrefix(w, "retry_") {
				words[w] = true
			}
		}
	}
	return words
}

// jsonKeys adds the JSON names of t's fields, and of every type they
// hold, to keys.
func jsonKeys(t reflect.Type, keys map[string]bool, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
		if name != "-" && (f.IsExported() || f.Anonymous) {
			jsonKeys(f.Type, keys, seen)
		}
	}
}

// reportKeys adds every object key of a decoded JSON value to keys, but
// not the keys of the objects whose keys are data (a finding's evidence,
// a row's derived families, results and latency by class).
func reportKeys(v any, keys map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			keys[k] = true
			switch k {
			case "evidence", "derived", "results_per_s", "latency", "latency_p99_s":
				continue
			}
			reportKeys(x, keys)
		}
	case []any:
		for _, x := range v {
			reportKeys(x, keys)
		}
	}
}

// TestAnalyzeJSONDocMatchesReport compares docs/analyze-json.md with the
// program both ways: every key of a real report (the demo's recorded
// storm: rows, timelines, fates, findings with evidence, chains with
// their provider, services, links) is documented, and every word the doc
// documents as a key is the JSON name of a field of analysis.Report or
// of a type it holds (a key that appears only in some reports, such as
// series_cap, is there too), or one of docValueWords.
func TestAnalyzeJSONDocMatchesReport(t *testing.T) {
	out, stderr, err := execute(t, "analyze", "../../whatif/testdata/baseline.rtd", "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	real := map[string]bool{}
	reportKeys(rep, real)
	for _, must := range []string{"findings", "evidence", "chains", "provider", "services", "fates", "timeline", "phases"} {
		if !real[must] {
			t.Fatalf("the report of the storm has no %q: it cannot check the doc of it", must)
		}
	}
	doc := documentedWords(t)
	types := map[string]bool{}
	jsonKeys(reflect.TypeFor[analysis.Report](), types, map[reflect.Type]bool{})
	jsonKeys(reflect.TypeFor[model.MemoryCap](), types, map[reflect.Type]bool{}) // written inside series_cap
	var undocumented, unknown []string
	for k := range real {
		if !doc[k] {
			undocumented = append(undocumented, k)
		}
	}
	for w := range doc {
		if !types[w] && !docValueWords[w] {
			unknown = append(unknown, w)
		}
	}
	sort.Strings(undocumented)
	sort.Strings(unknown)
	if len(undocumented) > 0 {
		t.Errorf("keys of a real report that docs/analyze-json.md does not document: %s", strings.Join(undocumented, ", "))
	}
	if len(unknown) > 0 {
		t.Errorf("keys docs/analyze-json.md documents that no report type has: %s", strings.Join(unknown, ", "))
	}
	for w := range docValueWords {
		if !doc[w] {
			t.Errorf("%q is listed as a value word of the doc, but the doc does not name it", w)
		}
	}
}
