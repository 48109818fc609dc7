package dialect_test

import (
	"strings"
	"testing"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
)

// TestDraft: a draft parses and compiles as it is, and on the made-up
// acme client (custom_acme.prom) proposes what docs/dialects.md's
// hand-written mapping says: calls the originals, tries the attempts by
// status, latency in ms, upstream the dependency; the rest it says it
// could not guess.
func TestDraft(t *testing.T) {
	fams := load(t, "custom_acme.prom")
	y := dialect.Draft("testdata/custom_acme.prom", fams)
	for _, want := range []string{
		"dependency_label: \"upstream\"",
		"- family: retry_originals_total\n        metric: \"acme_calls_total\"",
		"- family: retry_attempts_total\n        metric: \"acme_tries_total\"\n        match: [\"status=~\\\"5..|429\\\"\"]\n        labels: {outcome: temporary_error}",
		"labels: {outcome: success}",
		"- family: retry_request_duration_seconds\n        metric: \"acme_call_latency_ms\"\n        scale: 0.001",
		"#   - retry_retries_total: no counter named for retries",
	} {
		if !strings.Contains(y, want) {
			t.Errorf("draft lacks %q:\n%s", want, y)
		}
	}
	ms, err := dialect.ParseMappings("draft.yml", []byte(y))
	if err != nil || len(ms) != 1 {
		t.Fatalf("draft does not parse: %v\n%s", err, y)
	}
	tr, err := dialect.NewTranslator(dialect.Config{Custom: ms})
	if err != nil {
		t.Fatal(err)
	}
	out, names, err := tr.Translate("", snapOf(fams))
	if err != nil || names != "draft" {
		t.Fatalf("translate: %q, %v", names, err)
	}
	want(t, out, 100, model.MetricOriginals, dep, "billing")
	want(t, out, 30, model.MetricAttempts, dep, "billing", "outcome", model.OutcomeTemporaryError)
	want(t, out, 95, model.MetricAttempts, dep, "billing", "outcome", model.OutcomeSuccess)
}

// Every fixture's draft parses and compiles (whatever it guessed), and
// names from the exposition never reach it unquoted.
func TestDraftEveryFixtureParses(t *testing.T) {
	for f := range fixtureOwners {
		if strings.Contains(f, "malformed") {
			continue
		}
		y := dialect.Draft(f, load(t, f))
		if _, err := dialect.ParseMappings(f, []byte(y)); err != nil {
			t.Errorf("%s: draft does not parse: %v\n%s", f, err, y)
		}
	}
	evil := []model.Family{{Name: "x_requests_total", Type: model.Counter, Samples: []model.Sample{
		{Labels: model.Labels{{Name: "upstream", Value: "a\"\n\x1b[31mb"}}, Value: 1}}}}
	y := dialect.Draft("file\x1b]0;t\a", evil)
	if strings.ContainsAny(y, "\x1b\a") {
		t.Errorf("control characters in the draft:\n%q", y)
	}
	if _, err := dialect.ParseMappings("evil", []byte(y)); err != nil {
		t.Errorf("draft does not parse: %v\n%s", err, y)
	}
	// Nothing recognisable: still a valid draft that says so.
	y = dialect.Draft("empty", []model.Family{{Name: "go_goroutines", Type: model.Gauge, Samples: []model.Sample{{Value: 1}}}})
	if _, err := dialect.ParseMappings("empty", []byte(y)); err != nil || !strings.Contains(y, "write the\n") {
		t.Errorf("draft of nothing: %v\n%s", err, y)
	}
}

// Unread: a target no dialect reads gets an error naming a few of its
// families and dialect draft; a read one, or an unknown one, none.
func TestUnread(t *testing.T) {
	tr := dialect.Auto()
	acme := load(t, "custom_acme.prom")
	if _, names, _ := tr.Translate("", &model.Snapshot{Target: "acme", Time: t0, Families: acme}); names != "" {
		t.Fatalf("acme read by %q", names)
	}
	err := tr.Unread("acme", "http://10.0.0.1:9100/metrics")
	if err == nil || !strings.Contains(err.Error(), `families such as "acme_call_latency_ms", "acme_calls_total", "acme_tries_total"`) ||
		!strings.Contains(err.Error(), `retrytop dialect draft "http://10.0.0.1:9100/metrics"`) {
		t.Errorf("Unread = %v", err)
	}
	if _, _, err := tr.Translate("", &model.Snapshot{Target: "kong", Time: t0, Families: load(t, "kong_3.x.prom")}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Unread("kong", "u"); err != nil {
		t.Errorf("kong is read, Unread = %v", err)
	}
	if err := tr.Unread("never", "u"); err != nil {
		t.Errorf("never translated, Unread = %v", err)
	}
}
