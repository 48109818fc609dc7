package ui

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// derivedMark follows a value a custom mapping derives from others
// rather than reads (docs/dialects.md, "Derived signals"), in the
// dashboard's rows and analyze's tables; a footnote says how.
const derivedMark = "*"

// derivedColumns: the columns a derived family (short name) feeds
// directly, as analyze's table heads and the dashboard's columns.
var derivedColumns = map[string]struct {
	heads []string
	cols  []colID
}{
	"originals":          {[]string{"ORIG/s"}, []colID{colOrig}},
	"attempts":           {[]string{"ATT/s"}, []colID{colAtt}},
	"retries":            {[]string{"RETRY/s"}, []colID{colRetry}},
	"rescued":            {[]string{"RESCUED/s"}, []colID{colRescued}},
	"budget_denied":      {[]string{"BUDGET-DENIED/s"}, []colID{colBudget}},
	"admission_rejected": {[]string{"ADMISSION-REJ/s"}, []colID{colAdmission}},
	"results":            {[]string{"EFF%"}, []colID{colEff}},
	"request_timeouts":   {[]string{"TIMEOUT/s"}, []colID{colTimeouts}},
	"active_calls":       {[]string{"ACTIVE/LIMIT"}, []colID{colActive}},
	"concurrency_limit":  {[]string{"ACTIVE/LIMIT"}, []colID{colActive}},
}

// derivedHead reports whether the report column head shows a family d
// derives.
func derivedHead(d map[string]string, head string) bool {
	for f := range d {
		for _, h := range derivedColumns[f].heads {
			if h == head {
				return true
			}
		}
	}
	return false
}

// derivedCols returns the dashboard columns fed by what the dialects in
// dialect ("a+b") derive, per opts.Derived.
func derivedCols(derived map[string]map[string]string, dialect string) (cols [numCols]bool, any bool) {
	if len(derived) == 0 || dialect == "" {
		return cols, false
	}
	for _, d := range strings.Split(dialect, "+") {
		for f := range derived[d] {
			for _, c := range derivedColumns[f].cols {
				cols[c], any = true, true
			}
		}
	}
	return cols, any
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
		fmt.Fprintf(w, "%s derived by a custom mapping, not read: %s\n", mark, esc(l))
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
		return "; read by " + cutLong(Sanitize(strings.Join(ds, "+")))
	case t.Up:
		return "; no dialect reads it"
	}
	return ""
}
