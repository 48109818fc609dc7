package policyreport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/policy"
)

// Formats are the output formats of Write.
var Formats = []string{"text", "markdown", "json"}

// Options are policy check's inputs: the chain's arguments, caller first
// (each a --policy list, so one argument may hold several layers), the
// conditions and the format.
type Options struct {
	Args   []string
	Check  policy.CheckOptions
	Format string
}

// UsageError is an argument or option the check cannot take.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Run parses the chain, checks it and writes the result to w.
func Run(w io.Writer, o Options) error {
	if !validFormat(o.Format) {
		return &UsageError{fmt.Errorf("unknown --format %q (want one of %s)", o.Format, strings.Join(Formats, ", "))}
	}
	if err := o.validate(); err != nil {
		return &UsageError{err}
	}
	specs, err := Parse(o.Args)
	if err != nil {
		return &UsageError{err}
	}
	c, err := policy.CheckChain(specs, o.Check)
	if err != nil {
		return &UsageError{err}
	}
	return Write(w, c, o.Format)
}

func (o Options) validate() error {
	c := o.Check
	switch {
	case c.Rate <= 0 || math.IsInf(c.Rate, 0) || math.IsNaN(c.Rate):
		return fmt.Errorf("--rate %g: want originals per second above 0", c.Rate)
	case c.Latency < 0 || c.FailureLatency < 0:
		return errors.New("--latency and --failure-latency must not be negative")
	case c.Steps < 1 || c.Steps > 1000:
		return fmt.Errorf("%d steps of p: want between 1 and 1000 (--step between 0.1 and 100)", c.Steps)
	case c.MaxAmplification != 0 && !(c.MaxAmplification > 1 && c.MaxAmplification < 1e6):
		return fmt.Errorf("--max-amplification %g: want a target above 1", c.MaxAmplification)
	}
	return nil
}

func validFormat(f string) bool {
	for _, g := range Formats {
		if f == g {
			return true
		}
	}
	return f == ""
}

// Parse reads the chain's arguments, caller first; an error names the
// argument and the column.
func Parse(args []string) ([]policy.Spec, error) {
	if len(args) == 0 {
		return nil, errors.New("policy check wants at least one policy, e.g. bounded or grpc:attempts=3,envoy")
	}
	var out []policy.Spec
	for i, a := range args {
		specs, err := policy.Parse(a)
		if err == nil {
			for _, s := range specs {
				if _, err = policy.New(s, policy.Base{MaxAttempts: 3}, func(int64) int64 { return 0 }); err != nil {
					break
				}
			}
		}
		if err != nil {
			var pe *policy.PosError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("argument %d (%s) at column %d: %s", i+1, safetext.Terminal(a), pe.Pos+1, pe.Msg)
			}
			return nil, fmt.Errorf("argument %d (%s): %w", i+1, safetext.Terminal(a), err)
		}
		out = append(out, specs...)
	}
	return out, nil
}

// Write prints c as text, markdown or json.
func Write(w io.Writer, c *policy.Check, format string) error {
	switch format {
	case "json":
		return safetext.WriteJSON(w, toJSON(c))
	case "markdown":
		return writeMarkdown(w, c)
	case "text", "":
		return writeText(w, c)
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// report is the JSON document (docs/whatif.md).
type report struct {
	Chain            []layerJSON     `json:"chain"`
	RatePerS         float64         `json:"rate_per_s"`
	LatencyS         float64         `json:"latency_s"`
	FailureLatencyS  float64         `json:"failure_latency_s"`
	Failures         string          `json:"failures"`
	Points           []pointJSON     `json:"points"`
	MaxAmplification *float64        `json:"max_amplification"`
	Settings         [][]settingJSON `json:"settings"`
}

type layerJSON struct {
	Spec        string `json:"spec"`
	Model       string `json:"model"`
	MaxAttempts int    `json:"max_attempts"`
	Budget      string `json:"budget"`
	Note        string `json:"note,omitempty"`
}

type pointJSON struct {
	P      float64     `json:"p"`
	Steady amps        `json:"steady"`
	Worst  amps        `json:"worst"`
	Lasts  []*lastJSON `json:"budget_lasts"`
}

// amps are attempts per original at each layer and their product, the
// provider's load multiplier; null when unknown.
type amps struct {
	Layers       []*float64 `json:"layers"`
	ProviderLoad *float64   `json:"provider_load"`
}

type lastJSON struct {
	Originals float64 `json:"originals"`
	Seconds   float64 `json:"seconds"`
}

type settingJSON struct {
	Key     string   `json:"key"`
	Current float64  `json:"current"`
	Bound   string   `json:"bound"`
	Value   *float64 `json:"value"`
}

func known(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func ampsOf(layers []float64, load float64) amps {
	a := amps{ProviderLoad: known(load)}
	for _, x := range layers {
		a.Layers = append(a.Layers, known(x))
	}
	return a
}

func toJSON(c *policy.Check) report {
	o := c.Options
	r := report{RatePerS: o.Rate, LatencyS: o.Latency.Seconds(), FailureLatencyS: o.FailureLatency.Seconds(), Failures: failures(o)}
	for _, l := range c.Layers {
		r.Chain = append(r.Chain, layerJSON{Spec: l.Spec, Model: l.Model, MaxAttempts: l.MaxAttempts, Budget: l.Budget, Note: l.Note})
	}
	for _, pt := range c.Points {
		pj := pointJSON{P: pt.P, Steady: ampsOf(pt.Steady, pt.SteadyLoad), Worst: ampsOf(pt.Worst, pt.WorstLoad)}
		for _, l := range pt.Lasts {
			if l == nil {
				pj.Lasts = append(pj.Lasts, nil)
				continue
			}
			pj.Lasts = append(pj.Lasts, &lastJSON{Originals: l.Originals, Seconds: l.Seconds})
		}
		r.Points = append(r.Points, pj)
	}
	if o.MaxAmplification > 1 {
		r.MaxAmplification = known(o.MaxAmplification)
		for _, ss := range c.Settings {
			var row []settingJSON
			for _, s := range ss {
				sj := settingJSON{Key: s.Key, Current: s.Current, Bound: s.Bound}
				if s.Bound == "at_most" || s.Bound == "at_least" {
					sj.Value = known(s.Value)
				}
				row = append(row, sj)
			}
			r.Settings = append(r.Settings, row)
		}
	}
	return r
}

func failures(o policy.CheckOptions) string {
	if o.Timeouts {
		return "timeout"
	}
	return "error"
}

func amp(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}

func load(x float64) string {
	if s := amp(x); s != "-" {
		return s + "x"
	}
	return "-"
}

func lasts(l *policy.Lasts) string {
	if l == nil {
		return "-"
	}
	return fmt.Sprintf("%s (%.0f)", seconds(l.Seconds), l.Originals)
}

func seconds(s float64) string {
	switch {
	case s < 1:
		return fmt.Sprintf("%.0fms", s*1000)
	case s < 120:
		return fmt.Sprintf("%.1fs", s)
	}
	return fmt.Sprintf("%.0fm", s/60)
}

// setting says a layer's bound in words.
func setting(s policy.Setting) string {
	v := func(x float64) string {
		if s.Integer {
			return fmt.Sprintf("%.0f", x)
		}
		return fmt.Sprintf("%.3g", x)
	}
	now := "now " + v(s.Current)
	switch s.Bound {
	case "at_most":
		return fmt.Sprintf("%s at most %s (%s)", s.Key, v(s.Value), now)
	case "at_least":
		return fmt.Sprintf("%s at least %s (%s)", s.Key, v(s.Value), now)
	case "any":
		return fmt.Sprintf("%s: any value in [%s, %s] (%s)", s.Key, v(s.Lo), v(s.Hi), now)
	}
	return fmt.Sprintf("%s: no value in [%s, %s] (%s)", s.Key, v(s.Lo), v(s.Hi), now)
}

// rows are the table's cells, one row per p; mark quotes text.
func rows(c *policy.Check) [][]string {
	var out [][]string
	for _, pt := range c.Points {
		r := []string{fmt.Sprintf("%.0f%%", 100*pt.P)}
		for _, x := range pt.Steady {
			r = append(r, amp(x))
		}
		r = append(r, load(pt.SteadyLoad))
		for _, x := range pt.Worst {
			r = append(r, amp(x))
		}
		r = append(r, load(pt.WorstLoad))
		for _, l := range pt.Lasts {
			r = append(r, lasts(l))
		}
		out = append(out, r)
	}
	return out
}

func header(c *policy.Check) []string {
	h := []string{"p"}
	n := len(c.Layers)
	for _, k := range []string{"steady", "worst"} {
		for i := range n {
			h = append(h, fmt.Sprintf("%s %d", k, i+1))
		}
		h = append(h, k+" load")
	}
	for i := range n {
		h = append(h, fmt.Sprintf("lasts %d", i+1))
	}
	return h
}

func conditions(c *policy.Check) string {
	o := c.Options
	return fmt.Sprintf("%g originals/s, a success takes %v, a failure %v, failures are %ss", o.Rate, o.Latency, o.FailureLatency, failures(o))
}

func writeText(w io.Writer, c *policy.Check) error {
	var specs []string
	for _, l := range c.Layers {
		specs = append(specs, safetext.Terminal(l.Spec))
	}
	fmt.Fprintf(w, "policy check: %s\n%s\n\n", strings.Join(specs, " -> "), conditions(c))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "layer\tpolicy\tmodel\tattempts\tretries bounded by")
	for i, l := range c.Layers {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", i+1, safetext.Terminal(l.Spec), l.Model, l.MaxAttempts, l.Budget)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, l := range c.Layers {
		if l.Note != "" {
			fmt.Fprintf(w, "  %d: %s\n", i+1, l.Note)
		}
	}
	fmt.Fprintln(w, "\nattempts per original at each layer and at the provider (load), and how long a full budget lasts (originals):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(header(c), "\t")+"\t")
	for _, r := range rows(c) {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, plot(c))
	writeSettingsText(w, c, func(s string) string { return safetext.Terminal(s) })
	return nil
}

func writeSettingsText(w io.Writer, c *policy.Check, quote func(string) string) {
	if c.Options.MaxAmplification <= 1 {
		return
	}
	fmt.Fprintf(w, "\nto keep the steady state at or under %.2fx at every p (each layer's setting alone, the others as given):\n", c.Options.MaxAmplification)
	for i, ss := range c.Settings {
		var parts []string
		for _, s := range ss {
			parts = append(parts, quote(setting(s)))
		}
		if len(parts) == 0 {
			parts = []string{"nothing to set"}
		}
		fmt.Fprintf(w, "  %d %s: %s\n", i+1, quote(c.Layers[i].Spec), strings.Join(parts, "; "))
	}
}

func writeMarkdown(w io.Writer, c *policy.Check) error {
	var specs []string
	for _, l := range c.Layers {
		specs = append(specs, "`"+strings.ReplaceAll(safetext.Terminal(l.Spec), "`", "'")+"`")
	}
	fmt.Fprintf(w, "## policy check: %s\n\n%s\n\n", strings.Join(specs, " → "), conditions(c))
	fmt.Fprintln(w, "| layer | policy | model | attempts | retries bounded by | note |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for i, l := range c.Layers {
		fmt.Fprintf(w, "| %d | %s | %s | %d | %s | %s |\n", i+1, safetext.Markdown(l.Spec), l.Model, l.MaxAttempts, safetext.Markdown(l.Budget), safetext.Markdown(l.Note))
	}
	fmt.Fprintln(w, "\nAttempts per original at each layer and at the provider (load), and how long a full budget lasts (originals):")
	fmt.Fprintln(w)
	h := header(c)
	fmt.Fprintln(w, "| "+strings.Join(h, " | ")+" |")
	fmt.Fprintln(w, "|"+strings.Repeat("---:|", len(h)))
	for _, r := range rows(c) {
		fmt.Fprintln(w, "| "+strings.Join(r, " | ")+" |")
	}
	fmt.Fprintf(w, "\n```\n%s```\n", plot(c))
	writeSettingsText(w, c, safetext.Markdown)
	return nil
}

// plot draws the provider's load against p: '*' the steady state, 'o'
// the worst case, '#' both.
func plot(c *policy.Check) string {
	const height = 8
	lo, top := 1.0, 1.0
	for _, pt := range c.Points {
		top = max(top, pt.WorstLoad)
		if !math.IsNaN(pt.SteadyLoad) {
			top, lo = max(top, pt.SteadyLoad), min(lo, pt.SteadyLoad)
		}
	}
	span := max(top-lo, 1e-9)
	row := func(x float64) int {
		if math.IsNaN(x) {
			return -1
		}
		return int(math.Round((x - lo) / span * (height - 1)))
	}
	grid := make([][]byte, height)
	for i := range grid {
		grid[i] = bytes.Repeat([]byte{' '}, len(c.Points)*2)
	}
	for j, pt := range c.Points {
		ws, ss := row(pt.WorstLoad), row(pt.SteadyLoad)
		grid[ws][2*j] = 'o'
		if ss >= 0 {
			if ss == ws {
				grid[ss][2*j] = '#'
			} else {
				grid[ss][2*j] = '*'
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "provider load (attempts per original): * steady, o worst, # both\n")
	for i := height - 1; i >= 0; i-- {
		label := ""
		if i == height-1 || i == 0 || i == (height-1)/2 {
			label = fmt.Sprintf("%.2fx", lo+span*float64(i)/(height-1))
		}
		fmt.Fprintf(&b, "%7s |%s\n", label, strings.TrimRight(string(grid[i]), " "))
	}
	fmt.Fprintf(&b, "%7s +%s\n", "", strings.Repeat("-", len(c.Points)*2))
	axis := []byte(strings.Repeat(" ", len(c.Points)*2+4))
	copy(axis, "0%")
	mid := len(c.Points) / 2 * 2
	copy(axis[mid:], "50%")
	copy(axis[(len(c.Points)-1)*2:], "100%")
	fmt.Fprintf(&b, "%7s  %s p\n", "", strings.TrimRight(string(axis), " "))
	return b.String()
}
