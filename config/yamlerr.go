package config

import (
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/retrytop/retrytop/internal/safetext"
)

// YAMLMessage rewrites a YAML decoding error for people: no Go type names
// ("field intreval not found in type config.plain" becomes "unknown key
// `intreval` at line 4; did you mean `interval`?", "cannot unmarshal !!str
// `5x` into time.Duration" becomes "line 3: `5x` is not a duration (30s,
// 1m)"), several errors joined with "; ", the result sanitised. dst is the
// value decoded into: the keys its yaml tags name (at any depth) are the
// suggestions.
func YAMLMessage(err error, dst any) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	keys := yamlKeys(reflect.TypeOf(dst), map[reflect.Type]bool{})
	var out []string
	for _, line := range strings.Split(msg, "\n  ") {
		out = append(out, friendlyLine(line, keys))
	}
	return safetext.Terminal(strings.Join(out, "; "))
}

var (
	reUnknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type \S+$`)
	reUnknownJSON  = regexp.MustCompile(`^(.*)unknown field "([^"]+)"$`)
	reCannot       = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+)(?: `([^`]*)`)? into (\\S+)$")
	reAlready      = regexp.MustCompile(`^line (\d+): field (\S+) already set in type \S+$`)
	reJSONField    = regexp.MustCompile(`^cannot unmarshal (\w+) into Go struct field \S*?([^.\s]+) of type (\S+)$`)
	reJSONValue    = regexp.MustCompile(`^cannot unmarshal (\w+) into Go value of type (\S+)$`)
)

func friendlyLine(line string, keys []string) string {
	if m := reUnknownField.FindStringSubmatch(line); m != nil {
		return "unknown key `" + m[2] + "` at line " + m[1] + didYouMean(m[2], keys)
	}
	if m := reUnknownJSON.FindStringSubmatch(line); m != nil {
		return m[1] + "unknown key `" + m[2] + "`" + didYouMean(m[2], keys)
	}
	if m := reJSONField.FindStringSubmatch(line); m != nil {
		return "`" + m[2] + "` takes " + goKind(m[3]) + ", not " + jsonKind(m[1])
	}
	if m := reJSONValue.FindStringSubmatch(line); m != nil {
		return "expected " + goKind(m[2]) + ", got " + jsonKind(m[1])
	}
	if m := reAlready.FindStringSubmatch(line); m != nil {
		return "key `" + m[2] + "` given twice, at line " + m[1]
	}
	if m := reCannot.FindStringSubmatch(line); m != nil {
		got := m[3]
		if got == "" {
			got = map[string]string{"seq": "a list", "map": "a mapping", "str": "text", "int": "a number", "float": "a number", "bool": "true or false", "null": "nothing"}[m[2]]
		} else {
			got = "`" + got + "`"
		}
		return "line " + m[1] + ": " + got + " is not " + goKind(m[4])
	}
	return line
}

// jsonKind names a JSON value's kind as encoding/json reports it.
func jsonKind(k string) string {
	switch k {
	case "array":
		return "a list"
	case "object":
		return "a mapping"
	case "string":
		return "text"
	}
	return "a " + k
}

// goKind says what a Go type name wants, in words.
func goKind(t string) string {
	switch {
	case t == "time.Duration" || strings.HasSuffix(t, "model.Duration"):
		return "a duration (30s, 1m)"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "text"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping (key: value)"
	}
	return "what this key takes (a mapping of its own keys)"
}

// didYouMean proposes the known key nearest to k, when one is near.
func didYouMean(k string, keys []string) string {
	best, bestD := "", 3
	for _, c := range keys {
		if d := EditDistance(strings.ToLower(k), c); d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	if best == "" || best == k || bestD > max(1, len(k)/3) {
		return ""
	}
	return "; did you mean `" + best + "`?"
}

// yamlKeys lists the yaml keys of t's fields, at any depth, sorted and
// without repeats.
func yamlKeys(t reflect.Type, seen map[reflect.Type]bool) []string {
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct || seen[t] || t == reflect.TypeOf(time.Time{}) {
		return nil
	}
	seen[t] = true
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, _, _ := strings.Cut(tag, ",")
		if name != "-" && name != "" {
			out = append(out, name)
		}
		out = append(out, yamlKeys(f.Type, seen)...)
	}
	return out
}

// EditDistance is the Levenshtein distance of a and b, by bytes: the
// measure of every "did you mean" (config keys, command-line flags).
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
