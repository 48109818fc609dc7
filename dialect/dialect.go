// Package dialect translates what real emitters expose (Envoy, Linkerd,
// Linkerd 1, HAProxy, gRPC's OpenTelemetry metrics, resilience4j, Istio, Kubernetes
// client-go, Traefik, gRPC interceptor metrics, Polly, Kong, APISIX,
// OpenTelemetry's HTTP client metrics, connection pools,
// or a custom mapping) into retrytop's metric contract
// (docs/metrics.md) before a snapshot is stored, so that analysis only ever
// knows the contract. docs/dialects.md documents every mapping, what each
// emitter cannot tell, and the pitfalls.
//
// Rules every dialect follows:
//
//   - A signal the emitter cannot provide is not emitted: absent, never 0.
//   - Counters combined linearly stay counters. A difference of counters is
//     kept monotonic (see guard), so a momentary dip is never read as a
//     reset.
//   - Raw labels that identify a series (a route, a method, a server) are
//     kept, so that analysis sums increases per series rather than summing
//     counters first; only the labels a dialect consumes are dropped.
//   - Durations are seconds: millisecond and nanosecond histograms have
//     their bucket bounds and sums scaled.
//
// A Translator (Auto) detects each target's dialects from its exposition,
// keeps per-target state, and is what scrape.Options.Translate calls. The
// package imports model only.
package dialect

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/retrytop/retrytop/model"
)

// Dialect reads one emitter's families. A Dialect value belongs to one
// target: it may keep state between that target's scrapes (see guard), and
// Translate is never called concurrently on one value.
type Dialect interface {
	// Name is the dialect's name, as in name=URL@name.
	Name() string
	// Families lists the raw family names the dialect reads (histogram and
	// summary families by their base name). A name ending in "*" is a
	// prefix. It feeds the parser's filter; names it does not list may be
	// dropped before Translate sees them.
	Families() []string
	// Detect reports whether an exposition looks like the dialect's.
	Detect(fams []model.Family) bool
	// Translate returns the contract families for the snapshot (same
	// target and time). It must not modify snap. A snapshot with nothing
	// the dialect reads yields a snapshot without families.
	Translate(snap *model.Snapshot) *model.Snapshot
}

// Factory makes a fresh Dialect for one target.
type Factory func() Dialect

type entry struct {
	name  string
	new   Factory
	proto Dialect // for Detect and Families, never Translate
}

var (
	regMu    sync.RWMutex
	registry []entry // in detection order
)

// Register adds a dialect to the default registry, after those already
// registered (detection tries them in that order). It panics on a duplicate
// or empty name.
func Register(name string, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	registry = addEntry(registry, name, f)
}

func addEntry(es []entry, name string, f Factory) []entry {
	if name == "" || f == nil {
		panic("dialect: Register with an empty name or nil factory")
	}
	for _, e := range es {
		if e.name == name {
			panic(fmt.Sprintf("dialect: %q registered twice", name))
		}
	}
	return append(es, entry{name: name, new: f, proto: f()})
}

func init() {
	// Detection order. Istio before Envoy (an Istio sidecar exposes both
	// and the istio dialect reads them together); pools and native last,
	// since they combine with anything.
	Register(NameIstio, func() Dialect { return &istio{} })
	Register(NameEnvoy, func() Dialect { return &envoy{} })
	Register(NameLinkerd, func() Dialect { return &linkerd{} })
	Register(NameLinkerd1, func() Dialect { return linkerd1{} })
	Register(NameHAProxy, func() Dialect { return &haproxy{} })
	Register(NameGRPC, func() Dialect { return &grpcOTel{} })
	Register(NameResilience4j, func() Dialect { return &resilience4j{} })
	Register(NameClientGo, func() Dialect { return &clientGo{} })
	Register(NameTraefik, func() Dialect { return &traefik{} })
	Register(NameGRPCPrometheus, func() Dialect { return grpcProm{} })
	Register(NamePolly, func() Dialect { return polly{} })
	Register(NameKong, func() Dialect { return kong{} })
	Register(NameAPISIX, func() Dialect { return apisix{} })
	Register(NameOTelHTTP, func() Dialect { return otelHTTP{} })
	Register(NameAWSSDK, func() Dialect { return awsSDK{} })
	Register(NamePools, func() Dialect { return &Pools{} })
	Register(NameNative, func() Dialect { return native{} })
}

// Names of the built-in dialects.
const (
	NameNative         = "native"
	NameEnvoy          = "envoy"
	NameIstio          = "istio"
	NameLinkerd        = "linkerd"
	NameLinkerd1       = "linkerd1"
	NameHAProxy        = "haproxy"
	NameGRPC           = "grpc"
	NameResilience4j   = "resilience4j"
	NamePools          = "pools"
	NameClientGo       = "client-go"
	NameTraefik        = "traefik"
	NameGRPCPrometheus = "grpc-prometheus"
	NamePolly          = "polly"
	NameKong           = "kong"
	NameAPISIX         = "apisix"
	NameOTelHTTP       = "otel-http"
	NameAWSSDK         = "aws-sdk"
)

// Names lists the registered dialects in detection order.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, len(registry))
	for i, e := range registry {
		out[i] = e.name
	}
	return out
}

// New returns a fresh dialect of the default registry by name.
func New(name string) (Dialect, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	for _, e := range registry {
		if e.name == name {
			return e.new(), nil
		}
	}
	return nil, unknown(name, registry)
}

func unknown(name string, es []entry) error {
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.name
	}
	return fmt.Errorf("unknown dialect %q (known: %s)", name, strings.Join(names, ", "))
}

// Config configures a Translator.
type Config struct {
	// Custom dialects, from a config file's dialects: section. They are
	// detected before the built-in ones, in order.
	Custom []Mapping
	// PoolDependency attaches connection pools to dependencies: pool name
	// (HikariCP's pool label, database/sql's db_name) -> dependency. A
	// pool not listed is its own dependency.
	PoolDependency map[string]string
}

// Translator detects every target's dialects and translates its snapshots.
// It is safe for concurrent use by many targets.
type Translator struct {
	entries  []entry
	filter   map[string]bool
	prefixes []string

	mu      sync.Mutex
	targets map[string]*targetState
}

type targetState struct {
	mu       sync.Mutex
	forced   string
	dialects []Dialect // detected so far (or the forced one), in detection order
	names    string
	// setAside says which built-in dialects a custom mapping reading the
	// same families replaced on the target, and why (see detect).
	setAside []string
	// prev lists the raw families of the target's previous snapshot
	// (sorted), to tell whether a dialect detected now reads families
	// that existed before; scraped is false before the first.
	prev    []string
	scraped bool
	// seen lists every raw family of one unfiltered parse of a target no
	// dialect read at its previous scrape (Parsing), sorted: the parse
	// filter drops exactly the families Unread wants to name. looked is
	// true once that parse was tried, so it happens once.
	seen   []string
	looked bool
	// released are translations given back (Release), under relMu (not
	// mu, which a translation holds throughout), for the next Translate
	// to hand to its dialects.
	relMu    sync.Mutex
	released [][]model.Family
}

// maxReleased bounds the translations a target's state holds given back
// and not yet handed to its dialects.
const maxReleased = 4

// Auto returns a Translator over the built-in dialects: each target's
// dialects are detected from its exposition.
func Auto() *Translator {
	t, _ := NewTranslator(Config{})
	return t
}

// NewTranslator returns a Translator over the custom dialects of cfg and
// the built-in ones. It fails on an invalid custom mapping.
func NewTranslator(cfg Config) (*Translator, error) {
	var es []entry
	for i := range cfg.Custom {
		m := cfg.Custom[i]
		if err := m.compile(); err != nil {
			return nil, err
		}
		for _, n := range Names() {
			if n == m.Name {
				return nil, fmt.Errorf("custom dialect %q: name of a built-in dialect", m.Name)
			}
		}
		mc := m
		es = addEntryErr(es, m.Name, func() Dialect { return &custom{Mapping: mc} })
		if es == nil {
			return nil, fmt.Errorf("custom dialect %q defined twice", m.Name)
		}
	}
	regMu.RLock()
	for _, e := range registry {
		f := e.new
		if e.name == NamePools && len(cfg.PoolDependency) > 0 {
			attach := cfg.PoolDependency
			f = func() Dialect { return &Pools{Attach: attach} }
		}
		es = append(es, entry{name: e.name, new: f, proto: f()})
	}
	regMu.RUnlock()
	// process_start_time_seconds tells the store of a restart.
	t := &Translator{entries: es, filter: map[string]bool{model.MetricProcessStart: true, model.MetricTargetInfo: true}, targets: map[string]*targetState{}}
	for _, e := range es {
		for _, n := range e.proto.Families() {
			if p, ok := strings.CutSuffix(n, "*"); ok {
				t.prefixes = append(t.prefixes, p)
			} else {
				t.filter[n] = true
			}
		}
	}
	return t, nil
}

func addEntryErr(es []entry, name string, f Factory) (out []entry) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	return addEntry(es, name, f)
}

// Names lists the translator's dialects in detection order.
func (t *Translator) Names() []string {
	out := make([]string, len(t.entries))
	for i, e := range t.entries {
		out[i] = e.name
	}
	return out
}

// Check returns an error when name is not one of the translator's
// dialects (for validating name=URL@dialect early).
func (t *Translator) Check(name string) error {
	if name == "" {
		return nil
	}
	for _, e := range t.entries {
		if e.name == name {
			return nil
		}
	}
	return unknown(name, t.entries)
}

// Filter reports whether a family may be read by one of the translator's
// dialects; it fits scrape.Options.Filter and the Parser's filter
// contract (cheap, pure, safe for concurrent use).
func (t *Translator) Filter(name string) bool {
	if t.filter[name] {
		return true
	}
	for _, p := range t.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Translate translates one target's snapshot. forced is the dialect given
// with name=URL@dialect ("" to detect). It returns the snapshot to store
// and the dialect name(s) to show. Detection is sticky: once a dialect has
// been seen on a target it keeps translating it (families that appear late,
// such as Envoy's lazily created stats, never make a target flap). With no
// dialect detected the snapshot is returned unchanged and the name is "".
func (t *Translator) Translate(forced string, snap *model.Snapshot) (*model.Snapshot, string, error) {
	t.mu.Lock()
	st := t.targets[snap.Target]
	if st == nil {
		st = &targetState{}
		t.targets[snap.Target] = st
	}
	t.mu.Unlock()

	st.mu.Lock()
	defer st.mu.Unlock()
	st.takeReleased()
	var added []Dialect
	if forced != "" {
		if st.forced != forced || len(st.dialects) == 0 {
			d, err := t.newDialect(forced)
			if err != nil {
				return nil, "", err
			}
			st.forced, st.dialects, st.names, st.setAside = forced, []Dialect{d}, forced, nil
			added = st.dialects
		}
	} else {
		if st.forced != "" {
			st.forced, st.dialects, st.names, st.setAside = "", nil, "", nil
		}
		added = t.detect(st, snap.Families)
	}
	// A dialect that starts on a target already scraped, reading families
	// that were there before (Istio's sidecar stats once its first request
	// shows istio_requests_total), yields series new to the store whose
	// values are not increases from 0.
	baseline := false
	if st.scraped {
		for _, d := range added {
			baseline = baseline || readsAny(d.Families(), st.prev)
		}
	}
	st.scraped = true
	st.prev = st.prev[:0]
	for i := range snap.Families {
		st.prev = append(st.prev, snap.Families[i].Name)
	}
	sort.Strings(st.prev)

	var res *model.Snapshot
	switch len(st.dialects) {
	case 0:
		res = snap
	case 1:
		res = st.dialects[0].Translate(snap)
	default:
		o := newOut()
		for _, d := range st.dialects {
			merge(o, d.Translate(snap).Families)
		}
		res = o.snapshot(snap)
	}
	res = finish(snap, res, baseline)
	if len(st.setAside) > 0 {
		c := *res
		c.SetAside = st.setAside
		res = &c
	}
	return res, st.names, nil
}

// Release gives back a snapshot Translate returned, once nothing reads it
// any longer (the store has taken its values): a later translation of its
// target cuts its samples from the same memory instead of allocating.
// Calling it is optional; a snapshot still read must not be given back.
func (t *Translator) Release(snap *model.Snapshot) {
	if snap == nil {
		return
	}
	st := t.lookup(snap.Target)
	if st == nil {
		return
	}
	st.relMu.Lock()
	if len(st.released) < maxReleased {
		st.released = append(st.released, snap.Families)
	}
	st.relMu.Unlock()
}

// takeReleased hands the translations given back to the target's
// dialects; under st.mu.
func (st *targetState) takeReleased() {
	st.relMu.Lock()
	rel := st.released
	st.released = nil
	st.relMu.Unlock()
	for _, fams := range rel {
		for _, d := range st.dialects {
			if r, ok := d.(releaser); ok {
				r.release(fams)
			}
		}
	}
}

// releaser is a dialect whose translations' memory can serve its later
// ones (Translator.Release).
type releaser interface {
	release(fams []model.Family)
}

// lookup returns a target's state; nil for a target never translated.
func (t *Translator) lookup(target string) *targetState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.targets[target]
}

// SetAside lists, for a target, the built-in dialects a custom mapping
// replaced there because it reads the same families, each with the reason
// ("traefik: mine reads the same families (traefik_service_requests_total)");
// nil when none was. Translate's snapshots carry the same list
// (model.Snapshot.SetAside), which the scraper copies into the target's
// status.
func (t *Translator) SetAside(target string) []string {
	st := t.lookup(target)
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Clone(st.setAside)
}

// finish carries the process start time over from the raw snapshot in to
// the translated res (never modifying in, which a dialect may return as
// res) and leaves the raw process_start_time_seconds family out of it: it
// is only the restart signal.
func finish(in, res *model.Snapshot, baseline bool) *model.Snapshot {
	res = withTargetInfo(in, res)
	ps := in.ProcessStartOf()
	has := false
	for i := range res.Families {
		has = has || res.Families[i].Name == model.MetricProcessStart
	}
	if ps == 0 && !has && !baseline {
		return res
	}
	c := *res
	c.ProcessStart, c.Baseline = ps, baseline
	if has {
		c.Families = make([]model.Family, 0, len(res.Families)-1)
		for _, f := range res.Families {
			if f.Name != model.MetricProcessStart {
				c.Families = append(c.Families, f)
			}
		}
	}
	return &c
}

// withTargetInfo carries the raw target_info family (who the target is,
// analysis.Identities) into a translated snapshot that lacks it, never
// modifying in or res.
func withTargetInfo(in, res *model.Snapshot) *model.Snapshot {
	if in == res {
		return res
	}
	for i := range res.Families {
		if res.Families[i].Name == model.MetricTargetInfo {
			return res
		}
	}
	for i := range in.Families {
		if in.Families[i].Name == model.MetricTargetInfo {
			c := *res
			c.Families = append(append(make([]model.Family, 0, len(res.Families)+1), res.Families...), in.Families[i])
			return &c
		}
	}
	return res
}

// readsAny reports whether one of the families a dialect reads (names
// ending in "*" are prefixes) is in sorted.
func readsAny(families, sorted []string) bool {
	for _, n := range families {
		p, prefix := strings.CutSuffix(n, "*")
		i := sort.SearchStrings(sorted, p)
		if i < len(sorted) && (sorted[i] == p || prefix && strings.HasPrefix(sorted[i], p)) {
			return true
		}
		if !prefix {
			// Histogram and summary families are listed by base name.
			for _, suf := range []string{"_total", "_bucket", "_count", "_sum"} {
				if j := sort.SearchStrings(sorted, p+suf); j < len(sorted) && sorted[j] == p+suf {
					return true
				}
			}
		}
	}
	return false
}

// detect adds the dialects newly recognised in fams, keeping detection
// order. A dialect that reads another's families supersedes it (istio reads
// Envoy's cluster stats itself): the superseded one is dropped and never
// detected again on that target. Likewise a custom mapping supersedes every
// built-in dialect that reads one of the families it maps on the target
// (the user's mapping wins; both would read each request): the built-in is
// dropped and st.setAside says why.
func (t *Translator) detect(st *targetState, fams []model.Family) (added []Dialect) {
	skip := make(map[string]bool, len(st.dialects)+2)
	for _, d := range st.dialects {
		skip[d.Name()] = true
	}
	for _, e := range t.entries {
		if !skip[e.name] && e.proto.Detect(fams) {
			d := e.new()
			st.dialects = append(st.dialects, d)
			skip[e.name] = true
			added = append(added, d)
		}
	}
	if len(added) == 0 {
		return nil
	}
	for _, d := range st.dialects {
		if sup, ok := d.(interface{ Supersedes() []string }); ok {
			for _, n := range sup.Supersedes() {
				gone := func(x Dialect) bool { return x.Name() == n }
				st.dialects = slices.DeleteFunc(st.dialects, gone)
				added = slices.DeleteFunc(added, gone)
			}
		}
	}
	st.dialects, added = setAside(st, fams, added)
	rank := make(map[string]int, len(t.entries))
	for i, e := range t.entries {
		rank[e.name] = i
	}
	sort.SliceStable(st.dialects, func(i, j int) bool { return rank[st.dialects[i].Name()] < rank[st.dialects[j].Name()] })
	names := make([]string, len(st.dialects))
	for i, d := range st.dialects {
		names[i] = d.Name()
	}
	st.names = strings.Join(names, "+")
	return added
}

// setAside drops from st.dialects (and added) every built-in dialect that
// reads a family of fams a custom mapping of st.dialects maps, recording
// why in st.setAside.
func setAside(st *targetState, fams []model.Family, added []Dialect) ([]Dialect, []Dialect) {
	var customs []*custom
	for _, d := range st.dialects {
		if c, ok := d.(*custom); ok {
			customs = append(customs, c)
		}
	}
	if len(customs) == 0 {
		return st.dialects, added
	}
	present := make([]string, len(fams))
	for i := range fams {
		present[i] = fams[i].Name
	}
	sort.Strings(present)
	present = slices.Compact(present)
	drop := map[string]bool{}
	for _, d := range st.dialects {
		if _, ok := d.(*custom); ok {
			continue
		}
		for _, c := range customs {
			var shared []string
			for _, n := range present {
				if c.maps(n) && readsAny(d.Families(), []string{n}) {
					shared = append(shared, n)
				}
			}
			if len(shared) > 0 {
				drop[d.Name()] = true
				why := d.Name() + ": " + c.Name() + " reads the same families (" + draftList(shared, 3) + ")"
				if !slices.Contains(st.setAside, why) {
					st.setAside = append(st.setAside, why)
				}
				break
			}
		}
	}
	if len(drop) == 0 {
		return st.dialects, added
	}
	gone := func(x Dialect) bool { return drop[x.Name()] }
	return slices.DeleteFunc(st.dialects, gone), slices.DeleteFunc(added, gone)
}

func (t *Translator) newDialect(name string) (Dialect, error) {
	for _, e := range t.entries {
		if e.name == name {
			return e.new(), nil
		}
	}
	return nil, unknown(name, t.entries)
}

// Detected lists the dialects the translator reads a target with so far
// (detected or forced), in detection order; nil for a target it has not
// translated. A recording's replay runs the translator too: this is how
// its targets' dialects are known after it (targets[].dialects).
func (t *Translator) Detected(target string) []string {
	st := t.lookup(target)
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]string, len(st.dialects))
	for i, d := range st.dialects {
		out[i] = d.Name()
	}
	return out
}

// Unread returns, for a target the translator has scraped and no dialect
// reads, an error that says so, lists a few of the families it exposes
// (quoted, so escaped for a terminal) and points to retrytop dialect
// draft; nil when a dialect reads it or it was never translated. url is
// what the user gave for the target; "" (a recording, which does not keep
// it) names no URL.
func (t *Translator) Unread(target, url string) error {
	st := t.lookup(target)
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.scraped || len(st.dialects) > 0 {
		return nil
	}
	names := st.seen
	if len(names) == 0 {
		names = st.prev
	}
	seen := "none of the families a dialect reads"
	if len(names) > 0 {
		seen = "families such as " + draftList(telling(names), 5)
	}
	run := "'retrytop dialect draft " + strconv.Quote(url) + "'"
	if url == "" {
		run = "'retrytop dialect draft URL' on its /metrics URL"
	}
	return fmt.Errorf("no dialect reads %s (%s): run %s for a custom mapping to start from (docs/dialects.md, \"Custom\")",
		strconv.Quote(target), seen, run)
}

// telling orders sorted family names for a message: the process's own
// families (Go and process runtime, the exporter's, the restart signal)
// after the others, which say what the target is.
func telling(sorted []string) []string {
	var own, runtime []string
	for _, n := range sorted {
		if strings.HasPrefix(n, "go_") || strings.HasPrefix(n, "process_") || strings.HasPrefix(n, "promhttp_") || n == model.MetricTargetInfo {
			runtime = append(runtime, n)
		} else {
			own = append(own, n)
		}
	}
	return append(own, runtime...)
}

// Saw tells the translator every raw family a target exposes (sorted
// names), as a parse without its filter found them elsewhere: a replay
// parses its recording once for the many translators it makes (one per
// seek). Unread names them.
func (t *Translator) Saw(target string, names []string) {
	t.mu.Lock()
	st := t.targets[target]
	if st == nil {
		st = &targetState{}
		t.targets[target] = st
	}
	t.mu.Unlock()
	st.mu.Lock()
	st.seen, st.looked = names, true
	st.mu.Unlock()
}

// ParseFunc is expo.Parser's Parse as a function (this package imports
// model only): body parsed for target, with the families filter selects.
type ParseFunc func(target string, body []byte, contentType string, filter func(string) bool) ([]model.Family, error)

// Parsing wraps parse for the scraper or a recording: the one scrape after
// a target was found unread by every dialect is parsed without the filter
// once, so that Unread can name its families (the filter, Translator.Filter,
// drops exactly those). The result is that parse restricted to the filter,
// which equals the filtered parse (expo.Parser's contract); should the
// whole body fail to parse (an error in a family the filter would have
// dropped), the filtered parse is returned as usual.
func (t *Translator) Parsing(parse ParseFunc) ParseFunc {
	return func(target string, body []byte, contentType string, filter func(string) bool) ([]model.Family, error) {
		t.mu.Lock()
		st := t.targets[target]
		t.mu.Unlock()
		if st == nil || filter == nil {
			return parse(target, body, contentType, filter)
		}
		st.mu.Lock()
		look := st.scraped && len(st.dialects) == 0 && !st.looked
		st.looked = st.looked || look
		st.mu.Unlock()
		if !look {
			return parse(target, body, contentType, filter)
		}
		kept, names, err := ParseNamingAll(parse, target, body, contentType, filter)
		if names != nil {
			st.mu.Lock()
			st.seen = names
			st.mu.Unlock()
		}
		return kept, err
	}
}

// ParseNamingAll parses body whole, once, and returns the families filter
// selects with every family's name, sorted: what Unread needs, since the
// filter drops exactly the families it names. Should the whole body fail
// to parse (an error in a family the filter would have dropped), it
// returns the filtered parse and no names.
func ParseNamingAll(parse ParseFunc, target string, body []byte, contentType string, filter func(string) bool) ([]model.Family, []string, error) {
	all, err := parse(target, body, contentType, nil)
	if err != nil {
		kept, err := parse(target, body, contentType, filter)
		return kept, nil, err
	}
	names := make([]string, len(all))
	kept := all[:0:0]
	for i := range all {
		names[i] = all[i].Name
		if filter(all[i].Name) {
			kept = append(kept, all[i])
		}
	}
	sort.Strings(names)
	return kept, names, nil
}

// Forget drops a target's state (detected dialects, derived counters).
func (t *Translator) Forget(target string) {
	t.mu.Lock()
	delete(t.targets, target)
	t.mu.Unlock()
}

// merge adds translated families into o: two dialects that emit the same
// series (same name and labels) are added together.
func merge(o *out, fams []model.Family) {
	for i := range fams {
		f := &fams[i]
		for j := range f.Samples {
			s := &f.Samples[j]
			switch f.Type {
			case model.Histogram:
				o.histogram(f.Name, s.Labels, s, 1)
			case model.Counter:
				o.counterOf(f.Name, s.Labels, s)
			case model.Gauge:
				o.gauge(f.Name, s.Labels, s.Value)
			default:
				// Summaries and untyped families (native passthrough)
				// are copied as they are, first one wins.
				ns, fresh := o.slot(f.Name, f.Type, s.Labels)
				if fresh {
					*ns = *s
				}
			}
		}
		if of := o.fams[f.Name]; of != nil && of.Help == helpOf(f.Name) && f.Help != "" {
			of.Help = f.Help
		}
	}
}
