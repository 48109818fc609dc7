package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/dialect"
)

// retrytop dialect draft on a file and on a live URL serving the same
// exposition prints the same mapping, which parses and compiles; a
// target that does not answer is exit 2 with its error.
func TestDialectDraft(t *testing.T) {
	const fixture = "../../dialect/testdata/custom_acme.prom"
	body, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	run := func(args ...string) (string, error) {
		cmd := newDialectCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	fromFile, err := run("draft", fixture)
	if err != nil {
		t.Fatal(err)
	}
	fromURL, err := run("draft", "acme="+srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for name, y := range map[string]string{"file": fromFile, "url": fromURL} {
		if _, err := dialect.ParseMappings(name, []byte(y)); err != nil || !strings.Contains(y, `metric: "acme_tries_total"`) {
			t.Errorf("%s: %v\n%s", name, err, y)
		}
	}
	// Only the header's source differs.
	strip := func(s string) string { return s[strings.IndexByte(s, '\n'):] }
	if strip(fromFile) != strip(fromURL) {
		t.Errorf("file and URL drafts differ:\n%s\n---\n%s", fromFile, fromURL)
	}
	if !strings.Contains(fromURL, "for "+srv.URL+"/metrics,") {
		t.Errorf("URL draft header: %s", fromURL[:strings.IndexByte(fromURL, '\n')])
	}
	srv.Close()
	_, err = run("draft", "--timeout", "2s", srv.URL+"/metrics")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitNoData {
		t.Errorf("draft of a closed server: %v, want exit %d", err, exitNoData)
	}
}
