package rules

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated rules in docs/rules.md")

const (
	docsPath  = "../docs/rules.md"
	docsBegin = "<!-- generated: retrytop rules -->\n```yaml\n"
	docsEnd   = "```\n<!-- end generated -->"
)

// TestDocsRules: docs/rules.md shows the rules `retrytop rules` writes
// for the native contract, as the code writes them now.
func TestDocsRules(t *testing.T) {
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, docsBegin), strings.Index(doc, docsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no generated block between %q and %q", docsPath, docsBegin, docsEnd)
	}
	gen, err := Generate(Options{})
	if err != nil {
		t.Fatal(err)
	}
	have := doc[i+len(docsBegin) : j]
	if have == string(gen) {
		return
	}
	if !*update {
		t.Fatalf("%s shows other rules than `retrytop rules` writes; run go test ./rules -run TestDocsRules -update", docsPath)
	}
	if err := os.WriteFile(docsPath, []byte(doc[:i+len(docsBegin)]+string(gen)+doc[j:]), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunbooksExist: every alert's runbook_url names a heading of
// docs/findings.md, as GitHub anchors it.
func TestRunbooksExist(t *testing.T) {
	b, err := os.ReadFile("../docs/findings.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		h, ok := strings.CutPrefix(line, "### ")
		if !ok {
			continue
		}
		var a strings.Builder
		for _, c := range strings.ToLower(h) {
			switch {
			case c == ' ':
				a.WriteRune('-')
			case c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
				a.WriteRune(c)
			}
		}
		anchors[a.String()] = true
	}
	for code := range Alerts {
		if !anchors[anchor(code)] {
			t.Errorf("%s: runbook anchor %q is no heading of docs/findings.md", code, anchor(code))
		}
	}
}
