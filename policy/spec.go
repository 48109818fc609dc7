package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Names are the models Parse knows, in the order docs/whatif.md lists them.
var Names = []string{"recorded", "envoy", "finagle", "grpc", "sre", "aws", "bounded", "none"}

// Spec is one policy of a --policy list.
//
// Grammar (docs/whatif.md): a list is items separated by commas; an item is
// NAME, NAME:KEY=VALUE, or KEY=VALUE. NAME starts a new policy; KEY=VALUE
// adds a parameter to the policy before it, or, at the start of the list,
// starts a custom policy: the recorded one with those parameters. So
// "envoy:budget_percent=30,attempts=3,finagle" is Envoy with two
// parameters, then Finagle, and "attempts=3,budget=none,limiter=none" is
// one custom policy.
type Spec struct {
	// Name is the model: one of Names, "custom" for a list that starts
	// with parameters.
	Name string
	// Text is the spec as given (its items joined by commas): the label of
	// its results.
	Text   string
	Params []Param
}

// Param is one KEY=VALUE with its byte offset in the list (0-based).
type Param struct {
	Key, Value string
	Pos        int
}

// PosError is an error at a position of a --policy list.
type PosError struct {
	Pos int // 0-based byte offset
	Msg string
}

func (e *PosError) Error() string { return fmt.Sprintf("--policy at column %d: %s", e.Pos+1, e.Msg) }

func known(name string) bool {
	for _, n := range Names {
		if n == name {
			return true
		}
	}
	return false
}

// Parse splits a --policy list into specs; it checks names and the shape
// of every item, New checks the parameters.
func Parse(list string) ([]Spec, error) {
	var out []Spec
	pos := 0
	if strings.TrimSpace(list) == "" {
		return nil, &PosError{0, "empty policy list (want e.g. recorded,envoy,bounded)"}
	}
	if i := strings.IndexAny(list, "()"); i >= 0 {
		name := strings.TrimSpace(list[strings.LastIndexAny(list[:i], ",")+1 : i])
		return nil, &PosError{i, fmt.Sprintf("parameters are written NAME:KEY=VALUE,KEY=VALUE (e.g. %s:attempts=3), not in parentheses", first(name, "grpc"))}
	}
	for _, raw := range strings.Split(list, ",") {
		at := pos
		pos += len(raw) + 1
		item := strings.TrimSpace(raw)
		at += strings.Index(raw, item)
		if item == "" {
			return nil, &PosError{at, "empty item"}
		}
		name, rest, hasColon := strings.Cut(item, ":")
		if !hasColon && strings.Contains(item, "=") {
			// KEY=VALUE: a parameter of the policy before, or a custom one.
			p, err := param(item, at)
			if err != nil {
				return nil, err
			}
			if len(out) == 0 {
				out = append(out, Spec{Name: "custom"})
			}
			s := &out[len(out)-1]
			s.Params = append(s.Params, p)
			s.Text = join(s.Text, item)
			continue
		}
		name = strings.TrimSpace(name)
		if !known(name) {
			return nil, &PosError{at, fmt.Sprintf("unknown policy %q (want one of %s, or KEY=VALUE)", name, strings.Join(Names, ", "))}
		}
		s := Spec{Name: name, Text: item}
		if hasColon {
			off := at + len(name) + 1
			p, err := param(rest, off+strings.Index(rest, strings.TrimSpace(rest)))
			if err != nil {
				return nil, err
			}
			s.Params = append(s.Params, p)
		}
		out = append(out, s)
	}
	return out, nil
}

// first returns a, or b when a is empty.
func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

func param(item string, at int) (Param, error) {
	k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if !ok || k == "" || v == "" {
		return Param{}, &PosError{at, fmt.Sprintf("%q is not KEY=VALUE", item)}
	}
	return Param{Key: k, Value: v, Pos: at}, nil
}

// New builds the policy of spec over a hop's recorded base; rnd supplies
// the randomness of backoff and throttling.
func New(spec Spec, base Base, rnd Rand) (Policy, error) {
	pp := &params{list: spec.Params, used: make([]bool, len(spec.Params))}
	var p Policy
	switch spec.Name {
	case "recorded", "custom":
		b := base
		b.MaxAttempts = pp.int("attempts", b.MaxAttempts, 1)
		b.Backoff = pp.backoff(b.Backoff)
		b.Limit = pp.limit("limiter", b.Limit)
		b.Budget = pp.budget(b.Budget)
		name := spec.Name
		o := Recorded(b, rnd)
		o.name = name
		p = o
	case "bounded":
		o := Bounded(rnd)
		o.attempts = pp.int("attempts", o.attempts, 1)
		o.backoff = pp.backoff(o.backoff)
		if l := pp.limit("limiter", 4); l > 0 {
			o.lim = &limiter{limit: l}
		} else {
			o.lim = nil
		}
		o.budget = pp.budget(o.budget)
		p = o
	case "none":
		p = None()
	case "envoy":
		e := NewEnvoy(rnd)
		e.attempts = pp.int("attempts", e.attempts, 1)
		e.budgetPercent = pp.float("budget_percent", e.budgetPercent, 0, 100)
		e.minRetryConcurrency = pp.int("min_retry_concurrency", e.minRetryConcurrency, 0)
		e.maxRetries = pp.int("max_retries", e.maxRetries, 0)
		e.useBudget = pp.onOff("budget", true)
		e.backoff.Base = pp.dur("base_interval", e.backoff.Base)
		e.backoff.Cap = pp.dur("max_interval", 10*e.backoff.Base)
		e.backoff = pp.backoff(e.backoff)
		p = e
	case "finagle":
		f := NewFinagle(base, rnd)
		f.attempts = pp.int("attempts", f.attempts, 1)
		f.backoff = pp.backoff(f.backoff)
		f.ttl = pp.dur("ttl", f.ttl)
		f.minPerS = pp.float("min_retries_per_sec", f.minPerS, 0, 1e9)
		f.percent = pp.float("percent_can_retry", f.percent, 0.001, 1000)
		if f.ttl < time.Second || f.ttl > time.Minute {
			pp.fail("ttl", "must be between 1s and 60s (Finagle's bounds)")
		}
		f.init()
		p = f
	case "grpc":
		g := NewGRPC(base, rnd)
		g.attempts = min(pp.int("attempts", g.attempts, 1), 5)
		g.backoff = pp.backoff(g.backoff)
		g.maxTokens = int64(pp.float("max_tokens", 10, 0.001, 1000) * 1000)
		g.tokenRatio = int64(pp.float("token_ratio", 0.1, 0.001, 1000) * 1000)
		g.tokens = g.maxTokens
		g.retryTimeouts = pp.onOff("retry_timeouts", true)
		p = g
	case "sre":
		s := NewSRE(base, rnd)
		s.attempts = pp.int("attempts", s.attempts, 1)
		s.backoff = pp.backoff(s.backoff)
		s.k = pp.float("k", s.k, 1, 1000)
		s.window = pp.dur("window", s.window)
		if s.window < time.Second {
			pp.fail("window", "must be at least 1s")
		}
		s.init()
		p = s
	case "aws":
		a := NewAWS(rnd)
		a.attempts = pp.int("attempts", a.attempts, 1)
		a.backoff.Base = pp.dur("backoff_base", a.backoff.Base)
		a.backoff.Cap = pp.dur("backoff_cap", a.backoff.Cap)
		a.backoff = pp.backoff(a.backoff)
		a.maxQuota = int64(pp.int("quota", int(a.maxQuota), 0))
		a.quota = a.maxQuota
		a.retryCost = int64(pp.int("retry_cost", int(a.retryCost), 0))
		a.timeoutCost = int64(pp.int("timeout_cost", int(a.timeoutCost), 0))
		a.noRetryN = int64(pp.int("success_increment", int(a.noRetryN), 0))
		p = a
	default:
		return nil, fmt.Errorf("policy: unknown model %q", spec.Name)
	}
	var t Timing
	t.AttemptTimeout = pp.dur("attempt_timeout", 0)
	t.Deadline = pp.dur("deadline", 0)
	if pp.err != nil {
		return nil, pp.err
	}
	if t != (Timing{}) {
		p = timed{p, t}
	}
	for i, u := range pp.used {
		if !u {
			q := spec.Params[i]
			return nil, &PosError{q.Pos, fmt.Sprintf("%s has no parameter %q", spec.Name, q.Key)}
		}
	}
	return p, nil
}

// Timing overrides a hop's timing, which is the hop's, not a policy's: a
// spec may set attempt_timeout and deadline (for any model) where the
// recording cannot show them, e.g. a per-attempt timeout that no attempt
// ever reached. Zero fields keep the hop's.
type Timing struct {
	AttemptTimeout, Deadline time.Duration
}

// Timed is a Policy whose spec overrode the hop's timing.
type Timed interface {
	Policy
	Timing() Timing
}

type timed struct {
	Policy
	t Timing
}

func (t timed) Timing() Timing { return t.t }

// params reads a spec's parameters, remembering the first error.
type params struct {
	list []Param
	used []bool
	err  error
}

func (pp *params) get(key string) (Param, bool) {
	for i, p := range pp.list {
		if p.Key == key {
			pp.used[i] = true
			return p, true
		}
	}
	return Param{}, false
}

func (pp *params) fail(key, msg string) {
	if pp.err != nil {
		return
	}
	p, _ := pp.get(key)
	pp.err = &PosError{p.Pos, key + " " + msg}
}

func (pp *params) int(key string, def, lo int) int {
	p, ok := pp.get(key)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(p.Value)
	if err != nil || n < lo {
		pp.fail(key, fmt.Sprintf("wants an integer >= %d, got %q", lo, p.Value))
		return def
	}
	return n
}

func (pp *params) float(key string, def, lo, hi float64) float64 {
	p, ok := pp.get(key)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(p.Value, "%"), 64)
	if err != nil || f < lo || f > hi {
		pp.fail(key, fmt.Sprintf("wants a number in [%g, %g], got %q", lo, hi, p.Value))
		return def
	}
	return f
}

func (pp *params) dur(key string, def time.Duration) time.Duration {
	p, ok := pp.get(key)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(p.Value)
	if err != nil || d < 0 {
		pp.fail(key, fmt.Sprintf("wants a duration like 25ms, got %q", p.Value))
		return def
	}
	return d
}

func (pp *params) onOff(key string, def bool) bool {
	p, ok := pp.get(key)
	if !ok {
		return def
	}
	switch p.Value {
	case "none", "off", "false":
		return false
	case "on", "true":
		return true
	}
	pp.fail(key, fmt.Sprintf("wants on or none, got %q", p.Value))
	return def
}

// limit reads "limiter=N|none".
func (pp *params) limit(key string, def int) int {
	p, ok := pp.get(key)
	if !ok {
		return def
	}
	if p.Value == "none" || p.Value == "off" {
		return 0
	}
	n, err := strconv.Atoi(p.Value)
	if err != nil || n < 1 {
		pp.fail(key, fmt.Sprintf("wants slots >= 1 or none, got %q", p.Value))
		return def
	}
	return n
}

// budget reads budget=none|on and budget_earn, budget_cost, budget_cap.
func (pp *params) budget(def *BudgetRules) *BudgetRules {
	seed := BudgetRules{Earn: 1, Cost: 10, Cap: 200}
	var b *BudgetRules
	if def != nil {
		c := *def
		b = &c
	}
	if p, ok := pp.get("budget"); ok {
		switch p.Value {
		case "none", "off":
			b = nil
		case "on", "seed":
			if b == nil {
				b = &seed
			}
		default:
			pp.fail("budget", fmt.Sprintf("wants on or none, got %q", p.Value))
		}
	}
	for _, k := range []string{"budget_earn", "budget_cost", "budget_cap"} {
		if _, ok := pp.get(k); !ok {
			continue
		}
		if b == nil {
			c := seed
			b = &c
		}
		n := int64(pp.int(k, 0, 1))
		switch k {
		case "budget_earn":
			b.Earn = n
		case "budget_cost":
			b.Cost = n
		case "budget_cap":
			b.Cap = n
		}
	}
	return b
}

// backoff reads backoff=none|full_jitter|..., backoff_base, backoff_cap.
func (pp *params) backoff(def Backoff) Backoff {
	b := def
	if p, ok := pp.get("backoff"); ok {
		switch p.Value {
		case "none", "off":
			return Backoff{Kind: "none"}
		case "full_jitter", "envoy", "exponential_jitter":
			b.Kind = p.Value
		default:
			pp.fail("backoff", fmt.Sprintf("wants none, full_jitter, envoy or exponential_jitter, got %q", p.Value))
		}
	}
	if _, ok := pp.get("backoff_base"); ok {
		pp.used[pp.index("backoff_base")] = false
		b.Base = pp.dur("backoff_base", b.Base)
		if b.Kind == "" || b.Kind == "none" {
			b.Kind = "full_jitter"
		}
	}
	if _, ok := pp.get("backoff_cap"); ok {
		pp.used[pp.index("backoff_cap")] = false
		b.Cap = pp.dur("backoff_cap", b.Cap)
	}
	return b
}

func (pp *params) index(key string) int {
	for i, p := range pp.list {
		if p.Key == key {
			return i
		}
	}
	return -1
}
