package whatif

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/policy"
)

// Report is a whatif run over one recording: the fit, the recording's own
// numbers and one row per policy (docs/whatif.md, "JSON").
type Report struct {
	File        string       `json:"file"`
	BinS        float64      `json:"bin_s"`
	Chain       []string     `json:"chain"`
	Assumptions []Assumption `json:"assumptions"`
	// Undetermined names the fitted parameters the recording cannot
	// determine (their assumptions' confidence is "undetermined"): the
	// predictions rest on a bound for them.
	Undetermined []string `json:"undetermined"`
	// Recording is the recording's own numbers, by the definitions the
	// model's are computed with.
	Recording Summary `json:"recording"`
	// Policies has the recorded policy replayed by the model first.
	Policies []PolicyResult `json:"policies"`
	// Curve is the recorded policy checked over every failure fraction
	// with the incident's point (null when a hop's model has no check).
	Curve *Curve `json:"policy_curve"`
}

// PolicyResult is one policy's run.
type PolicyResult struct {
	// Policy is the spec as given ("recorded" for the fit).
	Policy string `json:"policy"`
	// Model is the policy model it ran (recorded, custom, envoy, ...).
	Model string `json:"model"`
	Summary
	// Fates counts the provider-calling hop's operations by how they
	// ended: success, or why the last failure was not retried.
	Fates map[string]int64 `json:"fates"`
}

// RecordedLabel names the first row in text and markdown.
const RecordedLabel = "recorded (as recorded, replayed by the model)"

// Build runs every spec on the fitted model. The recorded policy always
// runs, first: it says how far to trust the rest.
func Build(file string, f Fitted, specs []policy.Spec) (Report, error) {
	rep := Report{File: file, BinS: f.Model.Bin.Seconds(), Chain: f.Chain, Assumptions: f.Assumptions, Recording: Summarize(f.Recording),
		Undetermined: []string{}, Curve: curveOf(f)}
	for _, a := range f.Assumptions {
		if a.Confidence == ConfidenceUndetermined {
			rep.Undetermined = append(rep.Undetermined, a.What)
		}
	}
	ordered := []policy.Spec{{Name: "recorded", Text: "recorded"}}
	for _, s := range specs {
		if s.Text != "recorded" {
			ordered = append(ordered, s)
		}
	}
	for _, s := range ordered {
		r, err := Run(f.Model, &s)
		if err != nil {
			return rep, fmt.Errorf("policy %q: %w", s.Text, err)
		}
		rep.Policies = append(rep.Policies, PolicyResult{Policy: s.Text, Model: s.Name, Summary: Summarize(FromResult(f.Model, r)), Fates: r.Fates})
	}
	return rep, nil
}

// Formats are the output formats of Write.
var Formats = []string{"text", "markdown", "json"}

// Write prints rep as text, markdown or json.
func Write(w io.Writer, rep Report, format string) error {
	switch format {
	case "json":
		// Target and file names come from the recording: no character
		// that hides or reorders text reaches a terminal raw.
		return safetext.WriteJSON(w, rep)
	case "markdown":
		return writeMarkdown(w, rep)
	case "text", "":
		return writeText(w, rep)
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// clean keeps untrusted text (file and target names, specs) from reaching
// a terminal as control sequences.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, s)
}

func num(p *float64, format string) string {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return "-"
	}
	return fmt.Sprintf(format, *p)
}

func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	v := *p * 100
	return num(&v, "%.1f%%")
}

func secs(p *float64) string {
	if p == nil {
		return "-"
	}
	return num(p, "%.1fs")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

type row struct {
	label string
	s     Summary
	fates map[string]int64
}

func (rep Report) rows() []row {
	out := []row{{label: "recording (measured)", s: rep.Recording}}
	for i, p := range rep.Policies {
		l := p.Policy
		if i == 0 && p.Policy == "recorded" {
			l = RecordedLabel
		}
		out = append(out, row{label: l, s: p.Summary, fates: p.Fates})
	}
	return out
}

func (r row) cells() []string {
	return []string{clean(r.label), pct(r.s.SuccessRatio), num(r.s.GoodputPerS, "%.1f"), num(r.s.PeakAmplification, "%.2fx"),
		num(r.s.MeanAmplification, "%.2fx"), num(r.s.PeakProviderLoad, "%.2f"), secs(r.s.RecoveryS), yesNo(r.s.Metastable)}
}

var headers = []string{"policy", "success", "goodput/s", "peak amp", "mean amp", "peak load", "recovery", "metastable"}

func fates(m map[string]int64) string {
	if m == nil {
		return "-"
	}
	keys := []string{"success", string(policy.ReasonMaxAttempts), string(policy.ReasonBudget), string(policy.ReasonLimiter),
		string(policy.ReasonDeadline), string(policy.ReasonNonRetry), string(policy.ReasonBreaker)}
	var parts []string
	for _, k := range keys {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// spark draws per-bin success ratios, '-' where unknown.
func spark(tl []Point) string {
	const bars = "▁▂▃▄▅▆▇█"
	rs := []rune(bars)
	var b strings.Builder
	for _, p := range tl {
		if p.SuccessRatio == nil {
			b.WriteByte('-')
			continue
		}
		i := int(math.Round(*p.SuccessRatio * float64(len(rs)-1)))
		b.WriteRune(rs[min(max(i, 0), len(rs)-1)])
	}
	return b.String()
}

func writeText(w io.Writer, rep Report) error {
	fmt.Fprintf(w, "whatif %s: %s, %d bins of %v\n\n", clean(rep.File), clean(strings.Join(rep.Chain, " -> ")), len(rep.Recording.Timeline),
		time.Duration(rep.BinS*float64(time.Second)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	rows := rep.rows()
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.cells(), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nsuccess per bin (%s = 0 %% .. 100 %%, - unknown):\n", "▁..█")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", clean(r.label), spark(r.s.Timeline))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nhow the provider-calling hop's operations ended:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows[1:] {
		fmt.Fprintf(tw, "%s\t%s\n", clean(r.label), fates(r.fates))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Undetermined) > 0 {
		fmt.Fprintf(w, "\nthe recording cannot determine: %s; the predictions rest on a bound for it (below)\n", clean(strings.Join(rep.Undetermined, "; ")))
	}
	fmt.Fprintln(w, "\nthe fit (every assumption, how it is known and the signal it came from):")
	for _, a := range rep.Assumptions {
		fmt.Fprintf(w, "  %s: %s%s  [%s]\n", clean(a.What), clean(a.Value), confidence(a), clean(a.Source))
	}
	return nil
}

func mdCell(s string) string { return strings.ReplaceAll(clean(s), "|", `\|`) }

func writeMarkdown(w io.Writer, rep Report) error {
	fmt.Fprintf(w, "## whatif %s\n\nChain %s, %d bins of %v.\n\n", mdCell(rep.File), mdCell(strings.Join(rep.Chain, " → ")),
		len(rep.Recording.Timeline), time.Duration(rep.BinS*float64(time.Second)))
	fmt.Fprintf(w, "| %s | success per bin |\n|%s---|\n", strings.Join(headers, " | "), strings.Repeat("---|", len(headers)))
	for _, r := range rep.rows() {
		c := r.cells()
		for i := range c {
			c[i] = mdCell(c[i])
		}
		fmt.Fprintf(w, "| %s | `%s` |\n", strings.Join(c, " | "), spark(r.s.Timeline))
	}
	fmt.Fprint(w, "\n### How the provider-calling hop's operations ended\n\n")
	for _, p := range rep.Policies {
		fmt.Fprintf(w, "- `%s`: %s\n", mdCell(p.Policy), fates(p.Fates))
	}
	fmt.Fprint(w, "\n### The fit\n\n")
	if len(rep.Undetermined) > 0 {
		fmt.Fprintf(w, "The recording cannot determine: %s; the predictions rest on a bound for it.\n\n", mdCell(strings.Join(rep.Undetermined, "; ")))
	}
	for _, a := range rep.Assumptions {
		fmt.Fprintf(w, "- **%s**: %s%s (%s)\n", mdCell(a.What), mdCell(a.Value), mdCell(confidence(a)), mdCell(a.Source))
	}
	return nil
}

// confidence is " (measured)" and the like, "" for a note without one or
// whose value says it already ("50ms (assumed: ...)").
func confidence(a Assumption) string {
	if a.Confidence == "" || strings.Contains(a.Value, "("+a.Confidence) {
		return ""
	}
	return " (" + a.Confidence + ")"
}
