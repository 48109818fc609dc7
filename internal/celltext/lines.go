package celltext

import (
	"fmt"
	"strings"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// BudgetText tells a retry budget in one line (analyze's text and
// markdown, the detail pane): balance of capacity, where retries stop, the
// drain and the time to exhaustion, and the model it was read with. An
// unknown figure is "-"; "not draining" is a known drain of 0 or less.
func BudgetText(b *analysis.Budget) string {
	var d []byte
	d = AppendGauge(d, b.Balance)
	d = append(d, " of "...)
	d = AppendGauge(d, b.Capacity)
	if b.Unit != "" {
		d = append(d, ' ')
		d = append(d, b.Unit...)
	}
	if b.StopAt.OK() {
		d = append(d, ", retries stop at "...)
		d = AppendGauge(d, b.StopAt)
	}
	d = append(d, ", drain "...)
	d = AppendRate(d, b.DrainPerS)
	d = append(d, "/s, "...)
	switch tte := b.TimeToExhaustionS; {
	case tte.OK() && tte.V() == 0:
		d = append(d, "exhausted now"...)
	case tte.OK():
		d = append(d, "exhausted in "...)
		d = AppendSeconds(d, tte, "us")
	case b.DrainPerS.OK() && b.DrainPerS.V() <= 0 && b.Balance.OK():
		d = append(d, "not draining"...)
	default:
		d = append(d, "exhausted in "+Absent...)
	}
	d = append(d, " ("...)
	d = append(d, b.Model...)
	if b.Reconstructed {
		d = append(d, " model, reconstructed"...)
	}
	return string(append(d, ')'))
}

// GaveUpText is "caller gave up on N/s, provider still finished M/s".
func GaveUpText(p *analysis.ChainProvider) string {
	perS := func(v model.Value) string {
		if !v.OK() {
			return Absent
		}
		return string(AppendNum(nil, v.V())) + "/s"
	}
	return "caller gave up on " + perS(p.CallerTimeoutsPerS) + ", provider still finished " + perS(p.WorkAfterCancelPerS)
}

// ChainLine renders a chain as hops with their amplification.
func ChainLine(c analysis.ChainResult) string {
	var b strings.Builder
	for i, h := range c.Hops {
		if i == 0 {
			b.WriteString(h.Target)
		}
		fmt.Fprintf(&b, " -(%s)-> %s", AppendAmp(nil, h.Amplification), h.Dependency)
	}
	fmt.Fprintf(&b, "  end-to-end %s, worst case %s", AppendAmp(nil, c.EndToEndAmplification), AppendAmp(nil, c.WorstCaseAmplification))
	return b.String()
}

// Other5xx is the 5xx/s not counted under 503: the other-5xx figure, or
// for an emitter that counts responses only by class (HAProxy, Envoy) all
// of its 5xx, its 503 being unknown.
func Other5xx(s *model.ServiceSignals) model.Value {
	if s.ResponsesOther5xxPerS.OK() || s.Responses503PerS.OK() {
		return s.ResponsesOther5xxPerS
	}
	return s.Responses5xxPerS
}
