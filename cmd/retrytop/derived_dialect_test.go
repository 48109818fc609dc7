package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
)

// shopConfig maps a client that counts calls and sends but not retries;
// with derive, retries are derived as the example does.
func shopConfig(derive bool) string {
	c := `dialects:
  - name: shop
    dependency_label: upstream
    detect: [shop_sent_total]
    signals:
      - family: retry_originals_total
        metric: shop_calls_total
      - family: retry_attempts_total
        metric: shop_sent_total
`
	if derive {
		c += `    derived:
      - family: retry_retries_total
        expr: attempts - originals
`
	}
	return c
}

// A value a custom mapping derives is marked: analyze JSON's
// dependencies[].derived names it with its expression, the text and
// markdown tables put * after it (the rows it is read in are not marked)
// with a footnote; without the derivation there is neither.
func TestDerivedSignalsMarked(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "shop.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 10 calls/s and 13 sends/s to pay: 3 retries/s derived.
	for i := 0; i <= 20; i++ {
		body := fmt.Sprintf("# TYPE shop_calls_total counter\nshop_calls_total{upstream=\"pay\"} %d\n# TYPE shop_sent_total counter\nshop_sent_total{upstream=\"pay\"} %d\n", 10*i, 13*i)
		if err := w.Append("shop", recT0.Add(time.Duration(i)*time.Second), "text/plain; version=0.0.4", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, derive := range []bool{true, false} {
		cfg := filepath.Join(dir, fmt.Sprintf("derive-%v.yaml", derive))
		if err := os.WriteFile(cfg, []byte(shopConfig(derive)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, stderr, err := execute(t, "analyze", path, "--config", cfg, "--format", "json", "--window", "10s")
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		var rep struct {
			Dependencies []struct {
				Dependency string            `json:"dependency"`
				Retries    *float64          `json:"retries_per_s"`
				Derived    map[string]string `json:"derived"`
				Raw        map[string]any    `json:"-"`
			} `json:"dependencies"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Dependencies) != 1 {
			t.Fatalf("derive=%v: rows %+v", derive, rep.Dependencies)
		}
		d := rep.Dependencies[0]
		text, _, err := execute(t, "analyze", path, "--config", cfg, "--window", "10s", "--wide")
		if err != nil {
			t.Fatal(err)
		}
		md, _, err := execute(t, "analyze", path, "--config", cfg, "--window", "10s", "--format", "markdown")
		if err != nil {
			t.Fatal(err)
		}
		note := "* derived, not read: retries = attempts - originals"
		if !derive {
			if d.Derived != nil || strings.Contains(out, `"derived"`) || strings.Contains(text, "*") || strings.Contains(md, `\*`) {
				t.Errorf("nothing derived, yet marked: %v\n%s\n%s", d.Derived, text, md)
			}
			continue
		}
		if d.Retries == nil || *d.Retries < 2.99 || *d.Retries > 3.01 {
			t.Errorf("retries %v, want 3/s (13 sent - 10 calls)", d.Retries)
		}
		if len(d.Derived) != 1 || d.Derived["retries"] != "attempts - originals" {
			t.Errorf("derived %v, want retries: attempts - originals", d.Derived)
		}
		if !strings.Contains(text, "series; read by shop)") || !strings.Contains(md, "series; read by shop)") {
			t.Errorf("the target lines do not say which dialect reads shop:\n%s\n%s", text, md)
		}
		if !strings.Contains(text, "3.00*") || strings.Contains(text, "10.0*") || !strings.Contains(text, note) {
			t.Errorf("text: want the retries cell marked, the originals not, and the note:\n%s", text)
		}
		if !strings.Contains(md, `3.00\*`) || !strings.Contains(md, `\`+note) {
			t.Errorf("markdown: want the retries cell marked and the note:\n%s", md)
		}
	}
}
