package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/policy"
	"github.com/retrytop/retrytop/whatif"
)

var t0 = time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)

func some(v float64) model.Value { return model.Some(v) }

// fixture is a hand-made report: a chain browser -> app -> client ->
// provider whose client hop amplifies during an overload, six 10 s bins,
// phases healthy, overloaded, recovering, healthy, two findings and the
// provider's service signals. Names can be replaced by hostile ones.
func fixture(client, provider string) analysis.Report {
	sig := func(target, dep string, orig, att float64) model.Signals {
		return model.Signals{Target: target, Dependency: dep, OriginalsPerS: some(orig), AttemptsPerS: some(att), Amplification: some(att / orig),
			SuccessesPerS: some(orig * 0.8), TimeoutsPerS: some(att - orig), ActiveCalls: some(4), ConcurrencyLimit: some(8),
			BudgetDeniedPerS: model.Value{}, MaxAttempts: some(3),
			Latency: model.ClassesOf(map[string]model.Quantiles{model.ClassSuccess: {P50: some(0.02), P99: some(0.2)}}), MixedLatency: model.Quantiles{P99: some(0.5)}}
	}
	row := func(target, dep string, amp []float64) analysis.DependencyReport {
		d := analysis.DependencyReport{Signals: sig(target, dep, 50, 50*amp[len(amp)-1])}
		for i, a := range amp {
			b := analysis.BinReport{StartUnix: float64(t0.Unix() + int64(10*i)), EndUnix: float64(t0.Unix() + int64(10*i+10)), Signals: sig(target, dep, 50, 50*a)}
			if i == 2 {
				b.ActiveCalls = model.Value{} // a scrape gap: absent, not zero
			}
			d.Timeline = append(d.Timeline, b)
		}
		ph := func(kind analysis.PhaseKind, from, to int, orig, good float64) analysis.Phase {
			return analysis.Phase{Kind: kind, Start: t0.Add(time.Duration(from) * time.Second), End: t0.Add(time.Duration(to) * time.Second),
				Bins: (to - from) / 10, PeakAmplification: some(amp[from/10]), GoodputPerS: some(good), OriginalsPerS: some(orig), EffectiveSuccess: some(good / orig)}
		}
		d.Phases = []analysis.Phase{ph(analysis.PhaseHealthy, 0, 20, 50, 50), ph(analysis.PhaseOverloaded, 20, 40, 50, 10),
			ph(analysis.PhaseRecovering, 40, 50, 50, 40), ph(analysis.PhaseHealthy, 50, 60, 50, 50)}
		d.Phases[1].Trigger = true
		d.Phases[3].RecoveryS = some(10)
		return d
	}
	flat := []float64{1, 1, 1, 1, 1, 1}
	rep := analysis.Report{WindowSeconds: 30, StartUnix: float64(t0.Unix()), EndUnix: float64(t0.Unix() + 60), BinSeconds: 10,
		Targets: []model.TargetStatus{{Name: "browser", Up: true}, {Name: client, Up: true, Dialect: "native"}},
		Dependencies: []analysis.DependencyReport{
			row("app", client, flat),
			row("browser", "app", flat),
			row(client, provider, []float64{1, 1, 2.9, 3, 1.4, 1}),
		},
		Chains: []analysis.ChainResult{{Name: "browser -> app -> " + client + " -> " + provider,
			Hops: []analysis.HopResult{
				{Target: "browser", Dependency: "app", Found: true, Amplification: some(1), MaxAttempts: some(1)},
				{Target: "app", Dependency: client, Found: true, Amplification: some(1), MaxAttempts: some(1)},
				{Target: client, Dependency: provider, Found: true, Amplification: some(3), MaxAttempts: some(3)},
			}, EndToEndAmplification: some(3), ProductAmplification: some(3), WorstCaseAmplification: some(3),
			Provider: &analysis.ChainProvider{Target: provider, SentPerS: some(150), ArrivedPerS: some(150), QueueDepth: some(40), WorkAfterCancelPerS: model.Value{}}}},
		Services: []model.ServiceSignals{{Target: provider, Source: "sim", QueueDepth: some(40), QueueOldestAge: some(0.9), ReceivedPerS: some(150)}},
		Findings: []analysis.Finding{
			{Code: analysis.CodeRetryAmplification, Severity: analysis.SeverityCritical, Target: client, Dependency: provider,
				Message:  client + " -> " + provider + ": 3.00 attempts per admitted original",
				Evidence: analysis.Evidence{{Name: "amplification", Value: 3}, {Name: "retries_per_s." + client, Value: 100}},
				Start:    t0.Add(20 * time.Second), End: t0.Add(40 * time.Second)},
			{Code: analysis.CodeMetastable, Severity: analysis.SeverityWarning, Target: "browser", Dependency: "app", Message: "overload outlived the trigger",
				Start: t0.Add(40 * time.Second), End: t0.Add(50 * time.Second)},
		},
	}
	return rep
}

var meta = Meta{Source: "recording incident.rtd", Command: "retrytop report incident.rtd -o incident.html", Version: "v0.0.0-test (abc)"}

// pointer resolves a JSON pointer in a decoded document.
func pointer(doc any, p string) (any, bool) {
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch v := cur.(type) {
		case map[string]any:
			n, ok := v[tok]
			if !ok {
				return nil, false
			}
			cur = n
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// checkAgainstJSON ties every data-json number of page to rep's JSON.
func checkAgainstJSON(t *testing.T, page string, rep analysis.Report) int {
	t.Helper()
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`data-json="([^"]*)" data-v="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		path := html.UnescapeString(m[1])
		want, ok := pointer(doc, path)
		if !ok {
			t.Errorf("%s is not in the JSON", path)
			continue
		}
		n++
		if w, ok := want.(string); ok { // "+Inf", "-Inf", "NaN" as the JSON writes them
			if m[2] != w {
				t.Errorf("%s: page %s, JSON %q", path, m[2], w)
			}
			continue
		}
		got := any(nil)
		if m[2] != "null" {
			f, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				t.Errorf("%s: data-v %q", path, m[2])
				continue
			}
			got = f
		}
		if got != want {
			t.Errorf("%s: page %v, JSON %v", path, got, want)
		}
	}
	return n
}

func TestWriteHTMLNumbersAreTheJSONs(t *testing.T) {
	rep := fixture("client", "provider")
	var b bytes.Buffer
	if err := WriteHTML(&b, rep, meta); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := checkAgainstJSON(t, page, rep); n < 150 {
		t.Errorf("only %d numbers carry their JSON path", n)
	}
	// Goodput lost over browser -> app's unhealthy phases (the chain's
	// first hop): (50-10) x 20 s overloaded + (50-40) x 10 s recovering.
	if !strings.Contains(page, `data-derived="goodput_lost" data-lead="/dependencies/1" data-v="900">900<`) {
		t.Errorf("goodput lost is not 900 of row 1")
	}
	for _, want := range []string{
		`id="verdict">Incident from 20:00:20 to 20:00:50 UTC`,
		`data-json="/dependencies/2/phases/1/peak_amplification" data-v="2.9">2.90x<`, // the highest phase peak of any row
		`data-json="/dependencies/1/phases/3/recovery_s" data-v="10">10s<`,            // the lead's recovery first
		`<a href="#f1">yes (warning)</a>`,
		`data-json="/findings/0/evidence/retries_per_s.client" data-v="100">100<`,
		`data-json="/chains/0/provider/work_after_cancel_per_s" data-v="null">-<`, // absent is "-", not 0
		`<code class="cmd">retrytop report incident.rtd -o incident.html</code>`,
		`What to do.</b> Bound retries`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// Rows in chain order: browser -> app, app -> client, client -> provider.
	if a, b, c := strings.Index(page, `id="row1"`), strings.Index(page, `id="row0"`), strings.Index(page, `id="row2"`); !(a < b && b < c) {
		t.Errorf("rows not in chain order: %d %d %d", a, b, c)
	}
	// Absent bins break the line and get no dot; the budget series, absent
	// throughout, is listed as "-" with no dot at all.
	if strings.Contains(page, "/timeline/2/active_calls") || strings.Contains(page, "budget_denied_per_s\"") {
		t.Errorf("an absent value got a dot")
	}
	if !strings.Contains(page, `<li class="absent"><i class="sw ln s3"></i>budget denied/s: -</li>`) {
		t.Errorf("the absent budget series is not listed as -")
	}
	if strings.Contains(page, "user-select") || strings.Contains(page, "<script") {
		t.Errorf("the page blocks selection or carries a script")
	}
}

// failAfter accepts n bytes, then fails every write.
type failAfter struct {
	n   int
	err error
}

func (f *failAfter) Write(b []byte) (int, error) {
	if len(b) > f.n {
		w := f.n
		f.n = 0
		return w, f.err
	}
	f.n -= len(b)
	return len(b), nil
}

// TestWriteHTMLSaysWhenTheWriterFails: the page goes out as it is made,
// so a writer that fails partway (a full disk, a closed pipe) makes
// WriteHTML return its error, at any point of the page.
func TestWriteHTMLSaysWhenTheWriterFails(t *testing.T) {
	rep := fixture("client", "provider")
	var whole bytes.Buffer
	if err := WriteHTML(&whole, rep, meta); err != nil {
		t.Fatal(err)
	}
	wantErr := errors.New("disk full")
	for _, n := range []int{0, 1000, whole.Len() / 2, whole.Len() - 1} {
		if err := WriteHTML(&failAfter{n: n, err: wantErr}, rep, meta); !errors.Is(err, wantErr) {
			t.Errorf("failing after %d of %d bytes: %v, want %v", n, whole.Len(), err, wantErr)
		}
	}
	if err := WriteHTML(&failAfter{n: whole.Len(), err: wantErr}, rep, meta); err != nil {
		t.Errorf("a writer taking the whole page: %v", err)
	}
}

// TestWriteHTMLEscapesTargetStrings: names, messages and evidence keys
// from targets are text, never markup, and bidi controls are shown as
// escapes instead of reordering the page.
func TestWriteHTMLEscapesTargetStrings(t *testing.T) {
	evil := "<script>alert('x')</script>\"&\u202e"
	rep := fixture(evil, `prov"><img src=x onerror=alert(1)>`)
	for _, w := range []func(*bytes.Buffer) error{
		func(b *bytes.Buffer) error {
			return WriteHTML(b, rep, Meta{Source: evil, Command: evil, Version: evil})
		},
		func(b *bytes.Buffer) error {
			// The command is printed as typed in a code fence, where
			// markdown shows markup as text; the rest must be escaped.
			return WriteMarkdown(b, rep, Meta{Source: evil, Command: "retrytop report x", Version: evil})
		},
	} {
		var b bytes.Buffer
		if err := w(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, bad := range []string{"<script", "<img", "\u202e"} {
			if strings.Contains(out, bad) {
				t.Errorf("output carries %q raw", bad)
			}
		}
		if !strings.Contains(out, `\u202e`) {
			t.Errorf("the bidi override is not shown as an escape")
		}
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, rep, meta); err != nil {
		t.Fatal(err)
	}
	if n := checkAgainstJSON(t, b.String(), rep); n < 150 {
		t.Errorf("only %d numbers tied to the JSON with hostile names", n)
	}
}

func TestHeadlineHealthyAndUnknown(t *testing.T) {
	rep := fixture("client", "provider")
	for i := range rep.Dependencies {
		for j := range rep.Dependencies[i].Phases {
			rep.Dependencies[i].Phases[j].Kind = analysis.PhaseHealthy
		}
	}
	rep.Findings = []analysis.Finding{{Code: analysis.CodeAdmissionShedding, Severity: analysis.SeverityInfo, Target: "client", Dependency: "provider"}}
	h := buildHeadline(&rep)
	if h.incident || h.lost.OK() || h.metastable >= 0 {
		t.Errorf("healthy report: %+v", h)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, rep, meta); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `id="verdict">No incident`) {
		t.Errorf("healthy report has no 'No incident' verdict")
	}
	// An unhealthy phase without goodput makes the total unknown, not
	// smaller.
	rep = fixture("client", "provider")
	rep.Dependencies[1].Phases[2].GoodputPerS = model.Value{}
	if h := buildHeadline(&rep); h.lost.OK() {
		t.Errorf("goodput lost %v with a phase's goodput unknown", h.lost)
	}
	// No chain: the row with the most unhealthy bins leads.
	rep = fixture("client", "provider")
	rep.Chains = nil
	rep.Dependencies[2].Phases[0].Kind = analysis.PhaseDegraded
	if h := buildHeadline(&rep); h.lead != 2 {
		t.Errorf("lead %d without chains, want 2", h.lead)
	}
	// The chain's entry saw nothing, client -> provider was overloaded:
	// the client row leads, and its span is the incident's.
	rep = fixture("client", "provider")
	for _, i := range []int{0, 1} {
		for j := range rep.Dependencies[i].Phases {
			rep.Dependencies[i].Phases[j].Kind = analysis.PhaseHealthy
		}
	}
	if h := buildHeadline(&rep); h.lead != 2 || !h.incident {
		t.Errorf("lead %d (incident %v), want the unhealthy client row 2", h.lead, h.incident)
	}
	// Findings alone make an incident without a span.
	for j := range rep.Dependencies[2].Phases {
		rep.Dependencies[2].Phases[j].Kind = analysis.PhaseHealthy
	}
	b.Reset()
	if err := WriteHTML(&b, rep, meta); err != nil || !strings.Contains(b.String(), `id="verdict">Incident: findings at warning or worse`) {
		t.Errorf("findings-only incident: %v", err)
	}
	// Nothing at all.
	b.Reset()
	if err := WriteHTML(&b, analysis.Report{}, meta); err != nil || !strings.Contains(b.String(), "No retry metrics found") {
		t.Errorf("empty report: %v", err)
	}
}

func TestWriteMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, fixture("client", "provider"), meta); err != nil {
		t.Fatal(err)
	}
	golden(t, "report/fixture.md", b.Bytes())
}

func TestSparkline(t *testing.T) {
	for _, tc := range []struct {
		in   []model.Value
		want string
	}{
		{[]model.Value{some(0), some(1), some(2), some(4), some(8)}, "▁▂▃▅█"},
		{[]model.Value{some(3), {}, some(3)}, "█ █"}, // absent is blank, not the bottom
		{[]model.Value{some(0), some(0)}, "▁▁"},
		{[]model.Value{{}, {}}, "  "},
	} {
		if got := sparkline(tc.in); got != tc.want {
			t.Errorf("sparkline(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{fmtSig(2), "2"}, {fmtSig(1.96), "1.96"}, {fmtSig(50), "50"}, {fmtSig(17.25), "17.2"}, {fmtSig(150.4), "150"}, {fmtSig(0.004), "0.004"},
		{fmtSec(0.00025), "250µs"}, {fmtSec(0.0175), "17.5ms"}, {fmtSec(5), "5s"}, {fmtSec(1.256), "1.26s"},
		{fmtAmp(3), "3.00x"}, {fmtPct(0.345), "34.5%"}, {fmtCount(inf()), "unlimited"},
		{fmtVal(model.Value{}, fmtRate), "-"}, {jsonNum(model.Value{}), "null"}, {jsonNum(some(inf())), "+Inf"},
		{safetext.TerminalN("a\u202eb\x1bc", 0), `a\u202eb\x1bc`},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func inf() float64 { v, _ := strconv.ParseFloat("+Inf", 64); return v }

// TestChartBreaksOnAbsent: an absent value splits the line in two and
// gets no dot; the axis tops out at a round number.
func TestChartBreaksOnAbsent(t *testing.T) {
	c := chart{id: "c", title: "t", unit: fmtRate, t0: 0, t1: 40, series: []series{{name: "a", class: "s1", pts: []point{
		{t: 5, v: 1, ok: true, path: "/p/0"}, {t: 15, v: 3, ok: true, path: "/p/1"}, {t: 25}, {t: 35, v: 7, ok: true, path: "/p/3"}}}}}
	var b bytes.Buffer
	c.write(&b, func(t float64) string { return fmt.Sprint(t) })
	svg := b.String()
	if n := strings.Count(svg, "<polyline"); n != 2 {
		t.Errorf("%d polylines, want 2 (the absent bin breaks the line)", n)
	}
	if n := strings.Count(svg, "<circle"); n != 3 || strings.Contains(svg, "/p/2") {
		t.Errorf("%d dots, want 3 and none for the absent bin", n)
	}
	if !strings.Contains(svg, ">10/s</text>") {
		t.Errorf("axis maximum is not 10/s:\n%s", svg)
	}
}

// TestNonFiniteValues: +Inf (an unlimited concurrency limit) and NaN reach
// the page as the JSON writes them, and never as a chart coordinate.
func TestNonFiniteValues(t *testing.T) {
	rep := fixture("client", "provider")
	nan := inf() - inf()
	for i := range rep.Dependencies {
		rep.Dependencies[i].ConcurrencyLimit = some(inf())
		for j := range rep.Dependencies[i].Timeline {
			rep.Dependencies[i].Timeline[j].ConcurrencyLimit = some(inf())
			rep.Dependencies[i].Timeline[j].QueueDepth = some(nan)
		}
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, rep, meta); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, m := range regexp.MustCompile(` (cx|cy|x|y|x1|x2|y1|y2|width|height|points)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		for _, f := range strings.FieldsFunc(m[2], func(r rune) bool { return r == ' ' || r == ',' }) {
			if v, err := strconv.ParseFloat(f, 64); err != nil || v != v || v-v != 0 {
				t.Errorf("%s=%q is not a finite coordinate", m[1], m[2])
			}
		}
	}
	if strings.Contains(page, `concurrency_limit" data-v`) && strings.Contains(page, `<circle cx="`) && regexp.MustCompile(`<circle [^>]*timeline/\d+/(concurrency_limit|queue_depth)"`).MatchString(page) {
		t.Errorf("a non-finite value got a dot")
	}
	if !strings.Contains(page, "limit: unlimited</li>") {
		t.Errorf("an unlimited limit is not said so in the legend")
	}
	checkAgainstJSON(t, page, rep)
	if err := WriteMarkdown(&b, rep, meta); err != nil {
		t.Fatal(err)
	}
}

func fp(v float64) *float64 { return &v }

// whatifFixture is a what-if report of three policies, one without a
// fate ledger, with hostile strings from the recording.
func whatifFixture() *whatif.Report {
	return &whatif.Report{File: "x.rtd", BinS: 1, Chain: []string{"browser", "<b>client</b>", "provider"},
		Assumptions: []whatif.Assumption{{What: "slots", Value: "4", Source: `provider <script>"x"</script>` + "\u202e"},
			{What: "slow service time", Value: "at least 60.6ms", Source: "no request finished", Confidence: whatif.ConfidenceUndetermined}},
		Undetermined: []string{"slow service time"},
		Recording:    whatif.Summary{SuccessRatio: fp(0.62), GoodputPerS: fp(31), PeakAmplification: fp(4.51)},
		Policies: []whatif.PolicyResult{
			{Policy: "recorded", Model: "recorded", Summary: whatif.Summary{SuccessRatio: fp(0.603), RecoveryS: fp(1)}, Fates: map[string]int64{"success": 1448, "max_attempts": 951}},
			{Policy: "bounded", Model: "bounded", Summary: whatif.Summary{SuccessRatio: fp(0.796), Metastable: true}, Fates: map[string]int64{"success": 1909, "limiter": 490}},
			{Policy: "none", Model: "none"},
		}}
}

// TestWhatIfSection: the what-if table and fate ledger carry whatif's
// numbers (data-whatif paths into its JSON), a fate the ledger lacks is 0,
// a run without a ledger "-", and strings from the recording are escaped.
func TestWhatIfSection(t *testing.T) {
	w := whatifFixture()
	m := meta
	m.WhatIf = w
	var b bytes.Buffer
	if err := WriteHTML(&b, fixture("client", "provider"), m); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	raw, _ := json.Marshal(w)
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mm := range regexp.MustCompile(`data-whatif="([^"]*)" data-v="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		want, ok := pointer(doc, html.UnescapeString(mm[1]))
		if !ok {
			t.Errorf("%s is not in whatif's JSON", mm[1])
			continue
		}
		n++
		if want == nil {
			if mm[2] != "null" {
				t.Errorf("%s: page %s, JSON null", mm[1], mm[2])
			}
		} else if f, err := strconv.ParseFloat(mm[2], 64); err != nil || f != want {
			t.Errorf("%s: page %s, JSON %v", mm[1], mm[2], want)
		}
	}
	if n != 4*6+4 {
		t.Errorf("%d what-if numbers, want 28 (4 runs x 6 figures, 4 fates counted)", n)
	}
	for _, want := range []string{
		// success, limiter, max_attempts: recorded counted no limiter, bounded no max_attempts, none has no ledger
		`<tr><td>recorded</td><td><span class="n" data-whatif="/policies/0/fates/success" data-v="1448">1448</span></td><td>0</td><td>`,
		`<tr><td>none</td><td>-</td><td>-</td><td>-</td></tr>`,
		"chain browser → &lt;b&gt;client&lt;/b&gt; → provider",
		`provider &lt;script&gt;&quot;x&quot;&lt;/script&gt;\u202e`,
		`<td>bounded</td><td>bounded</td>`,
		// the confidence of each assumption, "-" where the fit gave none
		`<tr><td>slots</td><td>4</td><td>-</td>`,
		`<tr><td>slow service time</td><td>at least 60.6ms</td><td>undetermined</td>`,
		`<p class="advice">The recording cannot determine slow service time;`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	b.Reset()
	if err := WriteMarkdown(&b, fixture("client", "provider"), m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| recorded | 1448 | 0 | 951 |", "| none | - | - | - |", "| bounded | 79.6% | - | - | - | - | - | yes |",
		"The recording cannot determine slow service time; the predictions rest on a bound for it."} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %s", want)
		}
	}
}

// TestPolicyCurveSection: the recorded policy's check is drawn with every
// point tied to whatif's JSON (steady, worst, the incident), an unknown
// steady state (null) is left out of the line, not drawn as 0, and the
// markdown lists every quarter of p and the incident.
func TestPolicyCurveSection(t *testing.T) {
	w := whatifFixture()
	w.Curve = curveFixture()
	m := meta
	m.WhatIf = w
	var b bytes.Buffer
	if err := WriteHTML(&b, fixture("client", "provider"), m); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`data-whatif="/policy_curve/points/4/worst_load" data-v="3"`,
		`data-whatif="/policy_curve/incident/amplification" data-v="2.87"`,
		`the incident: p <span class="n" data-whatif="/policy_curve/incident/p" data-v="0.99">99.0%</span>`,
		"recorded client (3 attempts; attempt cap only)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, `/policy_curve/points/2/steady_load`) {
		t.Error("an unknown steady state is drawn")
	}
	b.Reset()
	if err := WriteMarkdown(&b, fixture("client", "provider"), m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 50.0% | - | 1.75x |", "| 100.0% | 3.00x | 3.00x |", "| **the incident: 99.0%** | 2.87x measured | |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %s", want)
		}
	}
}

// curveFixture is a 3-attempt policy's check at every quarter of p, its
// steady state unknown at 50 %, and an incident at p 99 %.
func curveFixture() *whatif.Curve {
	c := &whatif.Curve{
		Layers:   []policy.CheckLayer{{Spec: "recorded client", MaxAttempts: 3, Budget: "attempt cap only"}},
		Incident: &whatif.IncidentPoint{P: 0.99, Amplification: 2.87},
	}
	for i := 0; i <= 4; i++ {
		p := float64(i) / 4
		load := 1 + p + p*p
		pt := whatif.CurvePoint{P: p, SteadyLoad: fp(load), WorstLoad: fp(load)}
		if i == 2 {
			pt.SteadyLoad = nil
		}
		c.Points = append(c.Points, pt)
	}
	return c
}
