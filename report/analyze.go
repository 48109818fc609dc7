package report

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-runewidth"
	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/celltext"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// AnalysisFormats are the formats WriteAnalysis writes.
var AnalysisFormats = []string{"text", "json", "markdown"}

// reportColumn is one column of the analyze table; col is its place in
// the column priority the dashboard shares (celltext.Column), -1 for the
// names, which every table keeps.
type reportColumn struct {
	head string
	col  celltext.Column
	cell func(d *analysis.DependencyReport) string
}

func rateCell(get func(s *model.Signals) model.Value) func(*analysis.DependencyReport) string {
	return func(d *analysis.DependencyReport) string { return string(celltext.AppendRate(nil, get(&d.Signals))) }
}

var reportColumns = []reportColumn{
	{"TARGET", -1, func(d *analysis.DependencyReport) string { return cutLong(safetext.Terminal(d.Target)) }},
	{"DEPENDENCY", -1, func(d *analysis.DependencyReport) string { return cutLong(safetext.Terminal(d.Dependency)) }},
	{"ORIG/s", celltext.ColOrig, rateCell(func(s *model.Signals) model.Value { return s.OriginalsPerS })},
	{"ATT/s", celltext.ColAtt, rateCell(func(s *model.Signals) model.Value { return s.AttemptsPerS })},
	{"AMP", celltext.ColAmp, func(d *analysis.DependencyReport) string { return string(celltext.AppendAmp(nil, d.Amplification)) }},
	{"EFF%", celltext.ColEff, func(d *analysis.DependencyReport) string { return string(celltext.AppendPct(nil, d.EffectiveSuccess)) }},
	{"ATT%", celltext.ColAttOK, func(d *analysis.DependencyReport) string { return string(celltext.AppendPct(nil, d.AttemptSuccess)) }},
	{"RETRY/s", celltext.ColRetry, rateCell(func(s *model.Signals) model.Value { return s.RetriesPerS })},
	{"RESCUED/s", celltext.ColRescued, rateCell(func(s *model.Signals) model.Value { return s.RescuedPerS })},
	{"BUDGET-DENIED/s", celltext.ColBudget, rateCell(func(s *model.Signals) model.Value { return s.BudgetDeniedPerS })},
	{"ADMISSION-REJ/s", celltext.ColAdmission, rateCell(func(s *model.Signals) model.Value { return s.AdmissionRejectedPerS })},
	{"PROVIDER-ERR/s", celltext.ColErrors, rateCell(func(s *model.Signals) model.Value { return s.ProviderErrorsPerS })},
	{"TIMEOUT/s", celltext.ColTimeouts, rateCell(func(s *model.Signals) model.Value { return s.TimeoutsPerS })},
	{"ACTIVE/LIMIT", celltext.ColActive, func(d *analysis.DependencyReport) string {
		return string(celltext.AppendGauge(nil, d.ActiveCalls)) + "/" + string(celltext.AppendGauge(nil, d.ConcurrencyLimit))
	}},
	{"POOL-WAIT-p99", celltext.ColPool, func(d *analysis.DependencyReport) string {
		return string(celltext.AppendSeconds(nil, d.PoolWaitP99, "us"))
	}},
	{"OK-p99", celltext.ColOK99, func(d *analysis.DependencyReport) string {
		return string(celltext.AppendSeconds(nil, d.LatencyP99[model.ClassSuccess], "us"))
	}},
	{"FAST-FAIL-p99", celltext.ColFF99, func(d *analysis.DependencyReport) string {
		return string(celltext.AppendSeconds(nil, d.LatencyP99[model.ClassFastFailure], "us"))
	}},
}

// cellGap is the space after every cell of a text table.
const cellGap = 2

// fitTable chooses the columns of a text table width columns wide (0:
// all) by celltext.FitRanked: the columns ranked below 0 always, then by
// rank, with the columns no row has a value in after every other. It
// returns the columns kept, in order, and the heads of those left out in
// rank order.
func fitTable(heads []string, rank []int, empty []bool, cells [][]string, width int) (keep []int, dropped []string) {
	cost := make([]int, len(heads))
	used := 0
	for j, h := range heads {
		w := runewidth.StringWidth(h)
		for _, row := range cells {
			w = max(w, runewidth.StringWidth(row[j]))
		}
		cost[j] = w + cellGap
		if rank[j] < 0 {
			used += cost[j]
		}
	}
	show := make([]bool, len(heads))
	if width > 0 {
		var fit []int
		var fr, fc []int
		var fe []bool
		for j := range heads {
			if rank[j] >= 0 {
				fit = append(fit, j)
				fr, fc, fe = append(fr, rank[j]), append(fc, cost[j]), append(fe, empty[j])
			}
		}
		_, shown := celltext.FitRanked(fr, fc, fe, used, width)
		var left []int
		for i, j := range fit {
			show[j] = shown[i]
			if !shown[i] {
				left = append(left, j)
			}
		}
		sort.SliceStable(left, func(a, b int) bool { return rank[left[a]] < rank[left[b]] })
		for _, j := range left {
			dropped = append(dropped, heads[j])
		}
	}
	for j := range heads {
		if width <= 0 || rank[j] < 0 || show[j] {
			keep = append(keep, j)
		}
	}
	return keep, dropped
}

// fitReportColumns chooses the dependency table's columns for width.
func fitReportColumns(rep analysis.Report, cells [][]string, width int) (keep []int, dropped []string) {
	empty := celltext.EmptyColumns(len(rep.Dependencies), func(i int) *model.Signals { return &rep.Dependencies[i].Signals })
	heads := make([]string, len(reportColumns))
	rank := make([]int, len(reportColumns))
	isEmpty := make([]bool, len(reportColumns))
	for j, c := range reportColumns {
		heads[j], rank[j] = c.head, int(c.col)
		if c.col >= 0 {
			isEmpty[j] = empty[c.col]
		}
	}
	return fitTable(heads, rank, isEmpty, cells, width)
}

// writeTable prints an aligned text table of the columns keep, and a
// note of the columns dropped wrapped to width.
func writeTable(w io.Writer, heads []string, cells [][]string, keep []int, dropped []string, width int) error {
	tw := tabwriter.NewWriter(w, 0, 0, cellGap, ' ', tabwriter.AlignRight)
	row := func(r []string) {
		for i, j := range keep {
			if i > 0 {
				tw.Write([]byte("\t"))
			}
			tw.Write([]byte(r[j]))
		}
		tw.Write([]byte("\t\n"))
	}
	row(heads)
	for _, r := range cells {
		row(r)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(dropped) > 0 {
		note := fmt.Sprintf("(%d columns left out to fit %d columns: %s; --wide shows all, --format json has every signal)",
			len(dropped), width, strings.Join(dropped, ", "))
		_, err := io.WriteString(w, wrapLine(note, width)+"\n")
		return err
	}
	return nil
}

// serviceColumn is one column of the services table; rank orders them
// for a narrow table as the dashboard's SERVICES section does (lower
// kept first, -1 always).
type serviceColumn struct {
	head string
	rank int
	cell func(s *model.ServiceSignals) string
}

func svcRate(get func(s *model.ServiceSignals) model.Value) func(*model.ServiceSignals) string {
	return func(s *model.ServiceSignals) string { return string(celltext.AppendRate(nil, get(s))) }
}

func svcSeconds(get func(s *model.ServiceSignals) model.Value) func(*model.ServiceSignals) string {
	return func(s *model.ServiceSignals) string { return string(celltext.AppendSeconds(nil, get(s), "us")) }
}

var serviceColumns = []serviceColumn{
	{"SERVICE", -1, func(s *model.ServiceSignals) string { return cutLong(safetext.Terminal(s.Target)) }},
	{"SOURCE", -1, func(s *model.ServiceSignals) string { return cutLong(safetext.Terminal(s.Source)) }},
	{"RECV/s", 0, svcRate(func(s *model.ServiceSignals) model.Value { return s.ReceivedPerS })},
	{"IN-FLIGHT", 1, func(s *model.ServiceSignals) string { return string(celltext.AppendGauge(nil, s.InFlight)) }},
	{"SLOTS", 2, func(s *model.ServiceSignals) string { return string(celltext.AppendGauge(nil, s.Slots)) }},
	{"QUEUE", 3, func(s *model.ServiceSignals) string { return string(celltext.AppendGauge(nil, s.QueueDepth)) }},
	{"QUEUE-LIMIT", 4, func(s *model.ServiceSignals) string {
		if s.QueueLimit.OK() && s.QueueLimit.V() == 0 {
			return "unbounded" // 0 is a real setting, not a missing value
		}
		return string(celltext.AppendGauge(nil, s.QueueLimit))
	}},
	{"QUEUE-OLDEST", 10, svcSeconds(func(s *model.ServiceSignals) model.Value { return s.QueueOldestAge })},
	{"QUEUE-WAIT-p99", 14, svcSeconds(func(s *model.ServiceSignals) model.Value { return s.QueueWaitP99 })},
	{"QUEUE-WAIT-MEAN", 16, svcSeconds(func(s *model.ServiceSignals) model.Value { return s.QueueWaitMean })},
	{"SVC-p50", 15, svcSeconds(func(s *model.ServiceSignals) model.Value { return s.ServiceTimeP50 })},
	{"SVC-p99", 8, svcSeconds(func(s *model.ServiceSignals) model.Value { return s.ServiceTimeP99 })},
	{"OK-SVC-p50", 19, svcSeconds(func(s *model.ServiceSignals) model.Value { return s.SuccessServiceTimeP50 })},
	{"OK-SVC-p99", 17, svcSeconds(func(s *model.ServiceSignals) model.Value { return s.SuccessServiceTimeP99 })},
	{"ERR-SVC-p50", 20, svcSeconds(func(s *model.ServiceSignals) model.Value { return s.ErrorServiceTimeP50 })},
	{"ERR-SVC-p99", 18, svcSeconds(func(s *model.ServiceSignals) model.Value { return s.ErrorServiceTimeP99 })},
	{"2xx/s", 7, svcRate(func(s *model.ServiceSignals) model.Value { return s.Responses2xxPerS })},
	{"429/s", 12, svcRate(func(s *model.ServiceSignals) model.Value { return s.Responses429PerS })},
	{"503/s", 5, svcRate(func(s *model.ServiceSignals) model.Value { return s.Responses503PerS })},
	{"503-RETRY-AFTER/s", 6, svcRate(func(s *model.ServiceSignals) model.Value { return s.Responses503RetryAfterPerS })},
	{"5xx/s", 13, svcRate(celltext.Other5xx)},
	{"AFTER-CANCEL/s", 9, svcRate(func(s *model.ServiceSignals) model.Value { return s.WorkAfterCancelPerS })},
	{"CANCELLED/s", 11, svcRate(func(s *model.ServiceSignals) model.Value { return s.CancelledPerS })},
}

// emptyCell: a cell that tells nothing (absent or zero).
func emptyCell(v string) bool {
	v = strings.TrimSuffix(strings.TrimSpace(v), celltext.DerivedMark)
	return v == celltext.Absent || v == "0" || v == "-/-"
}

// writeServices prints the services table: aligned text fitted to width
// as the dependencies are (0: every column), or a markdown table under
// head when markdown is set.
func writeServices(w io.Writer, rep analysis.Report, head string, markdown bool, width int) error {
	if len(rep.Services) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%sServices\n\n", head)
	heads := make([]string, len(serviceColumns))
	rank := make([]int, len(serviceColumns))
	empty := make([]bool, len(serviceColumns))
	cells := make([][]string, len(rep.Services))
	for i := range rep.Services {
		cells[i] = make([]string, len(serviceColumns))
		for j, c := range serviceColumns {
			cells[i][j] = c.cell(&rep.Services[i])
		}
	}
	for j, c := range serviceColumns {
		heads[j], rank[j], empty[j] = c.head, c.rank, true
		for i := range cells {
			empty[j] = empty[j] && emptyCell(cells[i][j])
		}
	}
	if markdown {
		rule := make([]string, len(serviceColumns))
		for i := range rule {
			rule[i] = "---:"
		}
		rule[0], rule[1] = "---", "---"
		fmt.Fprintf(w, "| %s |\n|%s|\n", strings.Join(heads, " | "), strings.Join(rule, "|"))
		for _, row := range cells {
			for j := range row {
				row[j] = safetext.Markdown(row[j])
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
		return nil
	}
	keep, dropped := fitTable(heads, rank, empty, cells, width)
	return writeTable(w, heads, cells, keep, dropped, width)
}

// WriteAnalysis prints an analyze report as text (aligned columns),
// markdown (for a postmortem) or JSON (the schema of
// docs/analyze-json.md, analysis.Report.WriteJSON). Every label value and
// error text is sanitised; absent signals print as "-". The text table is
// fitted to width columns (0: every column, as --wide): its tables keep
// their columns in the dashboard's order (celltext.Column), columns no row
// has a value in going first, a line under each names what was left out,
// and every longer line is wrapped (wrapLine), so none is wider.
func WriteAnalysis(w io.Writer, rep analysis.Report, format string, width int) error {
	// The writers print a cell or a line at a time: unbuffered, a report
	// of an hour was some 32,000 write calls to a terminal or a pipe.
	b := bufio.NewWriterSize(w, writeBuffer)
	err := writeAnalysis(b, rep, format, width)
	if ferr := b.Flush(); err == nil {
		err = ferr
	}
	return err
}

// writeBuffer is WriteAnalysis's buffer: the writes it passes on are of
// this size, but the last.
const writeBuffer = 64 << 10

func writeAnalysis(w io.Writer, rep analysis.Report, format string, width int) error {
	switch format {
	case "json":
		return rep.WriteJSON(w)
	case "text":
		if width <= 0 {
			return writeReportText(w, rep, 0)
		}
		var b strings.Builder
		if err := writeReportText(&b, rep, width); err != nil {
			return err
		}
		return writeWrapped(w, b.String(), width)
	case "markdown", "md":
		return writeReportMarkdown(w, rep)
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(AnalysisFormats, ", "))
}

// writeWrapped writes text with every line wider than width broken at
// spaces (wrapLine).
func writeWrapped(w io.Writer, text string, width int) error {
	var b strings.Builder
	for l := range strings.Lines(text) {
		nl := strings.HasSuffix(l, "\n")
		b.WriteString(wrapLine(strings.TrimSuffix(l, "\n"), width))
		if nl {
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapLine breaks s at spaces into lines no wider than width: each line
// after the first starts with s's own indent and two more spaces; the
// spaces inside a line are kept (an aligned phase line stays aligned); a
// word wider than a whole line is cut where the line ends.
func wrapLine(s string, width int) string {
	if width <= 0 || runewidth.StringWidth(s) <= width {
		return s
	}
	indent := len(s) - len(strings.TrimLeft(s, " "))
	if indent+2 >= width/2 {
		indent = 0
	}
	cont := strings.Repeat(" ", indent+2)
	var b strings.Builder
	b.WriteString(s[:indent])
	col := indent
	start := true // nothing but the indent on this line yet
	sp := ""      // the spaces before the next word, written when it stays on the line
	for rest := s[indent:]; rest != ""; {
		word := rest
		if i := strings.IndexByte(rest, ' '); i >= 0 {
			word = rest[:i]
		}
		rest = rest[len(word):]
		ww := runewidth.StringWidth(word)
		if !start && col+len(sp)+ww > width { // break before the word
			b.WriteString("\n" + cont)
			col, sp = len(cont), ""
		}
		b.WriteString(sp)
		col += len(sp)
		for col+ww > width { // longer than a line: cut it
			head := runewidth.Truncate(word, width-col, "")
			if head == "" {
				break
			}
			b.WriteString(head + "\n" + cont)
			word = word[len(head):]
			ww = runewidth.StringWidth(word)
			col = len(cont)
		}
		b.WriteString(word)
		col += ww
		start = false
		gap := len(rest) - len(strings.TrimLeft(rest, " "))
		sp, rest = rest[:gap], rest[gap:]
	}
	return b.String()
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
	recorded := (time.Duration((rep.EndUnix-rep.StartUnix)*1e3) * time.Millisecond).String()
	at := func(s float64) string { return time.Unix(0, int64(s*1e9)).UTC().Format(time.RFC3339) }
	span := time.Duration(rep.WindowSeconds * float64(time.Second))
	switch rep.Span.Kind {
	case analysis.SpanIncident:
		return fmt.Sprintf("the incident: %s from %s to %s (recorded %s; --window 30s for the end)", celltext.WindowLabel(span),
			at(rep.Span.StartUnix), at(rep.Span.EndUnix), recorded)
	case analysis.SpanRecording:
		return fmt.Sprintf("the whole recording, no incident: %s from %s to %s", celltext.WindowLabel(span), at(rep.Span.StartUnix), at(rep.Span.EndUnix))
	}
	return fmt.Sprintf("window %s ending %s (recorded %s)", celltext.WindowLabel(span), at(rep.EndUnix), recorded)
}

// TargetError is a target's error as a line that names the target
// prints it: the error as its status holds it, which never names the
// target itself.
func TargetError(name, msg string) string {
	return msg
}

func targetLine(t model.TargetStatus) string {
	state := "up"
	if !t.Up {
		state = "DOWN"
	}
	line := fmt.Sprintf("%s %s %s (%d scrapes, %d failed, %d series%s)", cutLong(safetext.Terminal(t.Name)), state, cutLong(safetext.Terminal(t.URL)), t.Scrapes, t.Failures, t.Series, dialectsNote(t))
	if t.LastError != "" {
		line += ": " + cutLong(safetext.Terminal(TargetError(t.Name, t.LastError)))
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
	if c := t.MemoryCap; c != nil {
		line += " [" + celltext.MemoryCapText(c) + "]"
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
			if cells[i][j] != celltext.Absent && derivedHead(rep.Dependencies[i].Derived, c.head) {
				cells[i][j] += celltext.DerivedMark
			}
		}
	}
	keep, dropped := fitReportColumns(rep, cells, width)
	heads := make([]string, len(reportColumns))
	for j, c := range reportColumns {
		heads[j] = c.head
	}
	if err := writeTable(w, heads, cells, keep, dropped, width); err != nil {
		return err
	}
	writeDerivedNote(w, rep, celltext.DerivedMark, func(s string) string { return cutLong(safetext.Terminal(s)) })
	writeBudgets(w, rep, "", "")
	if err := writeServices(w, rep, "", false, width); err != nil {
		return err
	}
	writeStory(w, rep, "", "")
	return nil
}

// writeStory prints chains, findings and phases; head and item prefix the
// section titles and list items (markdown uses "### " and "- ").
func writeStory(w io.Writer, rep analysis.Report, head, item string) {
	esc := func(s string) string { return cutLong(safetext.Terminal(s)) }
	if head != "" {
		esc = func(s string) string { return safetext.Markdown(cutLong(safetext.Terminal(s))) }
	}
	if len(rep.Chains) > 0 {
		fmt.Fprintf(w, "\n%sChains\n\n", head)
		for _, c := range rep.Chains {
			fmt.Fprintf(w, "%s%s\n", item, esc(celltext.ChainLine(c)))
			if line, ok := cancelLine(c); ok {
				fmt.Fprintf(w, "%s  %s\n", item, esc(line))
			}
			for _, g := range c.Gaps {
				fmt.Fprintf(w, "%s  %s: %s -> %s sent %s/s, %s/s arrived (%+.1f/s)\n", item, g.Code,
					esc(g.From.Target), esc(g.To), celltext.AppendNum(nil, g.SentPerS), celltext.AppendNum(nil, g.ArrivedPerS), g.GapPerS)
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
				celltext.AppendAmp(nil, p.PeakAmplification), celltext.AppendRate(nil, p.GoodputPerS), celltext.AppendRate(nil, p.OriginalsPerS))
			if p.RecoveryS.OK() {
				line += fmt.Sprintf(", recovered %.0fs after the trigger ended", p.RecoveryS.V())
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
	if p == nil || !p.WorkAfterCancelPerS.OK() || len(c.Hops) == 0 {
		return "", false
	}
	last := c.Hops[len(c.Hops)-1]
	return fmt.Sprintf("%s -> %s: %s", last.Target, last.Dependency, celltext.GaveUpText(p)), true
}

func evidenceText(e analysis.Evidence) string {
	if len(e) == 0 {
		return ""
	}
	parts := make([]string, len(e))
	for i, n := range e {
		parts[i] = n.Name + "=" + string(celltext.AppendNum(nil, n.Value))
	}
	return " [" + strings.Join(parts, " ") + "]"
}

func writeReportMarkdown(w io.Writer, rep analysis.Report) error {
	fmt.Fprintf(w, "## retrytop analyze\n\n%s\n\n### Targets\n\n", reportSpan(rep))
	for _, t := range rep.Targets {
		fmt.Fprintf(w, "- %s\n", safetext.Markdown(targetLine(t)))
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
			cells[j] = safetext.Markdown(cells[j])
			if cells[j] != celltext.Absent && derivedHead(rep.Dependencies[i].Derived, c.head) {
				cells[j] += `\` + celltext.DerivedMark
			}
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	writeDerivedNote(w, rep, `\`+celltext.DerivedMark, func(s string) string { return safetext.Markdown(cutLong(safetext.Terminal(s))) })
	writeBudgets(w, rep, "### ", "- ")
	writeServices(w, rep, "### ", true, 0)
	writeStory(w, rep, "### ", "- ")
	_, err := fmt.Fprintln(w)
	return err
}

// writeBudgets lists the rows whose budget was rebuilt from counts
// (analysis.BudgetFor) after analyze's table; nothing when none was. An
// exported balance is the table's and JSON's budget_balance already.
func writeBudgets(w io.Writer, rep analysis.Report, head, item string) {
	esc := func(s string) string { return cutLong(safetext.Terminal(s)) }
	if head != "" {
		esc = func(s string) string { return safetext.Markdown(cutLong(safetext.Terminal(s))) }
	}
	started := false
	for i := range rep.Dependencies {
		d := &rep.Dependencies[i]
		b := d.Fates.Budget
		if b == nil || !b.Reconstructed {
			continue
		}
		if !started {
			fmt.Fprintf(w, "\n%sRetry budget left, reconstructed from the counts with the dialect's policy model (docs/whatif.md)\n\n", head)
			started = true
		}
		fmt.Fprintf(w, "%s%s -> %s: %s\n", item, esc(d.Target), esc(d.Dependency), esc(celltext.BudgetText(b)))
	}
}

// derivedHeads: the table heads a derived family (short name) feeds
// directly.
var derivedHeads = map[string][]string{
	"originals":          {"ORIG/s"},
	"attempts":           {"ATT/s"},
	"retries":            {"RETRY/s"},
	"rescued":            {"RESCUED/s"},
	"budget_denied":      {"BUDGET-DENIED/s"},
	"admission_rejected": {"ADMISSION-REJ/s"},
	"results":            {"EFF%"},
	"request_timeouts":   {"TIMEOUT/s"},
	"active_calls":       {"ACTIVE/LIMIT"},
	"concurrency_limit":  {"ACTIVE/LIMIT"},
}

// derivedHead reports whether the report column head shows a family d
// derives.
func derivedHead(d map[string]string, head string) bool {
	for f := range d {
		for _, h := range derivedHeads[f] {
			if h == head {
				return true
			}
		}
	}
	return false
}

// writeDerivedNote prints the footnote of the derived mark (mark as the
// format writes it): each derived family and its expression, once, after
// a blank line; nothing when nothing is derived, so reports without
// custom mappings are unchanged.
func writeDerivedNote(w io.Writer, rep analysis.Report, mark string, esc func(string) string) {
	seen := map[string]bool{}
	var lines []string
	for _, d := range rep.Dependencies {
		for f, expr := range d.Derived {
			l := f + " = " + expr
			if !seen[l] {
				seen[l] = true
				lines = append(lines, l)
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	sort.Strings(lines)
	fmt.Fprintln(w)
	for _, l := range lines {
		fmt.Fprintf(w, "%s derived, not read: %s\n", mark, esc(l))
	}
}

// dialectsNote says in a report's target line which dialects read the
// target (targets[].dialects, as JSON has it), or that none does.
func dialectsNote(t model.TargetStatus) string {
	ds := t.Dialects
	if ds == nil {
		ds = analysis.TargetDialects(t)
	}
	switch {
	case len(ds) > 0:
		return "; read by " + cutLong(safetext.Terminal(strings.Join(ds, "+")))
	case t.Up:
		return "; no dialect reads it"
	}
	return ""
}
