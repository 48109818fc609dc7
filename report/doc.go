// Package report writes what leaves retrytop for people after an
// incident: the postmortem page of an analyze report (one self-contained
// HTML file with inline SVG charts, and the same story as markdown with
// Unicode sparklines), and saved dashboard screens (the rendered view as
// plain text, as text with its ANSI colours, and as an SVG of the cells).
//
// It only formats: every number it prints is a field of analysis.Report
// (the values of `analyze --format json`), of whatif.Report (`retrytop
// whatif --format json`) or, where the page sums them (goodput lost), a
// documented combination of those fields. It reads no
// clock and does no I/O beyond the writer or directory it is given.
package report
