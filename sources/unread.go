package sources

import (
	"fmt"
	"strings"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// ParserFunc makes a dialect.ParseFunc a expo.Parser.
type ParserFunc dialect.ParseFunc

// Parse calls f.
func (f ParserFunc) Parse(target string, body []byte, contentType string, filter func(string) bool) ([]model.Family, error) {
	return f(target, body, contentType, filter)
}

// UnreadWrap puts tr.Parsing around a parse (dump.OpenOptions.Wrap): a
// recording's own parse, which reads a frame that kept its structure
// through a value map, then stays under the translator's eye.
func UnreadWrap(tr *dialect.Translator) func(expo.Parser) expo.Parser {
	return func(p expo.Parser) expo.Parser { return ParserFunc(tr.Parsing(p.Parse)) }
}

// UnreadBadge returns the dashboard's header badge function: the first
// target no dialect reads (Unread's own words up to its list), how many
// more, and the verb to run; then whatever prev shows. One line: the
// families and the URL are in retrytop analyze's finding.
func UnreadBadge(tr func() *dialect.Translator, statuses func() []model.TargetStatus, prev func() string) func() string {
	return func() string {
		b, n := "", 0
		if t := tr(); t != nil {
			for _, s := range statuses() {
				if !s.Up || s.Dialect != "" {
					continue // down, or read by a dialect (a replay's may know it when its latest translator does not yet)
				}
				if err := t.Unread(s.Name, s.URL); err != nil {
					if n == 0 {
						b, _, _ = strings.Cut(err.Error(), " (")
					}
					n++
				}
			}
		}
		if n > 1 {
			b += fmt.Sprintf(" (+%d more)", n-1)
		}
		if n > 0 {
			b = safetext.TerminalN(b, 60) + ": retrytop dialect draft URL"
		}
		return joinBadges(b, prev)
	}
}
