package ui

import (
	"strings"

	"github.com/retrytop/retrytop/internal/celltext"
)

// derivedMark is celltext.DerivedMark, after a value a custom mapping
// derives from others rather than reads.
const derivedMark = celltext.DerivedMark

// derivedColumns: the dashboard's columns a derived family (short name)
// feeds directly.
var derivedColumns = map[string][]colID{
	"originals":          {colOrig},
	"attempts":           {colAtt},
	"retries":            {colRetry},
	"rescued":            {colRescued},
	"budget_denied":      {colBudget},
	"admission_rejected": {colAdmission},
	"results":            {colEff},
	"request_timeouts":   {colTimeouts},
	"active_calls":       {colActive},
	"concurrency_limit":  {colActive},
}

// derivedCols returns the dashboard columns fed by what the dialects in
// dialect ("a+b") derive, per opts.Derived.
func derivedCols(derived map[string]map[string]string, dialect string) (cols [numCols]bool, any bool) {
	if len(derived) == 0 || dialect == "" {
		return cols, false
	}
	for _, d := range strings.Split(dialect, "+") {
		for f := range derived[d] {
			for _, c := range derivedColumns[f] {
				cols[c], any = true, true
			}
		}
	}
	return cols, any
}
