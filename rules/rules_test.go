package rules

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/internal/testpeer"
)

// TestCheckRulesEveryDialect: the real promtool accepts the rules of every
// dialect with PromQL, each alone and all together.
func TestCheckRulesEveryDialect(t *testing.T) {
	promtool := testpeer.Require(t, "promtool", "prometheus")
	names := Names(dialect.Auto())
	if len(names) < 10 {
		t.Fatalf("only %d dialects with PromQL: %v", len(names), names)
	}
	sets := [][]string{names}
	for _, n := range names {
		sets = append(sets, []string{n})
	}
	dir := t.TempDir()
	for _, set := range sets {
		b, err := Generate(Options{Dialects: set})
		if err != nil {
			t.Fatalf("%v: %v", set, err)
		}
		p := filepath.Join(dir, strings.Join(set, "+")+".yml")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(promtool, "check", "rules", p).CombinedOutput()
		if err != nil {
			t.Errorf("promtool check rules %v: %v\n%s", set, err, out)
		}
	}
}
