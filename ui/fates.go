package ui

import (
	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// fateLabelW fits the longest fate's name ("failed, attempts used").
const fateLabelW = 22

// fateLine is one way an original ended, as the FATES section lists it.
type fateLine struct {
	name string
	v    model.Value
	sp   span
}

// fateLines are the row's fates (analysis.Fates) in the order a reader
// asks: did it work, did retrying help, and if not, why was it not
// retried.
func (p *painter) fateLines(row *model.Signals) []fateLine {
	st := &p.c.st
	f := analysis.Fates(*row)
	return []fateLine{
		{"first try", f.SucceededFirstTry, st.outcome[outSuccess]},
		{"after retry", f.SucceededAfterRetry, st.outcome[outRescued]},
		{"failed, attempts used", f.FailedAfterAttempts, st.outcome[outProvider]},
		{"not retried: budget", f.NotRetriedBudget, st.outcome[outBudget]},
		{"not retried: limiter", f.NotRetriedLimiter, st.outcome[outAdmission]},
		{"not retried: deadline", f.NotRetriedDeadline, st.outcome[outDeadline]},
		{"not retried: breaker", f.NotRetriedBreaker, st.outcome[outAdmission]},
		{"not retryable", f.NotRetriedNonRetry, st.outcome[outProvider]},
		{"unsafe to repeat", f.NotRetriedUnsafe, st.warn},
		{"cancelled", f.Cancelled, st.dim},
	}
}

// hasFates reports whether the row tells any fate: a row without final
// results or rescues (a proxy that exports only attempts) skips the
// section rather than show ten dashes.
func hasFates(lines []fateLine) bool {
	for _, fl := range lines {
		if fl.v.OK() {
			return true
		}
	}
	return false
}

// fatesSection: how the row's originals ended over the window, per
// second, each with a bar of its share of the fates told. A fate the
// source cannot tell is "-" with no bar, never 0.
func (p *painter) fatesSection(dst []line, row *model.Signals, width int) []line {
	lines := p.fateLines(row)
	if !hasFates(lines) {
		return dst
	}
	l, st, g := &p.l, &p.c.st, p.c.g
	dst = append(dst, line{})
	dst = p.title(dst, "FATES", "how originals ended, per second · window "+windowLabel(p.c.window), width)
	total := 0.0
	for _, fl := range lines {
		if v, ok := fl.v.Get(); ok && v > 0 {
			total += v
		}
	}
	barW := min(max(width-fateLabelW-valueW-10, 4), 40)
	for _, fl := range lines {
		l.cell(fl.name, fateLabelW, false, st.text)
		l.num = appendRate(l.num[:0], fl.v)
		l.cellBytes(l.num, valueW-1, true, rateSpan(st, fl.v, fl.sp))
		if v, ok := fl.v.Get(); ok && total > 0 {
			l.pad(2)
			l.gauge(v, total, barW, g, fl.sp, st.dim)
			l.pad(1)
			l.num = strconvPct(l.num[:0], v/total)
			l.bytes(l.num, st.dim)
		}
		dst = append(dst, l.line())
	}
	return dst
}
