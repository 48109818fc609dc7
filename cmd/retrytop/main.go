// Command retrytop is a terminal dashboard for retry amplification: it reads
// the Prometheus metrics of retry libraries, proxies and services and shows
// originals vs attempts, budget denials, admission rejections kept apart
// from provider errors, pool waits and split latency.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/retrytop/retrytop/internal/safetext"
)

// Exit codes scripts can rely on.
const (
	exitOK      = 0
	exitUsage   = 1 // bad flags or arguments
	exitNoData  = 2 // no target could be read
	exitFinding = 3 // --fail-on matched a finding
	exitLost    = 4 // a recording lacks scrapes it could not write
)

// exitError carries an exit code up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

func main() {
	cmd := newRootCmd()
	if err := cmd.Execute(); err != nil {
		os.Exit(printError(os.Stderr, err))
	}
}

// printError prints err after "retrytop:" and returns its exit code.
func printError(w io.Writer, err error) int {
	fmt.Fprintln(w, "retrytop:", errorText(err))
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitUsage
}

// errorText is err's text made safe for the terminal, line by line: an
// error may quote a file, a label value or a server's answer, and must not
// carry their escape sequences or bidi controls to the screen.
func errorText(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = safetext.TerminalN(l, 0)
	}
	return strings.Join(lines, "\n")
}
