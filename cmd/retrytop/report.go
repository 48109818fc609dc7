package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/record"
	"github.com/retrytop/retrytop/report"
	"github.com/retrytop/retrytop/whatif"
)

// Formats the report package writes; analyze accepts "html" too.
// formatStory is the report command's markdown (the story with
// sparklines), kept apart from analyze's markdown tables.
const (
	formatHTML  = "html"
	formatStory = "report-markdown"
)

// reportFormat reports whether analyze's writer is the report package's.
func reportFormat(format string) bool { return format == formatHTML || format == formatStory }

// Annotations the report command hands the analyze command it runs.
const (
	annotReproduce = "retrytop.reproduce"
	annotArgs      = "retrytop.args"
	// annotWhatif carries `retrytop whatif --format json` on the same
	// recording, for the what-if section.
	annotWhatif = "retrytop.whatif"
)

// writeAnalysis prints an analyze report in format through package
// report: the postmortem page (html), the report command's markdown, or
// analyze's text (fitted to textWidth), markdown or JSON.
func writeAnalysis(cmd *cobra.Command, rep analysis.Report, format string) error {
	switch format {
	case formatHTML:
		return report.WriteHTML(cmd.OutOrStdout(), rep, reportMeta(cmd))
	case formatStory:
		return report.WriteMarkdown(cmd.OutOrStdout(), rep, reportMeta(cmd))
	}
	return report.WriteAnalysis(cmd.OutOrStdout(), rep, format, textWidth(cmd))
}

// textWidth is the width analyze's text table fits: none with --wide,
// the terminal's when standard output is one, else $COLUMNS, else none
// (a file or a pipe gets every column).
func textWidth(cmd *cobra.Command) int {
	if wide, err := cmd.Flags().GetBool("wide"); err == nil && wide {
		return 0
	}
	if f, ok := cmd.OutOrStdout().(*os.File); ok && isTerminal(f) {
		if w, _, err := term.GetSize(f.Fd()); err == nil && w > 0 {
			return w
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

// reportMeta says where the report came from and how to make it again.
func reportMeta(cmd *cobra.Command) report.Meta {
	args := cmd.Flags().Args()
	if a, ok := cmd.Annotations[annotArgs]; ok {
		args = strings.Split(a, "\x00")
		if a == "" {
			args = nil
		}
	}
	command, ok := cmd.Annotations[annotReproduce]
	if !ok {
		command = commandLine(cmd, args)
	}
	ver, rev, _ := buildInfo()
	if len(rev) > 12 {
		rev = rev[:12]
	}
	meta := report.Meta{Source: sourceText(cmd.Flags(), args), Command: command, Version: ver + " (" + rev + ")"}
	if js, ok := cmd.Annotations[annotWhatif]; ok {
		var w whatif.Report
		if err := json.Unmarshal([]byte(js), &w); err == nil {
			meta.WhatIf = &w
		} else {
			fmt.Fprintf(cmd.ErrOrStderr(), "report: no what-if section: %v\n", err)
		}
	}
	return meta
}

// sourceText names what was read, without credentials.
func sourceText(fs *pflag.FlagSet, args []string) string {
	if u, _ := fs.GetString("prometheus"); u != "" {
		s := "Prometheus API " + stripUserinfo(u)
		if sel, _ := fs.GetString("selector"); sel != "" {
			s += " " + sel
		}
		return s
	}
	clean := make([]string, len(args))
	for i, a := range args {
		clean[i] = stripUserinfo(a)
	}
	if recordingArgs(args) {
		return "recording " + strings.Join(clean, ", ")
	}
	var parts []string
	if len(clean) > 0 {
		parts = append(parts, strings.Join(clean, ", "))
	}
	for _, name := range []string{"config", "chain", "file-sd", "prometheus-config", "job"} {
		if fl := fs.Lookup(name); fl != nil && fl.Changed {
			parts = append(parts, "--"+name+" "+flagValue(fl))
		}
	}
	return "live scrape of " + strings.Join(parts, " ")
}

func flagValue(fl *pflag.Flag) string {
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		return strings.Join(sv.GetSlice(), ",")
	}
	return fl.Value.String()
}

// stripUserinfo removes credentials from every URL in s (a target is
// URL or name=URL, a chain a list of them): the page is shared.
func stripUserinfo(s string) string {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		prefix, rest := "", p
		if k := strings.Index(p, "="); k >= 0 && k < strings.Index(p, "://") {
			prefix, rest = p[:k+1], p[k+1:]
		}
		if u, err := url.Parse(rest); err == nil && u.User != nil {
			u.User = nil
			parts[i] = prefix + u.String()
		}
	}
	return strings.Join(parts, ",")
}

// commandLine is the command that reproduces this output: the command's
// path, the flags given (values quoted for a POSIX shell, credentials
// removed) and the arguments.
func commandLine(cmd *cobra.Command, args []string) string {
	words := strings.Fields(cmd.CommandPath())
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if !fl.Changed {
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok && fl.Value.Type() == "stringArray" {
			for _, v := range sv.GetSlice() {
				words = append(words, "--"+fl.Name, shellQuote(stripUserinfo(v)))
			}
			return
		}
		words = append(words, "--"+fl.Name+"="+shellQuote(stripUserinfo(flagValue(fl))))
	})
	for _, a := range args {
		words = append(words, shellQuote(stripUserinfo(a)))
	}
	return strings.Join(words, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// plainly safe characters.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@%+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newReportCmd() *cobra.Command {
	an := newAnalyzeCmd()
	var out, format, policies string
	cmd := &cobra.Command{
		Use:   "report FILE|TARGET... -o incident.html",
		Short: "Write an incident's postmortem: one self-contained HTML page, or markdown",
		Long: `report analyses a recording (or live targets over --window, with the same
source flags as analyze) and writes the incident as one self-contained HTML
page people can share: the headline (phases, peak amplification, goodput
lost, recovery, metastable or not), per-hop timelines on one time axis with
the phases shaded and the findings marked, the chains with their
amplification, every finding with its evidence and what to do, the
provider's side, and the command that reproduces it. The page loads
nothing and runs no script; it reads in dark and light mode and prints.

--whatif LIST adds, for one recording, the what-if table and the fate
ledger of 'retrytop whatif --policy LIST' on it.

--format markdown writes the same story for a ticket or a chat, with the
timelines as Unicode sparklines. Every number is a value of
'retrytop analyze --format json' on the same source (docs/report.md).

Exit codes as analyze: 0 written, 1 usage error, 2 no target could be read,
3 a finding at or above --fail-on (the report is written all the same).`,
		Example: `  retrytop report incident.rtd -o incident.html
  retrytop report incident.rtd --format markdown -o incident.md
  retrytop report incident.rtd --whatif recorded,bounded,envoy -o incident.html
  retrytop report app=http://127.0.0.1:9101/metrics client=http://127.0.0.1:9102/metrics --window 2m -o now.html
  retrytop analyze incident.rtd --format html > incident.html`,
		Args: cobra.ArbitraryArgs,
		PreRunE: func(*cobra.Command, []string) error {
			switch format {
			case "html", "markdown", "md":
				return nil
			}
			return withCode(exitUsage, fmt.Errorf("unknown --format %q (want html or markdown)", format))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			inner := formatHTML
			if format != "html" {
				inner = formatStory
			}
			if err := an.Flags().Set("format", inner); err != nil {
				return err
			}
			an.SetContext(cmd.Context())
			var buf bytes.Buffer
			an.SetOut(&buf)
			an.SetErr(cmd.ErrOrStderr())
			an.Annotations = map[string]string{annotReproduce: commandLine(cmd, args), annotArgs: strings.Join(args, "\x00")}
			if policies != "" {
				js, err := whatifJSON(cmd, args, policies)
				if err != nil {
					return err
				}
				an.Annotations[annotWhatif] = js
			}
			if err := an.PreRunE(an, args); err != nil {
				return err
			}
			runErr := an.RunE(an, args)
			var ce *exitError
			if runErr != nil && !(errors.As(runErr, &ce) && ce.code == exitFinding) {
				return runErr
			}
			if out == "" || out == "-" {
				_, err := cmd.OutOrStdout().Write(buf.Bytes())
				return errors.Join(err, runErr)
			}
			if err := writeFileAtomic(out, buf.Bytes()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (%s)\n", out, record.FormatSize(int64(buf.Len())))
			return runErr
		},
	}
	an.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Name != "format" { // report's -o is the output file
			cmd.Flags().AddFlag(fl)
		}
	})
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the report to this file (default: standard output)")
	cmd.Flags().StringVar(&policies, "whatif", "", "with one recording: add the what-if table and fate ledger of these policies (retrytop whatif --policy LIST)")
	cmd.Flags().StringVar(&format, "format", "html", "html or markdown")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"html", "markdown"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// writeFileAtomic writes body to path through a temporary file in the
// same directory, so a failed run never leaves half a page.
func writeFileAtomic(path string, body []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".retrytop-report-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(body)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// whatifJSON runs `retrytop whatif FILE --policy LIST --format json` (the
// same command, so the section's numbers are its numbers) on the one
// recording of args.
func whatifJSON(cmd *cobra.Command, args []string, policies string) (string, error) {
	if len(args) != 1 || !recordingArgs(args) {
		return "", withCode(exitUsage, errors.New("--whatif wants exactly one recording"))
	}
	wi := newWhatifCmd()
	wi.SetContext(cmd.Context())
	var buf bytes.Buffer
	wi.SetOut(&buf)
	wi.SetErr(cmd.ErrOrStderr())
	set := map[string]string{"policy": policies, "format": "json"}
	if fl := cmd.Flags().Lookup("input-format"); fl != nil && fl.Changed {
		set["input-format"] = fl.Value.String()
	}
	for k, v := range set {
		if err := wi.Flags().Set(k, v); err != nil {
			return "", withCode(exitUsage, fmt.Errorf("--whatif: %w", err))
		}
	}
	if err := wi.Args(wi, args); err != nil {
		return "", err
	}
	if err := wi.RunE(wi, args); err != nil {
		return "", fmt.Errorf("--whatif: %w", err)
	}
	return buf.String(), nil
}
