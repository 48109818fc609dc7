package policy

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// CheckOptions are the conditions a policy chain is checked under. Zero
// fields take the defaults in parentheses.
type CheckOptions struct {
	// Rate is the user's originals per second at the first layer (50, the
	// demo's).
	Rate float64
	// Latency is a successful attempt's duration at the provider (20 ms);
	// FailureLatency a failed one's (0: an answered error is quick). Only
	// Envoy's budget depends on them (requests in flight).
	Latency, FailureLatency time.Duration
	// Timeouts makes the provider's failures timeouts instead of answered
	// errors: AWS's timeout cost, gRPC's retry_timeouts.
	Timeouts bool
	// Steps is how many steps p takes from 0 to 1 (20: every 5 %).
	Steps int
	// MaxAmplification, when above 1, asks for each layer the settings
	// that keep the chain's steady state under it at every p.
	MaxAmplification float64
	// Base is the hop a model without a published attempt cap or backoff
	// takes them from (3 attempts, no backoff, no limiter, no budget).
	Base *Base
	// Bases, when set, is that hop per layer, caller first (a recording's
	// fitted hops); a layer past its end takes Base.
	Bases []Base
}

func (o CheckOptions) withDefaults() CheckOptions {
	if o.Rate <= 0 {
		o.Rate = 50
	}
	if o.Latency <= 0 {
		o.Latency = 20 * time.Millisecond
	}
	if o.Steps <= 0 {
		o.Steps = 20
	}
	if o.Base == nil {
		o.Base = &Base{MaxAttempts: 3, Backoff: Backoff{Kind: "none"}}
	}
	return o
}

// Check is a chain's amplification as a function of the provider's failure
// fraction: what `retrytop policy check` prints.
type Check struct {
	Options CheckOptions
	// Layers run from the caller to the callee; the last calls the provider.
	Layers []CheckLayer
	// Points has one entry per p, from 0 to 1.
	Points []CheckPoint
	// Settings has one entry per layer when Options.MaxAmplification > 1.
	Settings [][]Setting
}

// CheckLayer is one layer's policy as checked.
type CheckLayer struct {
	// Spec is the policy's text as given, Model its model.
	Spec, Model string
	// MaxAttempts is its attempt cap, the first try included.
	MaxAttempts int
	// Budget says what bounds its retries over time; Note what the check
	// leaves out of it (e.g. an admission limiter).
	Budget, Note string
}

// CheckPoint is the chain at one failure fraction of the provider.
type CheckPoint struct {
	// P is the fraction of the provider's attempts that fail.
	P float64
	// Steady are the attempts per original at each layer with budgets and
	// throttles at equilibrium; Worst with budgets full at the start of an
	// outage (only the attempt caps bound them). NaN is unknown: a
	// steady state with no single equilibrium (SRE at p = 1 - 1/K).
	Steady, Worst []float64
	// SteadyLoad and WorstLoad are their products: the attempts that reach
	// the provider per user original, the provider's load multiplier.
	SteadyLoad, WorstLoad float64
	// Lasts is, per layer, how long a full budget keeps allowing every
	// retry at this p (nil: no budget, or it never runs dry).
	Lasts []*Lasts
}

// Lasts is how long a full budget lasts: the originals of its layer and
// the seconds they take at the layer's rate.
type Lasts struct {
	Originals, Seconds float64
}

// Setting is one parameter of a layer's model and the bound on it that
// keeps the chain under the target at every p, the other layers as given.
type Setting struct {
	Key string
	// Current is the value in force.
	Current float64
	// Bound is "at_most" or "at_least" Value; "any" when every value in
	// [Lo, Hi] keeps it; "none" when none does.
	Bound      string
	Value      float64
	Lo, Hi     float64
	Integer    bool
	CurrentsOK bool
}

// checker is the analytic side of one model.
type checker interface {
	// steady is the attempts per original at failure fraction p of the
	// attempts, in equilibrium.
	steady(p float64, e env) float64
	// lasts is the originals a full budget allows every retry for at p
	// (ok false: no budget, or it never runs dry).
	lasts(p float64, e env) (float64, bool)
	// describe says what bounds the retries and what is left out.
	describe() (budget, note string)
	// knobs are the parameters a target amplification can be met with.
	knobs() []knob
}

// env is what a layer's equilibrium depends on besides p.
type env struct {
	rate     float64 // originals per second at this layer
	attempt  float64 // an attempt's mean duration, seconds
	timeouts bool
}

// knob is one parameter a search may move.
type knob struct {
	key     string
	lo, hi  float64
	integer bool
	get     func() float64
	set     func(float64)
}

// CheckChain checks a chain of policies, caller first.
func CheckChain(specs []Spec, o CheckOptions) (*Check, error) {
	if len(specs) == 0 {
		return nil, errors.New("policy check: no policy")
	}
	o = o.withDefaults()
	c := &Check{Options: o}
	var ms []checker
	var caps []int
	for i, s := range specs {
		base := *o.Base
		if i < len(o.Bases) {
			base = o.Bases[i]
		}
		p, err := New(s, base, func(int64) int64 { return 0 })
		if err != nil {
			return nil, err
		}
		m, err := checkerOf(p)
		if err != nil {
			return nil, err
		}
		b, n := m.describe()
		c.Layers = append(c.Layers, CheckLayer{Spec: s.Text, Model: p.Name(), MaxAttempts: p.MaxAttempts(), Budget: b, Note: n})
		ms = append(ms, m)
		caps = append(caps, p.MaxAttempts())
	}
	ch := chain{ms: ms, caps: caps, o: o}
	for i := 0; i <= o.Steps; i++ {
		c.Points = append(c.Points, ch.point(float64(i)/float64(o.Steps)))
	}
	if o.MaxAmplification > 1 {
		for i := range ms {
			c.Settings = append(c.Settings, ch.settings(i))
		}
	}
	return c, nil
}

// chain evaluates layers caller first.
type chain struct {
	ms   []checker
	caps []int
	o    CheckOptions
}

// point is the chain at provider failure fraction p.
func (ch chain) point(p float64) CheckPoint {
	pt := CheckPoint{P: p}
	var envs []env
	pt.Steady, _ = ch.eval(p, true)
	pt.Worst, envs = ch.eval(p, false)
	pt.SteadyLoad, pt.WorstLoad = product(pt.Steady), product(pt.Worst)
	f := p
	pt.Lasts = make([]*Lasts, len(ch.ms))
	for i := len(ch.ms) - 1; i >= 0; i-- {
		if n, ok := ch.ms[i].lasts(f, envs[i]); ok {
			pt.Lasts[i] = &Lasts{Originals: n, Seconds: n / envs[i].rate}
		}
		f = opFailure(pt.Worst[i], f)
	}
	return pt
}

func product(xs []float64) float64 {
	r := 1.0
	for _, x := range xs {
		r *= x
	}
	return r
}

// opFailure is the fraction of a layer's operations that fail when it
// makes a attempts per original and each fails with probability p: every
// failed attempt is either retried or ends its operation.
func opFailure(a, p float64) float64 { return min(max(1-a*(1-p), 0), 1) }

// capped is the attempts per original of a cap of n attempts alone:
// 1 + p + ... + p^(n-1).
func capped(n int, p float64) float64 {
	s, t := 0.0, 1.0
	for range n {
		s += t
		t *= p
	}
	return s
}

// eval is the attempts per original at each layer. The failure fraction
// runs up from the provider, the rate down from the user; a few rounds
// settle both.
func (ch chain) eval(p float64, steady bool) ([]float64, []env) {
	n := len(ch.ms)
	att := make([]float64, n)
	envs := make([]env, n)
	for i := range envs {
		envs[i] = env{rate: ch.o.Rate, timeouts: ch.o.Timeouts}
	}
	lat, flat := ch.o.Latency.Seconds(), ch.o.FailureLatency.Seconds()
	for range 40 {
		f := p
		d := (1-p)*lat + p*flat
		for i := n - 1; i >= 0; i-- {
			envs[i].attempt = d
			if steady {
				att[i] = ch.ms[i].steady(f, envs[i])
			} else {
				att[i] = capped(ch.caps[i], f)
			}
			f = opFailure(att[i], f)
			d *= att[i]
		}
		for i := 1; i < n; i++ {
			envs[i].rate = envs[i-1].rate * att[i-1]
		}
	}
	return att, envs
}

// maxSteady is the chain's highest steady-state load over the p grid.
func (ch chain) maxSteady() float64 {
	m := 0.0
	for i := 0; i <= ch.o.Steps; i++ {
		p := float64(i) / float64(ch.o.Steps)
		a, _ := ch.eval(p, true)
		l := product(a)
		if math.IsNaN(l) {
			// An equilibrium the check cannot place: its highest.
			a, _ = ch.eval(p, false)
			l = product(a)
		}
		m = max(m, l)
	}
	return m
}

// settings searches each knob of layer i for the bound that keeps the
// chain's steady state at or under the target at every p.
func (ch chain) settings(i int) []Setting {
	var out []Setting
	target := ch.o.MaxAmplification
	ok := func() bool { return ch.maxSteady() <= target*(1+1e-9) }
	for _, k := range ch.ms[i].knobs() {
		cur := k.get()
		s := Setting{Key: k.key, Current: cur, Lo: k.lo, Hi: k.hi, Integer: k.integer}
		s.CurrentsOK = ok()
		k.set(k.lo)
		loOK := ok()
		k.set(k.hi)
		hiOK := ok()
		switch {
		case loOK && hiOK:
			s.Bound = "any"
		case !loOK && !hiOK:
			s.Bound = "none"
		default:
			good, bad := k.lo, k.hi
			s.Bound = "at_most"
			if hiOK {
				good, bad = k.hi, k.lo
				s.Bound = "at_least"
			}
			for range 60 {
				mid := (good + bad) / 2
				if k.integer {
					if math.Abs(good-bad) <= 1 {
						break
					}
					mid = math.Round(mid)
				} else if math.Abs(good-bad) <= 1e-4*max(1, math.Abs(good)) {
					break
				}
				k.set(mid)
				if ok() {
					good = mid
				} else {
					bad = mid
				}
			}
			s.Value = good
		}
		k.set(cur)
		out = append(out, s)
	}
	return out
}

// checkerOf returns the analytic side of a policy built by New.
func checkerOf(p Policy) (checker, error) {
	switch m := p.(type) {
	case timed:
		return checkerOf(m.Policy)
	case *Owner:
		return ownerCheck{m}, nil
	case *Envoy:
		return envoyCheck{m}, nil
	case *Finagle:
		return finagleCheck{m}, nil
	case *GRPC:
		return grpcCheck{m}, nil
	case *SRE:
		return sreCheck{m}, nil
	case *AWS:
		return awsCheck{m}, nil
	}
	return nil, fmt.Errorf("policy check: no analysis of model %q", p.Name())
}

// drainFor is the originals a balance lasts when each original takes
// drain from it (ok false when it does not drain).
func drainFor(balance, drain float64) (float64, bool) {
	if drain <= 1e-12 {
		return 0, false
	}
	return balance / drain, true
}

func intKnob(key string, lo, hi int, v *int) knob {
	return knob{key: key, lo: float64(lo), hi: float64(hi), integer: true,
		get: func() float64 { return float64(*v) }, set: func(x float64) { *v = int(math.Round(x)) }}
}

func int64Knob(key string, lo, hi int64, scale float64, v *int64) knob {
	return knob{key: key, lo: float64(lo) / scale, hi: float64(hi) / scale, integer: scale == 1,
		get: func() float64 { return float64(*v) / scale }, set: func(x float64) { *v = int64(math.Round(x * scale)) }}
}

func floatKnob(key string, lo, hi float64, v *float64) knob {
	return knob{key: key, lo: lo, hi: hi, get: func() float64 { return *v }, set: func(x float64) { *v = x }}
}
