package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// Report formats accepted by WriteReport.
var ReportFormats = []string{"text", "json", "markdown"}

// reportColumn is one column of the analyze table (reportRanks orders
// them by what they tell of an incident, for a table too wide).
type reportColumn struct {
	head string
	cell func(d *analysis.DependencyReport) string
}

func rateCell(get func(s *model.Signals) model.Value) func(*analysis.DependencyReport) string {
	return func(d *analysis.DependencyReport) string { return string(appendRate(nil, get(&d.Signals))) }
}

var reportColumns = []reportColumn{
	{"TARGET", func(d *analysis.DependencyReport) string { return cutLong(Sanitize(d.Target)) }},
	{"DEPENDENCY", func(d *analysis.DependencyReport) string { return cutLong(Sanitize(d.Dependency)) }},
	{"ORIG/s", rateCell(func(s *model.Signals) model.Value { return s.OriginalsPerS })},
	{"ATT/s", rateCell(func(s *model.Signals) model.Value { return s.AttemptsPerS })},
	{"AMP", func(d *analysis.DependencyReport) string { return string(appendAmp(nil, d.Amplification)) }},
	{"EFF%", func(d *analysis.DependencyReport) string { return string(appendPct(nil, d.EffectiveSuccess)) }},
	{"ATT%", func(d *analysis.DependencyReport) string { return string(appendPct(nil, d.AttemptSuccess)) }},
	{"RETRY/s", rateCell(func(s *model.Signals) model.Value { return s.RetriesPerS })},
	{"RESCUED/s", rateCell(func(s *model.Signals) model.Value { return s.RescuedPerS })},
	{"BUDGET-DENIED/s", rateCell(func(s *model.Signals) model.Value { return s.BudgetDeniedPerS })},
	{"ADMISSION-REJ/s", rateCell(func(s *model.Signals) model.Value { return s.AdmissionRejectedPerS })},
	{"PROVIDER-ERR/s", rateCell(func(s *model.Signals) model.Value { return s.ProviderErrorsPerS })},
	{"TIMEOUT/s", rateCell(func(s *model.Signals) model.Value { return s.TimeoutsPerS })},
	{"ACTIVE/LIMIT", func(d *analysis.DependencyReport) string {
		return string(appendGauge(nil, d.ActiveCalls)) + "/" + string(appendGauge(nil, d.ConcurrencyLimit))
	}},
	{"POOL-WAIT-p99", func(d *analysis.DependencyReport) string { return string(appendSeconds(nil, d.PoolWaitP99, "us")) }},
	{"OK-p99", func(d *analysis.DependencyReport) string {
		return string(appendSeconds(nil, d.LatencyP99[model.ClassSuccess], "us"))
	}},
	{"FAST-FAIL-p99", func(d *analysis.DependencyReport) string {
		return string(appendSeconds(nil, d.LatencyP99[model.ClassFastFailure], "us"))
	}},
}

// reportRanks: the incident's story first (who, how much, how it ends),
// protection and latency after.
var reportRanks = map[string]int{"TARGET": 0, "DEPENDENCY": 1, "AMP": 2, "ORIG/s": 3, "ATT/s": 4, "EFF%": 5, "ATT%": 6,
	"PROVIDER-ERR/s": 7, "TIMEOUT/s": 8, "RETRY/s": 9, "BUDGET-DENIED/s": 10, "ADMISSION-REJ/s": 11, "RESCUED/s": 12,
	"ACTIVE/LIMIT": 13, "OK-p99": 14, "FAST-FAIL-p99": 15, "POOL-WAIT-p99": 16}

// fitReportColumns chooses the columns of a table width columns wide (0: all):
// it drops, lowest rank first, the columns no row has a value in ("-" or
// 0 everywhere), then the others, never the first three (who and the
// amplification). It returns the columns kept, in order, and the heads of
// those dropped.
func fitReportColumns(cols []reportColumn, cells [][]string, width int) (keep []int, dropped []string) {
	const gap = 2
	w := make([]int, len(cols))
	empty := make([]bool, len(cols))
	total := 0
	for j, c := range cols {
		w[j] = len(c.head)
		empty[j] = true
		for _, row := range cells {
			w[j] = max(w[j], textWidth(row[j]))
			if v := strings.TrimSpace(row[j]); v != "-" && v != "0" && v != "-/-" && v != "0.0" {
				empty[j] = false
			}
		}
		total += w[j] + gap
	}
	gone := make([]bool, len(cols))
	for width > 0 && total > width {
		pick := -1
		for pass := 0; pass < 2 && pick < 0; pass++ {
			for j, c := range cols {
				if gone[j] || reportRanks[c.head] < 3 || pass == 0 && !empty[j] {
					continue
				}
				if pick < 0 || reportRanks[c.head] > reportRanks[cols[pick].head] {
					pick = j
				}
			}
		}
		if pick < 0 {
			break
		}
		gone[pick] = true
		total -= w[pick] + gap
		dropped = append(dropped, cols[pick].head)
	}
	for j := range cols {
		if !gone[j] {
			keep = append(keep, j)
		}
	}
	return keep, dropped
}

// serviceColumn is one column of the services table.
type serviceColumn struct {
	head string
	cell func(s *model.ServiceSignals) string
}

func svcRate(get func(s *model.ServiceSignals) model.Value) func(*model.ServiceSignals) string {
	return func(s *model.ServiceSignals) string { return string(appendRate(nil, get(s))) }
}

func svcSeconds(get func(s *model.ServiceSignals) model.Value) func(*model.ServiceSignals) string {
	return func(s *model.ServiceSignals) string { return string(appendSeconds(nil, get(s), "us")) }
}

var serviceColumns = []serviceColumn{
	{"SERVICE", func(s *model.ServiceSignals) string { return cutLong(Sanitize(s.Target)) }},
	{"SOURCE", func(s *model.ServiceSignals) string { return cutLong(Sanitize(s.Source)) }},
	{"RECV/s", svcRate(func(s *model.ServiceSignals) model.Value { return s.ReceivedPerS })},
	{"IN-FLIGHT", func(s *model.ServiceSignals) string { return string(appendGauge(nil, s.InFlight)) }},
	{"SLOTS", func(s *model.ServiceSignals) string { return string(appendGauge(nil, s.Slots)) }},
	{"QUEUE", func(s *model.ServiceSignals) string { return string(appendGauge(nil, s.QueueDepth)) }},
	{"QUEUE-LIMIT", func(s *model.ServiceSignals) string {
		if s.QueueLimit.OK && s.QueueLimit.V == 0 {
			return "unbounded" // 0 is a real setting, not a missing value
		}
		return string(appendGauge(nil, s.QueueLimit))
	}},
	{"QUEUE-OLDEST", svcSeconds(func(s *model.ServiceSignals) model.Value { return s.QueueOldestAge })},
	{"QUEUE-WAIT-p99", svcSeconds(func(s *model.ServiceSignals) model.Value { return s.QueueWaitP99 })},
	{"QUEUE-WAIT-MEAN", svcSeconds(func(s *model.ServiceSignals) model.Value { return s.QueueWaitMean })},
	{"SVC-p50", svcSeconds(func(s *model.ServiceSignals) model.Value { return s.ServiceTimeP50 })},
	{"SVC-p99", svcSeconds(func(s *model.ServiceSignals) model.Value { return s.ServiceTimeP99 })},
	{"OK-SVC-p50", svcSeconds(func(s *model.ServiceSignals) model.Value { return s.SuccessServiceTimeP50 })},
	{"OK-SVC-p99", svcSeconds(func(s *model.ServiceSignals) model.Value { return s.SuccessServiceTimeP99 })},
	{"ERR-SVC-p50", svcSeconds(func(s *model.ServiceSignals) model.Value { return s.ErrorServiceTimeP50 })},
	{"ERR-SVC-p99", svcSeconds(func(s *model.ServiceSignals) model.Value { return s.ErrorServiceTimeP99 })},
	{"2xx/s", svcRate(func(s *model.ServiceSignals) model.Value { return s.Responses2xxPerS })},
	{"429/s", svcRate(func(s *model.ServiceSignals) model.Value { return s.Responses429PerS })},
	{"503/s", svcRate(func(s *model.ServiceSignals) model.Value { return s.Responses503PerS })},
	{"503-RETRY-AFTER/s", svcRate(func(s *model.ServiceSignals) model.Value { return s.Responses503RetryAfterPerS })},
	{"5xx/s", svcRate(other5xx)},
	{"AFTER-CANCEL/s", svcRate(func(s *model.ServiceSignals) model.Value { return s.WorkAfterCancelPerS })},
	{"CANCELLED/s", svcRate(func(s *model.ServiceSignals) model.Value { return s.CancelledPerS })},
}

// writeServices prints the services table: aligned text, or a markdown
// table under head when md is set.
func writeServices(w io.Writer, rep analysis.Report, head string, md bool) error {
	if len(rep.Services) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%sServices\n\n", head)
	if md {
		heads := make([]string, len(serviceColumns))
		rule := make([]string, len(serviceColumns))
		for i, c := range serviceColumns {
			heads[i], rule[i] = c.head, "---:"
		}
		rule[0], rule[1] = "---", "---"
		fmt.Fprintf(w, "| %s |\n|%s|\n", strings.Join(heads, " | "), strings.Join(rule, "|"))
		for i := range rep.Services {
			cells := make([]string, len(serviceColumns))
			for j, c := range serviceColumns {
				cells[j] = mdEscape(c.cell(&rep.Services[i]))
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for i, c := range serviceColumns {
		if i > 0 {
			tw.Write([]byte("\t"))
		}
		tw.Write([]byte(c.head))
	}
	tw.Write([]byte("\t\n"))
	for i := range rep.Services {
		for j, c := range serviceColumns {
			if j > 0 {
				tw.Write([]byte("\t"))
			}
			tw.Write([]byte(c.cell(&rep.Services[i])))
		}
		tw.Write([]byte("\t\n"))
	}
	return tw.Flush()
}

// WriteReport prints an analyze report as text (aligned columns), markdown
// (for a postmortem) or JSON (the schema of docs/analyze-json.md). Every
// label value and error text is sanitised; absent signals print as "-".
func WriteReport(w io.Writer, rep analysis.Report, format string) error {
	return WriteReportWidth(w, rep, format, 0)
}

// WriteReportWidth is WriteReport with the text table fitted to width
// columns (0: every column, as --wide): columns no row has a value in go
// first, then the least telling ones (fitReportColumns), and a line under the
// table names what was left out.
func WriteReportWidth(w io.Writer, rep analysis.Report, format string, width int) error {
	switch format {
	case "json":
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
		_, err := w.Write(model.EscapeHiddenJSON(buf.Bytes()))
		return err
	case "text":
		return writeReportText(w, rep, width)
	case "markdown", "md":
		return writeReportMarkdown(w, rep)
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(ReportFormats, ", "))
}

// maxWordCols is the longest run of non-space characters the text and
// markdown reports print whole: a target may export a 20 kB label value,
// which would make every row that wide. JSON keeps every value whole.
const maxWordCols = 64

// cutLong shortens every word of s longer than maxWordCols to its start
// and "...", leaving sentences around it whole.
func cutLong(s string) string {
	if len(s) <= maxWordCols {
		return s
	}
	var b strings.Builder
	run := 0
	cut := false
	for _, r := range s {
		if r == ' ' || r == '\n' || r == '\t' {
			run, cut = 0, false
			b.WriteRune(r)
			continue
		}
		run++
		switch {
		case run < maxWordCols:
			b.WriteRune(r)
		case !cut:
			b.WriteString("...")
			cut = true
		}
	}
	return b.String()
}

func reportSpan(rep analysis.Report) string {
	if rep.EndUnix == 0 {
		return "no data"
	}
	end := time.Unix(0, int64(rep.EndUnix*1e9)).UTC()
	return fmt.Sprintf("window %s ending %s (recorded %s)", windowLabel(time.Duration(rep.WindowSeconds*float64(time.Second))),
		end.Format(time.RFC3339), (time.Duration((rep.EndUnix-rep.StartUnix)*1e3) * time.Millisecond).String())
}

func targetLine(t model.TargetStatus) string {
	state := "up"
	if !t.Up {
		state = "DOWN"
	}
	line := fmt.Sprintf("%s %s %s (%d scrapes, %d failed, %d series%s)", cutLong(Sanitize(t.Name)), state, cutLong(Sanitize(t.URL)), t.Scrapes, t.Failures, t.Series, dialectsNote(t))
	if t.LastError != "" {
		line += ": " + cutLong(Sanitize(t.LastError))
	}
	if c := t.SeriesCap; c != nil {
		if c.ByTarget > 0 {
			line += fmt.Sprintf(" [%d series refused by the per-target cap of %d, %d kept]", c.ByTarget, c.PerTarget, c.Kept)
		}
		if c.ByTotal > 0 {
			line += fmt.Sprintf(" [%d series refused: the store's total cap of %d series across targets is full; %d kept]", c.ByTotal, c.Total, c.Kept)
		}
	} else if t.DroppedSeries > 0 {
		line += fmt.Sprintf(" [%d series refused by the store's series caps]", t.DroppedSeries)
	}
	return line
}

func writeReportText(w io.Writer, rep analysis.Report, width int) error {
	fmt.Fprintf(w, "retrytop analyze: %s\n\n", reportSpan(rep))
	for _, t := range rep.Targets {
		fmt.Fprintf(w, "  %s\n", targetLine(t))
	}
	fmt.Fprintln(w)
	if len(rep.Dependencies) == 0 {
		fmt.Fprintln(w, "no retry metrics found (see docs/metrics.md for the families retrytop reads)")
		writeStory(w, rep, "", "") // its findings say why (NO_RETRY_SIGNALS, TARGET_DOWN)
		return nil
	}
	cells := make([][]string, len(rep.Dependencies))
	for i := range rep.Dependencies {
		cells[i] = make([]string, len(reportColumns))
		for j, c := range reportColumns {
			cells[i][j] = c.cell(&rep.Dependencies[i])
			if cells[i][j] != absentText && derivedHead(rep.Dependencies[i].Derived, c.head) {
				cells[i][j] += derivedMark
			}
		}
	}
	keep, dropped := fitReportColumns(reportColumns, cells, width)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for i, j := range keep {
		if i > 0 {
			tw.Write([]byte("\t"))
		}
		tw.Write([]byte(reportColumns[j].head))
	}
	tw.Write([]byte("\t\n"))
	for _, row := range cells {
		for i, j := range keep {
			if i > 0 {
				tw.Write([]byte("\t"))
			}
			tw.Write([]byte(row[j]))
		}
		tw.Write([]byte("\t\n"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(dropped) > 0 {
		fmt.Fprintf(w, "(%d columns left out to fit %d columns: %s; --wide shows all, --format json has every signal)\n",
			len(dropped), width, strings.Join(dropped, ", "))
	}
	writeDerivedNote(w, rep, derivedMark, func(s string) string { return cutLong(Sanitize(s)) })
	writeBudgets(w, rep, "", "")
	if err := writeServices(w, rep, "", false); err != nil {
		return err
	}
	writeStory(w, rep, "", "")
	return nil
}

// writeStory prints chains, findings and phases; head and item prefix the
// section titles and list items (markdown uses "### " and "- ").
func writeStory(w io.Writer, rep analysis.Report, head, item string) {
	esc := func(s string) string { return cutLong(Sanitize(s)) }
	if head != "" {
		esc = func(s string) string { return mdEscape(cutLong(Sanitize(s))) }
	}
	if len(rep.Chains) > 0 {
		fmt.Fprintf(w, "\n%sChains\n\n", head)
		for _, c := range rep.Chains {
			fmt.Fprintf(w, "%s%s\n", item, esc(chainLine(c)))
			if line, ok := cancelLine(c); ok {
				fmt.Fprintf(w, "%s  %s\n", item, esc(line))
			}
			for _, g := range c.Gaps {
				fmt.Fprintf(w, "%s  %s: %s -> %s sent %s/s, %s/s arrived (%+.1f/s)\n", item, g.Code,
					esc(g.From.Target), esc(g.To), appendNum(nil, g.SentPerS), appendNum(nil, g.ArrivedPerS), g.GapPerS)
			}
		}
	}
	fmt.Fprintf(w, "\n%sFindings\n\n", head)
	if len(rep.Findings) == 0 {
		fmt.Fprintf(w, "%snone\n", item)
	}
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "%s%-8s %s %s/%s: %s%s\n", item, strings.ToUpper(f.Severity.String()), f.Code,
			esc(f.Target), esc(f.Dependency), esc(f.Message), evidenceText(f.Evidence))
		if a := analysis.AdviceFor(f.Code).Short; a != "" {
			fmt.Fprintf(w, "%s         do: %s\n", strings.Repeat(" ", len(item)), a)
		}
	}
	var phased bool
	for _, d := range rep.Dependencies {
		if len(d.Phases) < 2 {
			continue // a single phase tells no story
		}
		if !phased {
			fmt.Fprintf(w, "\n%sIncident phases\n\n", head)
			phased = true
		}
		fmt.Fprintf(w, "%s%s -> %s\n", item, esc(d.Target), esc(d.Dependency))
		for _, p := range d.Phases {
			line := fmt.Sprintf("%s  %s-%s %-10s peak amp %s, goodput %s/s of %s/s", item,
				p.Start.UTC().Format("15:04:05"), p.End.UTC().Format("15:04:05"), p.Kind,
				appendAmp(nil, p.PeakAmplification), appendRate(nil, p.GoodputPerS), appendRate(nil, p.OriginalsPerS))
			if p.RecoveryS.OK {
				line += fmt.Sprintf(", recovered %.0fs after the trigger ended", p.RecoveryS.V)
			}
			fmt.Fprintln(w, line)
		}
	}
}

// cancelLine tells, for a chain whose provider reports work after cancel,
// how many attempts/s the caller gave up on (its timeouts) next to how many
// the provider still finished.
func cancelLine(c analysis.ChainResult) (string, bool) {
	p := c.Provider
	if p == nil || !p.WorkAfterCancelPerS.OK || len(c.Hops) == 0 {
		return "", false
	}
	last := c.Hops[len(c.Hops)-1]
	return fmt.Sprintf("%s -> %s: %s", last.Target, last.Dependency, gaveUpText(p)), true
}

// gaveUpText is "caller gave up on N/s, provider still finished M/s".
func gaveUpText(p *analysis.ChainProvider) string {
	perS := func(v model.Value) string {
		if !v.OK {
			return absentText
		}
		return string(appendNum(nil, v.V)) + "/s"
	}
	return "caller gave up on " + perS(p.CallerTimeoutsPerS) + ", provider still finished " + perS(p.WorkAfterCancelPerS)
}

// chainLine renders a chain as hops with their amplification.
func chainLine(c analysis.ChainResult) string {
	var b strings.Builder
	for i, h := range c.Hops {
		if i == 0 {
			b.WriteString(h.Target)
		}
		fmt.Fprintf(&b, " -(%s)-> %s", appendAmp(nil, h.Amplification), h.Dependency)
	}
	fmt.Fprintf(&b, "  end-to-end %s, worst case %s", appendAmp(nil, c.EndToEndAmplification), appendAmp(nil, c.WorstCaseAmplification))
	return b.String()
}

func evidenceText(e analysis.Evidence) string {
	if len(e) == 0 {
		return ""
	}
	parts := make([]string, len(e))
	for i, n := range e {
		parts[i] = n.Name + "=" + string(appendNum(nil, n.Value))
	}
	return " [" + strings.Join(parts, " ") + "]"
}

func writeReportMarkdown(w io.Writer, rep analysis.Report) error {
	fmt.Fprintf(w, "## retrytop analyze\n\n%s\n\n### Targets\n\n", reportSpan(rep))
	for _, t := range rep.Targets {
		fmt.Fprintf(w, "- %s\n", mdEscape(targetLine(t)))
	}
	fmt.Fprintf(w, "\n### Dependencies\n\n")
	if len(rep.Dependencies) == 0 {
		fmt.Fprintln(w, "No retry metrics found.")
		writeStory(w, rep, "### ", "- ")
		_, err := fmt.Fprintln(w)
		return err
	}
	heads := make([]string, len(reportColumns))
	rule := make([]string, len(reportColumns))
	for i, c := range reportColumns {
		heads[i] = c.head
		rule[i] = "---:"
	}
	rule[0], rule[1] = "---", "---"
	fmt.Fprintf(w, "| %s |\n|%s|\n", strings.Join(heads, " | "), strings.Join(rule, "|"))
	for i := range rep.Dependencies {
		cells := make([]string, len(reportColumns))
		for j, c := range reportColumns {
			cells[j] = c.cell(&rep.Dependencies[i])
			cells[j] = mdEscape(cells[j])
			if cells[j] != absentText && derivedHead(rep.Dependencies[i].Derived, c.head) {
				cells[j] += `\` + derivedMark
			}
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	writeDerivedNote(w, rep, `\`+derivedMark, func(s string) string { return mdEscape(cutLong(Sanitize(s))) })
	writeBudgets(w, rep, "### ", "- ")
	writeServices(w, rep, "### ", true)
	writeStory(w, rep, "### ", "- ")
	_, err := fmt.Fprintln(w)
	return err
}

// mdEscape keeps untrusted text from breaking a markdown table.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "`", "'", "<", "&lt;", ">", "&gt;").Replace(s)
}
