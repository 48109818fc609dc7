package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/internal/safetext"
)

type exportFlags struct {
	format      string
	inputFormat string
	out         string
	force       bool
}

func newExportCmd() *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export FILE --format openmetrics -o OUT",
		Short: "Convert a recording to OpenMetrics for Prometheus backfill",
		Long: `export writes a recording (a dump, or any format replay reads) as
OpenMetrics text with timestamps, which
'promtool tsdb create-blocks-from openmetrics OUT DIR' turns into TSDB
blocks: a recording backfilled into Prometheus. Each series carries its
target as the instance label (unless it has one).

OUT "-" writes to standard output.`,
		Example: `  retrytop export incident.rtd --format openmetrics -o incident.om
  promtool tsdb create-blocks-from openmetrics incident.om ./data`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.format != "openmetrics" {
				return withCode(exitUsage, fmt.Errorf("unknown --format %q (want openmetrics)", f.format))
			}
			if f.out == "" {
				return withCode(exitUsage, errors.New("-o OUT is required (- for standard output)"))
			}
			// The export holds the targets' label values byte for byte, as
			// promtool needs them; on a terminal those bytes would be
			// obeyed (escape sequences, bidi overrides).
			if out, ok := cmd.OutOrStdout().(*os.File); ok && f.out == "-" && isTerminal(out) {
				return withCode(exitUsage, errors.New("-o - writes the targets' raw label values, which a terminal would obey: redirect standard output to a file or a pipe, or give -o FILE"))
			}
			rec, err := openRecording(cmd.ErrOrStderr(), args[0], f.inputFormat, nil)
			if err != nil {
				return err
			}
			defer rec.Close()
			w := cmd.OutOrStdout()
			var file *os.File
			if f.out != "-" {
				flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
				if f.force {
					flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
				}
				file, err = os.OpenFile(f.out, flag, 0o644)
				if err != nil {
					if errors.Is(err, os.ErrExist) {
						return withCode(exitUsage, fmt.Errorf("%s exists; use --force to overwrite it", f.out))
					}
					return err
				}
				w = file
			}
			st, err := dump.ExportOpenMetrics(w, rec, dump.ExportOptions{})
			if file != nil {
				if cerr := file.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d families, %d series, %d samples", st.Families, st.Series, st.Samples)
			if st.Skipped > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "; %d scrape(s) skipped (failed or unreadable)", st.Skipped)
			}
			if f.out != "-" {
				fmt.Fprintf(cmd.ErrOrStderr(), " to %s", safetext.Terminal(f.out))
			}
			fmt.Fprintln(cmd.ErrOrStderr())
			return nil
		},
	}
	cmd.Flags().StringVar(&f.format, "format", "openmetrics", "output format: openmetrics")
	cmd.Flags().StringVar(&f.inputFormat, "input-format", "", "input format: "+strings.Join(dump.Formats, ", ")+" (default: detected)")
	cmd.Flags().StringVarP(&f.out, "output", "o", "", "file to write (- for standard output)")
	cmd.Flags().BoolVar(&f.force, "force", false, "overwrite OUT if it exists")
	return cmd
}
