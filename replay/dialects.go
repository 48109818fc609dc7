package replay

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// Dialects follows what the replay's translators (a fresh one for every
// seek, one for the spike pass: dialects keep per-target state) find of
// each target, so the dashboard shows, as live, the dialects that read it
// (sticky: any translator that read it counts) and, for a target none has
// read, Unread's words.
type Dialects struct {
	newTranslator func() *dialect.Translator
	forced        map[string]string // target -> the dialect forced on it
	// Filter selects the families a dialect reads (the recording's parse).
	Filter func(string) bool
	// latest is the translator made last; the recording's parser and the
	// header badge ask it.
	latest atomic.Pointer[dialect.Translator]

	mu    sync.Mutex
	order []string                   // dialect names in detection order
	read  map[string]map[string]bool // target -> dialects that read it
	names map[string]string          // target -> read's names joined by "+"
	seen  map[string][]string        // target -> its families (parser), nil until parsed
}

// NewDialects follows the translators newTranslator makes; forced names
// the dialect forced on a target (config, name=URL@dialect).
func NewDialects(newTranslator func() *dialect.Translator, forced map[string]string) *Dialects {
	tr := newTranslator()
	d := &Dialects{newTranslator: newTranslator, forced: forced, Filter: tr.Filter, order: tr.Names(),
		read: map[string]map[string]bool{}, names: map[string]string{}, seen: map[string][]string{}}
	d.latest.Store(tr)
	return d
}

// Latest is the translator made last.
func (d *Dialects) Latest() *dialect.Translator { return d.latest.Load() }

// Transform makes a translator and the function that reads the replay's
// snapshots with it (Options.NewTransform).
func (d *Dialects) Transform() Transform {
	tr := d.newTranslator()
	// Stored first: a name the parser notes after this copy is told to
	// the translator it loads, which is tr or a newer one.
	d.latest.Store(tr)
	d.mu.Lock()
	for target, names := range d.seen {
		if names != nil {
			tr.Saw(target, names)
		}
	}
	d.mu.Unlock()
	return func(s *model.Snapshot) (*model.Snapshot, error) {
		out, names, err := tr.Translate(d.forced[s.Target], s)
		if err == nil && names != "" {
			d.note(s.Target, names)
		}
		return out, err
	}
}

func (d *Dialects) note(target, names string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names[target] == names {
		return
	}
	set := d.read[target]
	if set == nil {
		set = map[string]bool{}
		d.read[target] = set
	}
	for _, n := range strings.Split(names, "+") {
		set[n] = true
	}
	var all []string
	for _, n := range d.order {
		if set[n] {
			all = append(all, n)
		}
	}
	d.names[target] = safetext.Terminal(strings.Join(all, "+"))
}

// parseFunc makes a function a expo.Parser.
type parseFunc func(target string, body []byte, contentType string, filter func(string) bool) ([]model.Family, error)

func (f parseFunc) Parse(target string, body []byte, contentType string, filter func(string) bool) ([]model.Family, error) {
	return f(target, body, contentType, filter)
}

// Wrap is p, a dump recording's own parse (dump.OpenOptions.Wrap, which
// reads a frame with its previous frame's structure through a value map
// instead of parsing it), made the replay's: a target's first body is
// parsed whole, once for all the replay's translators (Translator.Saw:
// Unread names its families, which the filter drops), the rest with the
// filter. The player parses ahead of translating, in parallel, so a
// translator cannot say which targets it will find unread when their
// bodies are parsed.
func (d *Dialects) Wrap(p expo.Parser) expo.Parser {
	parse := p.Parse
	return parseFunc(func(target string, body []byte, ct string, filter func(string) bool) ([]model.Family, error) {
		d.mu.Lock()
		_, looked := d.seen[target]
		if !looked {
			d.seen[target] = nil
		}
		d.mu.Unlock()
		if looked || filter == nil {
			return parse(target, body, ct, filter)
		}
		kept, names, err := dialect.ParseNamingAll(parse, target, body, ct, filter)
		if names == nil {
			return kept, err // as without the whole parse
		}
		d.mu.Lock()
		d.seen[target] = names
		d.mu.Unlock()
		d.latest.Load().Saw(target, names)
		return kept, nil
	})
}

// Source is p with each target's dialects in its statuses.
func (d *Dialects) Source(p *Player) DialectSource {
	return DialectSource{Player: p, d: d}
}

// DialectSource is a Player whose statuses name the dialects that read
// each target.
type DialectSource struct {
	*Player
	d *Dialects
}

// Statuses are the player's, with the dialects that read each target.
func (s DialectSource) Statuses() []model.TargetStatus {
	st := s.Player.Statuses()
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	for i := range st {
		if st[i].Dialect == "" {
			st[i].Dialect = s.d.names[st[i].Name]
			if st[i].Dialect == "" {
				st[i].Dialect = s.d.forced[st[i].Name]
			}
		}
	}
	return st
}
