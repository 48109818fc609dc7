package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// closedPort is a loopback address nothing listens on: one the kernel
// just handed out and that was closed again.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestDocumentedErrors runs the commands of docs/cli.md's "Errors"
// block and compares what they print on standard error, as main prints
// it, with the lines the doc shows under each, line for line. The doc's
// ports 23999 and 23998 are replaced by ports found closed.
func TestDocumentedErrors(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Errors\n")
	if !ok {
		t.Fatal(`docs/cli.md has no "## Errors" section`)
	}
	_, block, ok := strings.Cut(section, "```console\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal(`docs/cli.md's "Errors" section has no console block`)
	}
	ports := strings.NewReplacer("127.0.0.1:23999", closedPort(t), "127.0.0.1:23998", closedPort(t))
	type example struct {
		cmd  string
		want []string
	}
	var examples []example
	for _, l := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			examples = append(examples, example{cmd: c})
		} else if len(examples) > 0 {
			examples[len(examples)-1].want = append(examples[len(examples)-1].want, ports.Replace(l))
		}
	}
	if len(examples) < 4 {
		t.Fatalf("%d examples in docs/cli.md's Errors block, want 4 or more", len(examples))
	}
	t.Chdir(root)
	for _, ex := range examples {
		args := strings.Fields(ports.Replace(ex.cmd))
		if args[0] != "retrytop" {
			t.Errorf("%q is not a retrytop command", ex.cmd)
			continue
		}
		out, stderr, err := execute(t, args[1:]...)
		var errb bytes.Buffer
		errb.WriteString(stderr)
		if err != nil {
			printError(&errb, err)
		}
		got := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
		if strings.Join(got, "\n") != strings.Join(ex.want, "\n") {
			t.Errorf("%s printed\n%s\nthe doc shows\n%s\n(standard output: %q)", ex.cmd, strings.Join(got, "\n"), strings.Join(ex.want, "\n"), out)
		}
		for _, l := range got {
			if !strings.HasPrefix(l, "retrytop: ") {
				t.Errorf("%s: an error line without \"retrytop: \": %q", ex.cmd, l)
			}
		}
	}
}
