package dialect

import (
	"strings"
	"testing"
)

// FuzzParseMappings: any dialects: section gives mappings that compile or
// an error naming the file, never a panic; a mapping accepted builds a
// translator and its PromQL.
func FuzzParseMappings(f *testing.F) {
	f.Add([]byte(`dialects:
  - name: acme
    dependency_label: upstream
    signals:
      - family: retry_originals_total
        metric: acme_calls_total
      - family: retry_attempts_total
        metric: acme_tries_total
        match: ['result="ok"']
        labels: {outcome: success}
      - family: retry_active_calls
        metric: acme_busy_ms
        scale: 0.001
`))
	f.Add([]byte("dialects:\n  - name: x\n    signals: [{family: nope, metric: m}]\n"))
	f.Add([]byte("dialects: 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := ParseMappings("fuzz.yaml", b)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		tr, err := NewTranslator(Config{Custom: ms})
		if err != nil {
			return
		}
		names := []string{}
		for _, m := range ms {
			names = append(names, m.Name)
		}
		if len(names) > 0 {
			_, _ = tr.Queries(names, QueryOptions{By: []string{"job"}, Range: 1e9})
		}
	})
}
