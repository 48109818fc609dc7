package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/internal/testpeer"
)

// widthProbe, added before </body> of a copy of the page (the page itself
// runs no script: its Content-Security-Policy is dropped from the copy),
// writes into the DOM whether the document scrolls sideways, which
// elements reach past the viewport (the outermost of each), which scroll
// inside themselves and which let their text spill out (the innermost).
const widthProbe = `<script>
(function(){
  var w = window.innerWidth, out = [];
  document.querySelectorAll('body *').forEach(function(e){
    var r = e.getBoundingClientRect();
    var pr = e.parentElement.getBoundingClientRect();
    if (r.width > 0 && r.right > w + 0.5 && pr.right <= w + 0.5) out.push('past ' + e.tagName + '.' + e.className + '#' + e.id + ' right ' + Math.round(r.right));
    var cs = getComputedStyle(e);
    var spills = function(x){ return x.clientWidth > 0 && x.scrollWidth > x.clientWidth + 1; };
    if ((cs.overflowX == 'auto' || cs.overflowX == 'scroll') && spills(e)) out.push('scrolls ' + e.tagName + '.' + e.className + ' ' + e.scrollWidth + '>' + e.clientWidth);
    else if (spills(e) && !Array.prototype.some.call(e.children, spills)) out.push('spills ' + e.tagName + '.' + e.className + ' ' + e.scrollWidth + '>' + e.clientWidth + ': ' + e.textContent.slice(0, 60));
  });
  var p = document.createElement('pre');
  p.id = 'probe';
  p.textContent = 'inner=' + w + ' scroll=' + document.documentElement.scrollWidth + '\n' + out.slice(0, 20).join('\n');
  document.body.appendChild(p);
})();
</script>`

// probeWidth loads page in headless Chromium at width x 800 and returns
// the viewport's width, the document's scroll width and what overflows.
func probeWidth(t *testing.T, ctx context.Context, page string, width int) (inner, scroll int, over string) {
	t.Helper()
	cp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`).ReplaceAllString(page, "")
	cp = strings.Replace(cp, "</body>", widthProbe+"</body>", 1)
	file := filepath.Join(t.TempDir(), "probe.html")
	if err := os.WriteFile(file, []byte(cp), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, _ := testpeer.RunChromium(t, ctx, "--hide-scrollbars", "--force-device-scale-factor=1",
		fmt.Sprintf("--window-size=%d,800", width), "--dump-dom", "file://"+file)
	m := regexp.MustCompile(`(?s)<pre id="probe">inner=(\d+) scroll=(\d+)\n(.*?)</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no probe in the DOM at %d px", width)
	}
	fmt.Sscan(m[1], &inner)
	fmt.Sscan(m[2], &scroll)
	return inner, scroll, m[3]
}

// The report of each demo scenario fits the page in Chromium at a
// laptop's 1280 px and a narrow 800 px: no sideways scroll of the page,
// nothing past its right edge, no table scrolling inside itself.
// RETRYTOP_REPORT_SHOTS=DIR keeps a screenshot of each to look at.
func TestReportFitsThePageInChromium(t *testing.T) {
	testpeer.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The control: a table of unbreakable cells, inside a scrolling box
	// and outside one, must be caught at 800 px.
	wide := "<tr>" + strings.Repeat("<td style=\"white-space:nowrap\">1234567890/s</td>", 20) + "</tr>"
	control := "<!doctype html><html><head><style>.scroll{overflow-x:auto}</style></head><body><div class=\"scroll\"><table>" + wide + "</table></div><table>" + wide + "</table></body></html>"
	if _, scroll, over := probeWidth(t, ctx, control, 800); scroll <= 800 || !strings.Contains(over, "past TABLE") || !strings.Contains(over, "scrolls DIV.scroll") {
		t.Fatalf("the probe misses a wide table: document %d, overflowing:\n%s", scroll, over)
	}
	keep := os.Getenv("RETRYTOP_REPORT_SHOTS")
	// Beside the demo's pages: the what-if tables, and names without a
	// place to break.
	long := "client-" + strings.Repeat("x", 150)
	m := Meta{Source: "recording " + long + ".rtd", Command: "retrytop report " + long + ".rtd --whatif recorded,bounded,none", Version: "test", WhatIf: whatifFixture()}
	m.WhatIf.Chain = []string{"browser", long, "provider"}
	m.WhatIf.Curve = curveFixture()
	m.WhatIf.Curve.Layers[0].Spec = "recorded " + long
	var b bytes.Buffer
	if err := WriteHTML(&b, fixture(long, "provider-"+strings.Repeat("y", 150)), m); err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{"whatif-long-names": b.String()}
	for _, name := range []string{"baseline", "chain", "ignore-cancel"} {
		pages[name] = reportDemo(t, name).page
	}
	for _, name := range []string{"baseline", "chain", "ignore-cancel", "whatif-long-names"} {
		for _, width := range []int{1280, 800} {
			inner, scroll, over := probeWidth(t, ctx, pages[name], width)
			t.Logf("%s at %d px: viewport %d, document %d", name, width, inner, scroll)
			if inner != width || scroll > inner || over != "" {
				t.Errorf("%s at %d px: viewport %d, document %d wide; overflowing:\n%s", name, width, inner, scroll, over)
			}
			if keep != "" {
				file := filepath.Join(keep, "report-"+name+".html")
				if err := os.WriteFile(file, []byte(pages[name]), 0o644); err != nil {
					t.Fatal(err)
				}
				testpeer.RunChromium(t, ctx, "--hide-scrollbars", "--force-device-scale-factor=1",
					fmt.Sprintf("--window-size=%d,2400", width), "--screenshot="+filepath.Join(keep, fmt.Sprintf("report-%s-%d.png", name, width)), "file://"+file)
			}
		}
	}
}
