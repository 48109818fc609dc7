package promapi

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// How far two readers' numbers over one window may differ, from what the
// target counted around the window's ends.
//
// Each reader's rate over a window is a counter's increase between its own
// first and last samples in the window, divided by the time between them
// (analysis.rangeWindow). The two readers sample at different moments
// (Prometheus at its own scrape offset, the direct scraper on the test's
// ticks), and a value is read when the target answers, up to the longest
// scrape (the skew) after its sample's stamp. So at each end the two
// increases stop at different moments, and what the target counted
// between those moments is the whole difference. A step change at the
// window's end (the slowdown starting) moves the two numbers apart by
// exactly that, a burst of timeouts between the two moments reaching one
// reader and not the other.
//
// A ruler measures it: a third scraper of the same targets every
// rulerEvery, whose store brackets each pair of moments by its own samples
// (between). The bound is then derived per end and is as tight as the
// ruler is dense: about a tenth of a scrape interval of traffic in steady
// state, what was counted around the end in a step.

// rulerEvery is how often the ruler scrapes at most: a tenth of the
// readers' 1 s, so a bracket holds about two tenths of a second more than
// the gap between the two readers' moments.
const rulerEvery = 100 * time.Millisecond

// startRuler scrapes targets into its own store until ctx ends; it
// returns the store and its scrapes' lags. It waits rulerEvery between
// scrapes, or three times as long as its last scrape took when that is
// longer: on a busy machine (-race beside a CPU hog) ten scrapes a second
// of every target would take the sim's cores from the system under test;
// backing off leaves it most of them and only widens the brackets, which
// the bound then counts.
func startRuler(ctx context.Context, wg *sync.WaitGroup, targets []scrape.Target, opts scrape.Options) (*model.Store, *lags) {
	r := scrape.NewScraper(targets, model.NewStore(model.StoreConfig{History: 3600}), opts)
	l := &lags{}
	wg.Go(func() {
		for {
			start := time.Now()
			l.note(r.ScrapeOnce(ctx))
			select {
			case <-ctx.Done():
				return
			case <-time.After(max(rulerEvery-time.Since(start), 2*time.Since(start))):
			}
		}
	})
	return r.Store(), l
}

// prometheusLags reads how long each of Prometheus' scrapes took over the
// span before at (scrape_duration_seconds, whose samples are stamped
// with the scrape's time as the target's), by job. When the query fails
// every lag is the scrape timeout of startPrometheus' configuration (1 s),
// the longest a scrape that stored samples can have taken.
func prometheusLags(ctx context.Context, base string, at time.Time, span time.Duration) *lags {
	l := &lags{max: time.Second}
	cl, err := NewClient(ClientConfig{URL: base, Timeout: 5 * time.Second})
	if err != nil {
		return l
	}
	r, err := cl.Query(ctx, "scrape_duration_seconds["+dialect.PromDuration(span)+"]", at)
	if err != nil {
		return l
	}
	l.max = 0
	for _, ser := range r.Series {
		for _, p := range ser.Points {
			l.add(ser.Labels.Get("job"), p.T, time.Duration(p.V*float64(time.Second)))
		}
	}
	return l
}

// counter reads one counter of a target from a store: rate is its rate
// over the samples inside [from, to] (nil-safe Value), total its value at
// a scrape since it began (nil when unknown).
type counter struct {
	rate  func(st *model.Store, from, to int64) model.Value
	total func(st *model.Store, at int64) (float64, bool)
}

// sampleSpan is the first and last of times inside [from, to].
func sampleSpan(times []int64, from, to int64) (first, last int64, ok bool) {
	for _, ts := range times {
		if ts < from || ts > to {
			continue
		}
		if !ok {
			first, ok = ts, true
		}
		last = ts
	}
	return first, last, ok
}

// between bounds D = C(when a's sample stamped ta was read) - C(when b's
// stamped tb was read) for the counter c: low <= D <= high. Each sample
// was read between its stamp and its scrape's lag later. The ruler's
// increase between its last sample read surely before both moments and
// its first read surely after both bounds |D| from above; when one moment
// is surely the later, the ruler's increase between its first sample read
// surely after the earlier and its last read surely before the later
// bounds it from below. Before the counter's first sample in the ruler, a
// counter that started from 0 (a process that just started) counted at
// most its value since (total). ok is false when nothing bounds D.
func between(r readers, target string, c counter, ta, tb int64) (low, high float64, ok bool) {
	la, lb := r.aLags.of(target, ta), r.bLags.of(target, tb)
	early, late := min(ta, tb), max(ta+la, tb+lb)
	outLo, outHi := int64(math.MinInt64), int64(math.MaxInt64)
	for _, s := range r.ruler.Times(target) {
		if s+r.rulerLags.of(target, s) <= early {
			outLo = max(outLo, s)
		}
		if s >= late {
			outHi = min(outHi, s)
		}
	}
	count := func(from, to int64) (float64, bool) {
		v := c.rate(r.ruler, from, to)
		return v.V * float64(to-from) / 1000, v.OK
	}
	var outer float64
	switch {
	case outHi == math.MaxInt64:
		return 0, 0, false
	case outLo == math.MinInt64:
		if c.total == nil {
			return 0, 0, false
		}
		if outer, ok = c.total(r.ruler, outHi); !ok {
			return 0, 0, false
		}
	default:
		if outer, ok = count(outLo, outHi); !ok {
			return 0, 0, false
		}
	}
	// inner is what was surely counted between the moments [from, to]
	// (from read surely before... the ruler's samples inside).
	inner := func(from, to int64) float64 {
		inLo, inHi := int64(math.MaxInt64), int64(math.MinInt64)
		for _, s := range r.ruler.Times(target) {
			if s >= from {
				inLo = min(inLo, s)
			}
			if s+r.rulerLags.of(target, s) <= to {
				inHi = max(inHi, s)
			}
		}
		if inLo >= inHi {
			return 0
		}
		v, _ := count(inLo, inHi)
		return v
	}
	switch {
	case ta >= tb+lb: // a's reading surely after b's
		return inner(tb+lb, ta), outer, true
	case tb >= ta+la:
		return -outer, -inner(ta+la, tb), true
	}
	return -outer, outer, true
}

// endTerm is the largest |n - k*d| over n in [nLo, nHi] and d in [dLo, dHi].
func endTerm(nLo, nHi, k, dLo, dHi float64) float64 {
	return math.Max(math.Max(math.Abs(nLo-k*dLo), math.Abs(nLo-k*dHi)), math.Max(math.Abs(nHi-k*dLo), math.Abs(nHi-k*dHi)))
}

// readers are the two stores compared (a: scraped directly; b: through
// Prometheus) and the ruler's, with each one's scrape lags.
type readers struct {
	a, b, ruler             *model.Store
	aLags, bLags, rulerLags *lags
}

// spans returns each reader's first and last samples of target in [f, e].
func (r readers) spans(t *testing.T, what, target string, f, e int64) (fa, ea, fb, eb int64, ok bool) {
	t.Helper()
	fa, ea, okA := sampleSpan(r.a.Times(target), f, e)
	fb, eb, okB := sampleSpan(r.b.Times(target), f, e)
	if !okA || !okB || ea == fa {
		t.Errorf("%s: the readers have no span in the window (direct %v, prometheus %v)", what, okA, okB)
		return 0, 0, 0, 0, false
	}
	return fa, ea, fb, eb, true
}

// compareRate checks that counter c's rate read directly (a) and through
// Prometheus (b) over [from, to] agree within 3 % and what the sampling
// allows. With C the increases and T the spans between each reader's
// first and last samples, D the differences of what was counted at each
// end (between) and Δ the differences of the samples' stamps:
//
//	r_a - r_b = ((D_end - r_b Δ_end) - (D_start - r_b Δ_start)) / T_a
//
// (the skew is in D: a stamp is not its reading's moment). 0.1/s more: a
// count is whole.
func compareRate(t *testing.T, what string, c counter, r readers, target string, from, to time.Time) {
	t.Helper()
	f, e := from.UnixMilli(), to.UnixMilli()
	va, vb := c.rate(r.a, f, e), c.rate(r.b, f, e)
	if !va.OK || !vb.OK {
		t.Errorf("%s: direct %v, prometheus %v", what, va, vb)
		return
	}
	fa, ea, fb, eb, ok := r.spans(t, what, target, f, e)
	if !ok {
		return
	}
	sLo, sHi, ok1 := between(r, target, c, fa, fb)
	eLo, eHi, ok2 := between(r, target, c, ea, eb)
	if !ok1 || !ok2 {
		t.Errorf("%s: the ruler does not bracket the readers' ends (first %d/%d, last %d/%d)", what, fa, fb, ea, eb)
		return
	}
	ta := float64(ea-fa) / 1000
	start := endTerm(sLo, sHi, vb.V, float64(fa-fb)/1000, float64(fa-fb)/1000)
	end := endTerm(eLo, eHi, vb.V, float64(ea-eb)/1000, float64(ea-eb)/1000)
	sampling := (start + end) / ta
	allowed := 0.03*math.Max(math.Abs(va.V), math.Abs(vb.V)) + sampling + 0.1
	t.Logf("%s: direct %.4g, prometheus %.4g (allowed %.3g, of it %.3g from the sampling: stamps %+d/%+d ms apart, counted between %.3g..%.3g / %.3g..%.3g)",
		what, va.V, vb.V, allowed, sampling, fa-fb, ea-eb, sLo, sHi, eLo, eHi)
	if math.Abs(va.V-vb.V) > allowed {
		t.Errorf("%s: direct %.4g, prometheus %.4g: differ by more than %.3g (3 %% and the sampling bound)", what, va.V, vb.V, allowed)
	}
}

// compareRatio checks a ratio of two counters' increases over one window
// (amplification: attempts over originals) the same way: with N and D the
// increases,
//
//	N_a/D_a - N_b/D_b = ((N_a - N_b) - (N_b/D_b)(D_a - D_b)) / D_a
//
// and N_a - N_b (D_a - D_b) the difference of what was counted at the end
// less that at the start.
func compareRatio(t *testing.T, what string, ratio func(st *model.Store, from, to int64) model.Value, num, den counter, r readers, target string, from, to time.Time) {
	t.Helper()
	f, e := from.UnixMilli(), to.UnixMilli()
	ra, rb := ratio(r.a, f, e), ratio(r.b, f, e)
	da := den.rate(r.a, f, e)
	if !ra.OK || !rb.OK || !da.OK || da.V == 0 {
		t.Errorf("%s: direct %v, prometheus %v (direct denominator %v)", what, ra, rb, da)
		return
	}
	fa, ea, fb, eb, ok := r.spans(t, what, target, f, e)
	if !ok {
		return
	}
	term := func(ta, tb int64) (float64, bool) {
		nLo, nHi, ok1 := between(r, target, num, ta, tb)
		dLo, dHi, ok2 := between(r, target, den, ta, tb)
		return endTerm(nLo, nHi, rb.V, dLo, dHi), ok1 && ok2
	}
	start, ok1 := term(fa, fb)
	end, ok2 := term(ea, eb)
	if !ok1 || !ok2 {
		t.Errorf("%s: the ruler does not bracket the readers' ends (first %d/%d, last %d/%d)", what, fa, fb, ea, eb)
		return
	}
	sampling := (start + end) / (da.V * float64(ea-fa) / 1000)
	allowed := 0.03*math.Max(ra.V, rb.V) + sampling
	t.Logf("%s: direct %.4g, prometheus %.4g (allowed %.3g, of it %.3g from the sampling)", what, ra.V, rb.V, allowed, sampling)
	if math.Abs(ra.V-rb.V) > allowed {
		t.Errorf("%s: direct %.4g, prometheus %.4g: differ by more than %.3g (3 %% and the sampling bound)", what, ra.V, rb.V, allowed)
	}
}

// contractCounter is a counter of the metric contract read through
// analysis' signals for one dependency: get picks its rate; family, when
// not "", is the family whose series of the dependency sum to it (for
// total).
func contractCounter(target, dep, family string, get func(model.Signals) model.Value) counter {
	c := counter{rate: func(st *model.Store, from, to int64) model.Value {
		return get(analysis.SignalsFor(st, target, dep, from, to))
	}}
	if family != "" {
		c.total = func(st *model.Store, at int64) (float64, bool) {
			sum, found := 0.0, false
			for _, s := range st.Select(target, family, func(ls model.Labels) bool { return ls.Get(model.LabelDependency) == dep }) {
				for _, p := range s.Points {
					if p.T == at {
						sum, found = sum+p.V, true
					}
				}
			}
			return sum, found
		}
	}
	return c
}

// amplificationParts are the rates amplification divides for s's basis
// (analysis.deriveRatios), each a single counter's, with the family
// holding it ("" when it is not one family's sum); ok is false for a basis
// whose denominator is a difference of counters.
func amplificationParts(s model.Signals) (num, den func(model.Signals) model.Value, numFamily, denFamily string, ok bool) {
	attempts := func(s model.Signals) model.Value { return s.AttemptsPerS }
	admitted := func(s model.Signals) model.Value { return s.AdmittedPerS }
	switch s.AmplificationBasis {
	case model.AmplificationOperations:
		return func(s model.Signals) model.Value { return s.OperationAttemptsPerS }, admitted, model.MetricOperationAttempts, "", true
	case model.AmplificationAdmitted:
		return attempts, admitted, model.MetricAttempts, "", true
	case model.AmplificationStarted:
		if !s.AdmissionRejectedPerS.OK {
			return attempts, func(s model.Signals) model.Value { return s.OriginalsPerS }, model.MetricAttempts, model.MetricOriginals, true
		}
	}
	return nil, nil, "", "", false
}
