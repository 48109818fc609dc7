package ui

import "github.com/retrytop/retrytop/analysis"

// adviceFor is what to do about a finding, in one line for the FINDINGS
// section and the findings pane (analysis.AdviceFor: the one list every
// view shares). An unknown code has none ("").
func adviceFor(code string) string { return analysis.AdviceFor(code).Short }
