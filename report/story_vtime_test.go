package report

import (
	"bytes"
	"html"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/internal/simrec"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/sim"
)

// demoReport is a sim scenario recorded in virtual time (every target at
// 1 s, as `retrytop record --interval 1s`), reported as `retrytop report
// FILE` does: over the incident span a first report of the whole
// recording tells.
type demoReport struct {
	rep   analysis.Report
	truth sim.Truth
	page  string
}

var (
	demoMu      sync.Mutex
	demoReports = map[string]*demoReport{}
)

// reportDemo records scenario name once per test binary and reports it.
func reportDemo(t *testing.T, name string) *demoReport {
	t.Helper()
	demoMu.Lock()
	defer demoMu.Unlock()
	if d, ok := demoReports[name]; ok {
		return d
	}
	run := simrec.Record(t, name, sim.Options{Seed: 1}, time.Second)
	r, err := dump.OpenRecording(run.Path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st := model.NewStore(model.StoreConfig{History: r.Len() + 1, MaxSeriesPerTarget: 20000})
	targets := dump.LoadStore(r, st, nil)
	whole := analysis.BuildReport(st, targets, analysis.ReportOptions{})
	span := analysis.IncidentSpan(&whole)
	d := &demoReport{rep: analysis.BuildReport(st, targets, analysis.ReportOptions{Span: &span}), truth: run.Truth}
	var b bytes.Buffer
	if err := WriteHTML(&b, d.rep, Meta{Source: "recording " + name + ".rtd", Command: "retrytop report " + name + ".rtd", Version: "test"}); err != nil {
		t.Fatal(err)
	}
	d.page = b.String()
	demoReports[name] = d
	return d
}

// pageValue is the data-v of the first number on page at JSON path.
func pageValue(t *testing.T, page, path string) model.Value {
	t.Helper()
	m := regexp.MustCompile(`data-json="` + regexp.QuoteMeta(path) + `" data-v="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no number at %s on the page", path)
	}
	if m[1] == "null" {
		return model.Absent
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: data-v %q", path, m[1])
	}
	return model.Some(v)
}

// On recordings of the demo's scenarios the page leads with the
// incident: the client -> provider hop (where the retries happen) is the
// first card and the phase table's, the table and the cards cover the
// same span with the same numbers, and the provider's side shows how deep
// the storm's queue got.
func TestReportLeadsWithTheIncident(t *testing.T) {
	for _, tc := range []struct {
		name string
		// peakHere: the headline's peak amplification is the table's
		// row's (in the chain the browser's own retries peak higher).
		peakHere bool
	}{{"baseline", true}, {"chain", false}, {"ignore-cancel", true}} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			d := reportDemo(t, name)
			rep, page := &d.rep, d.page
			if rep.Span.Kind != analysis.SpanIncident {
				t.Fatalf("span %+v, want the incident", rep.Span)
			}
			if n := checkAgainstJSON(t, page, *rep); n < 100 {
				t.Errorf("only %d numbers tied to the JSON", n)
			}
			// Which span: the header and every section say it.
			words := spanWords(rep)
			if !strings.HasPrefix(words, "the incident span ") || strings.Count(page, html.EscapeString(words)) < 4 {
				t.Errorf("the page names %q %d times", words, strings.Count(page, html.EscapeString(words)))
			}
			if strings.Contains(page, "over the last") {
				t.Errorf("the page still speaks of the last window")
			}

			first := regexp.MustCompile(`<article class="row" id="row(\d+)">\n<h3><bdi>([^<]*)</bdi> → <bdi>([^<]*)</bdi>`).FindStringSubmatch(page)
			if first == nil || first[2] != sim.NameClient || first[3] != sim.NameProvider {
				t.Fatalf("first card %v, want %s -> %s", first, sim.NameClient, sim.NameProvider)
			}
			row := "/dependencies/" + first[1]
			if !strings.Contains(page, `id="phases" data-row="`+row+`"`) {
				t.Errorf("the phase table is not the first card's row %s", row)
			}

			// The phase table's last line is the card's numbers.
			table := page[strings.Index(page, `id="phases"`):]
			table = table[:strings.Index(table, "</table>")]
			card := page[strings.Index(page, `id="row`+first[1]+`"`):]
			card = card[:strings.Index(card, "</p>")]
			for _, k := range []string{"amplification", "successes_per_s", "originals_per_s", "effective_success"} {
				p := row + "/" + k
				tv, cv := pageValue(t, table, p), pageValue(t, card, p)
				if !tv.OK() || tv != cv {
					t.Errorf("%s: table %v, card %v", p, tv, cv)
				}
			}
			// The headline's peak is the highest phase peak inside the span
			// of any row; on a single chain of retries, the table's.
			best, bestRow := model.Absent, -1
			for i, dep := range rep.Dependencies {
				for _, j := range spanPhases(rep, dep) {
					if v := dep.Phases[j].PeakAmplification; v.OK() && (!best.OK() || v.V() > best.V()) {
						best, bestRow = v, i
					}
				}
			}
			kpi := page[strings.Index(page, `<div class="kpis">`):]
			m := regexp.MustCompile(`data-json="/dependencies/(\d+)/phases/\d+/peak_amplification" data-v="([^"]*)"`).FindStringSubmatch(kpi)
			if m == nil || m[2] != strconv.FormatFloat(best.V(), 'g', -1, 64) || m[1] != strconv.Itoa(bestRow) {
				t.Errorf("headline peak %v, want %v of row %d", m, best, bestRow)
			}
			if tc.peakHere && (m == nil || "/dependencies/"+m[1] != row || !strings.Contains(table, m[0])) {
				t.Errorf("headline peak %v is not the phase table's", m)
			}

			// The provider's side: the storm's queue, not the drained end.
			_, pk := servicePeak(rep, sim.NameProvider)
			if pk == nil {
				t.Fatal("no peak for the provider")
			}
			slots := float64(d.truth.Provider.Slots)
			t.Logf("peak queue %v at %v, oldest %v; the sim's peak %d, %v slots", pk.QueueDepth, pk.QueueDepthUnix, pk.QueueOldestAge, d.truth.Provider.PeakQueueDepth, slots)
			if q := pk.QueueDepth; !q.OK() || q.V() <= slots || q.V() > float64(d.truth.Provider.PeakQueueDepth) {
				t.Errorf("peak queue %v, want above the %v slots and at most the sim's peak %d", q, slots, d.truth.Provider.PeakQueueDepth)
			}
			if a := pk.QueueOldestAge; !a.OK() || a.V() <= 0 {
				t.Errorf("peak queue age %v", a)
			}
			prov := page[strings.Index(page, `<section id="provider">`):]
			for _, p := range []string{"/service_peaks/0/queue_depth", "/service_peaks/0/queue_oldest_age_s"} {
				if v := pageValue(t, prov, p); !v.OK() {
					t.Errorf("provider section: %s %v", p, v)
				}
			}

			// The headline's recovery is the sim's: the client -> provider
			// row's, dated from the scrapes (the sim dates it to a whole
			// second; the scrapes are 1 s apart); "-" when the run never
			// recovered.
			const recoveryTolerance = 1.0 // s
			kpi = kpi[strings.Index(kpi, `<div class="k">Recovery</div>`):]
			kpi = kpi[:strings.Index(kpi, "</div></div>")]
			rec := model.Absent
			if m := regexp.MustCompile(`data-v="([^"]*)"`).FindStringSubmatch(kpi); m != nil && m[1] != "null" {
				v, err := strconv.ParseFloat(m[1], 64)
				if err != nil {
					t.Fatalf("recovery data-v %q", m[1])
				}
				rec = model.Some(v)
			}
			truth := d.truth.Recovery
			t.Logf("recovery %v, the sim's %v (recovered %v)", rec, truth.UserRecovery, truth.Recovered)
			switch {
			case truth.Recovered && (!rec.OK() || math.Abs(rec.V()-truth.UserRecovery.Seconds()) > recoveryTolerance):
				t.Errorf("headline recovery %v, the sim's %v", rec, truth.UserRecovery)
			case !truth.Recovered && (rec.OK() || !strings.Contains(kpi, ">-<")):
				t.Errorf("headline recovery %v of a run that never recovered: %s", rec, kpi)
			}

			// Detection beside the trigger.
			det := page[strings.Index(page, `id="detection"`):]
			for _, p := range []string{"/detection/trigger_start_unix", "/detection/first_warning_unix", "/detection/first_critical_unix"} {
				if v := pageValue(t, det, p); !v.OK() {
					t.Errorf("detection: %s %v", p, v)
				}
			}
		})
	}
}

// The fates section has a column per row in the cards' order and a line
// per fate; a fate the source does not tell is "-", never 0.
func TestReportFates(t *testing.T) {
	d := reportDemo(t, "baseline")
	sec := d.page[strings.Index(d.page, `<section id="fates">`):]
	sec = sec[:strings.Index(sec, "</section>")]
	if got := strings.Count(sec, "<tr>"); got != len(fates)+1 {
		t.Errorf("%d lines, want %d fates and a header", got, len(fates)+1)
	}
	order := rowOrder(&d.rep)
	for _, f := range fates {
		for _, i := range order {
			want := f.get(&d.rep.Dependencies[i].Fates)
			p := "/dependencies/" + strconv.Itoa(i) + "/fates/" + f.key
			if got := pageValue(t, sec, p); got != want {
				t.Errorf("%s: page %v, report %v", p, got, want)
			}
		}
	}
	// The sim's client exports no breaker: its column says "-".
	if !regexp.MustCompile(`<th>not retried: breaker</th>(<td><span class="n" data-json="[^"]*" data-v="null">-</span></td>)+</tr>`).MatchString(sec) {
		t.Errorf("the breaker line is not all dashes:\n%s", sec)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, d.rep, Meta{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "### Fates\n") || !regexp.MustCompile(`\| not retried: breaker \|( - \|)+\n`).MatchString(md.String()) {
		t.Errorf("markdown lacks the fates:\n%s", md.String())
	}
}
