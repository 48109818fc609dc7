package promapi

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/testpeer"
	"github.com/retrytop/retrytop/model"
)

// The backfilled scenario: job app with replicas scraped every second for
// bfSeconds seconds from bfStart, calling db (with a step in traffic, a
// series born mid-way, a replica restart and a replica that appears late)
// and cache (steady). Every counter is a sum of whole events per second,
// so what a scraper counts over any window of whole seconds is known
// exactly before Prometheus is started.
const (
	bfStart   = 1767225600 // 2026-01-01T00:00:00Z, Unix seconds
	bfSeconds = 240        // samples at bfStart+0 .. bfStart+239
	bfStepAt  = 60         // db's traffic steps up after this second
	bfNewAt   = 100        // a:1's timeout series is born at this second
	bfRestart = 150        // a:2 restarts just after its sample at this second
	bfLateAt  = 120        // a:3 answers from this second (up 0 before)

	// bfTolerance is the relative difference allowed from the exact
	// values. Every sample is a whole count at a whole second, Prometheus
	// returns values and times exactly (decimal strings of float64s,
	// timestamps in ms), and sums of whole counts below 2^53 are exact:
	// what remains is the rounding of one division, far below one event
	// in any window (over 1 % of the smallest window's count).
	bfTolerance = 1e-9
)

// bfReplica is one instance of app: weight multiplies every event rate
// (so a replica counted twice or not at all shows); born is the second
// of its first scrape that answered (its value then is a baseline).
type bfReplica struct {
	instance string
	weight   int
	born     int
}

var bfReplicas = []bfReplica{{"a:1", 1, 0}, {"a:2", 2, 0}, {"a:3", 3, bfLateAt}}

// bfSeries is one counter of every replica (only of only, when set):
// perSecond is the events it counts in the second ending at s.
type bfSeries struct {
	family, labels string
	only           string
	perSecond      func(s int) int
}

func bfStep(before, after int) func(int) int {
	return func(s int) int {
		if s <= bfStepAt {
			return before
		}
		return after
	}
}

var bfCounters = []bfSeries{
	{family: model.MetricOriginals, labels: `dependency="db",priority="critical"`, perSecond: bfStep(10, 20)},
	{family: model.MetricAttempts, labels: `dependency="db",outcome="success"`, perSecond: bfStep(10, 15)},
	{family: model.MetricAttempts, labels: `dependency="db",outcome="temporary_error"`, perSecond: bfStep(2, 20)},
	{family: model.MetricAttempts, labels: `dependency="db",outcome="timeout"`, only: "a:1", perSecond: func(s int) int {
		if s < bfNewAt {
			return 0
		}
		return 3
	}},
	{family: model.MetricOriginals, labels: `dependency="cache",priority="critical"`, perSecond: func(int) int { return 5 }},
	{family: model.MetricAttempts, labels: `dependency="cache",outcome="success"`, perSecond: func(int) int { return 5 }},
}

// events is what series counts on replica r in the second ending at s.
func (c bfSeries) events(r bfReplica, s int) int {
	if c.only != "" && c.only != r.instance {
		return 0
	}
	return r.weight * c.perSecond(s)
}

// value is the counter's value at s (ok false when it has no sample): a
// replica present from the start has counted 1000 events before; a:3
// counts from its start a second before it first answered, a:2 from 0
// again after its restart; a series whose first event comes later is
// created with it.
func (c bfSeries) value(r bfReplica, s int) (int, bool) {
	first := 0
	for first <= s && c.events(r, first) == 0 {
		first++
	}
	if s < r.born || first > s {
		return 0, false
	}
	from, v := -1, 1000 // v = v + the events in (from, s]
	switch {
	case r.born > 0:
		from, v = r.born-1, 0
	case r.instance == "a:2" && s > bfRestart:
		from, v = bfRestart, 0
	case first > 0:
		v = 0
	}
	for u := from + 1; u <= s; u++ {
		v += c.events(r, u)
	}
	return v, true
}

// bfOpenMetrics is the scenario as promtool reads it: every second, each
// replica's up (a:3 down before it answers) and counters.
func bfOpenMetrics() string {
	var b strings.Builder
	for s := range bfSeconds {
		for _, r := range bfReplicas {
			up := 1
			if s < r.born {
				up = 0
			}
			fmt.Fprintf(&b, "up{job=\"app\",instance=%q} %d %d\n", r.instance, up, bfStart+s)
			for _, c := range bfCounters {
				if v, ok := c.value(r, s); ok {
					fmt.Fprintf(&b, "%s{job=\"app\",instance=%q,%s} %d %d\n", c.family, r.instance, c.labels, v, bfStart+s)
				}
			}
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

// bfCounted is what a scraper counts of the series matching keep over
// the window (from, to] (seconds from bfStart): every event, except those
// in a replica's first answered scrape, which is its baseline.
func bfCounted(from, to int, keep func(bfSeries) bool) int {
	n := 0
	for _, c := range bfCounters {
		if !keep(c) {
			continue
		}
		for _, r := range bfReplicas {
			for s := max(from+1, r.born+1); s <= to; s++ {
				n += c.events(r, s)
			}
		}
	}
	return n
}

// TestBackfilledAgreement: a Source on a real Prometheus holding the
// backfilled scenario reads, over windows placed on its step, the new
// series, the restart and the late replica, exactly the rates and the
// amplification a scraper counts from the generator's events.
func TestBackfilledAgreement(t *testing.T) {
	// A bound on a hang, not on a number: nothing below is timed.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := testpeer.BackfilledPrometheus(t, ctx, bfOpenMetrics())

	const last = bfSeconds - 1
	src, err := New(Options{
		Client: ClientConfig{URL: base, Timeout: time.Minute},
		Step:   time.Second, Delay: -1,
		// One refresh at the scenario's last second loads it all from its
		// tenth (query_range on the 1 s grid of the samples).
		Clock:    func() time.Time { return time.Unix(bfStart+last, 0) },
		Backfill: (last - 10) * time.Second,
		Store:    model.NewStore(model.StoreConfig{History: 2 * bfSeconds}),
	})
	if err != nil {
		t.Fatal(err)
	}
	sts := src.Refresh(ctx)
	if !sts[0].Up || sts[0].LastError != "" {
		t.Fatalf("server status %+v", sts[0])
	}
	st := src.Store()
	if got := analysis.Dependencies(st, "app"); strings.Join(got, ",") != "cache,db" {
		t.Fatalf("app's dependencies %v, want cache and db", got)
	}

	family := func(f string) func(bfSeries) bool { return func(c bfSeries) bool { return c.family == f } }
	for _, w := range []struct {
		name     string
		from, to int
	}{
		{"whole", 10, last},
		{"before the step", 30, bfStepAt},
		{"across the step", 30, 90},
		{"new series", 90, 110},
		{"late replica", 110, 130},
		{"restart", 140, 160},
		{"after the restart", bfRestart + 1, last},
	} {
		for _, dep := range []string{"db", "cache"} {
			of := func(keep func(bfSeries) bool) func(bfSeries) bool {
				return func(c bfSeries) bool { return strings.HasPrefix(c.labels, `dependency="`+dep+`"`) && keep(c) }
			}
			outcome := func(o string) func(bfSeries) bool {
				return of(func(c bfSeries) bool { return strings.Contains(c.labels, `outcome="`+o+`"`) })
			}
			secs := float64(w.to - w.from)
			orig, att := bfCounted(w.from, w.to, of(family(model.MetricOriginals))), bfCounted(w.from, w.to, of(family(model.MetricAttempts)))
			want := []struct {
				what string
				want float64
			}{
				{"originals/s", float64(orig) / secs},
				{"attempts/s", float64(att) / secs},
				{"temporary errors/s", float64(bfCounted(w.from, w.to, outcome("temporary_error"))) / secs},
				{"timeouts/s", float64(bfCounted(w.from, w.to, outcome("timeout"))) / secs},
				{"amplification", float64(att) / float64(orig)},
			}
			sig := analysis.SignalsFor(st, "app", dep, (bfStart+int64(w.from))*1000, (bfStart+int64(w.to))*1000)
			got := map[string]model.Value{"originals/s": sig.OriginalsPerS, "attempts/s": sig.AttemptsPerS, "temporary errors/s": sig.TemporaryErrorsPerS, "timeouts/s": sig.TimeoutsPerS, "amplification": sig.Amplification}
			for _, x := range want {
				g := got[x.what]
				switch {
				case x.want == 0:
					// No such event in the window (cache's errors, db's
					// timeouts before the series is born): absent, or 0
					// where another series of the family seeds it.
					if g.OK() && g.V() != 0 {
						t.Errorf("%s window %ds..%ds, app -> %s %s: %v, want none", w.name, w.from, w.to, dep, x.what, g)
					}
				case !g.OK() || math.Abs(g.V()-x.want) > bfTolerance*x.want:
					t.Errorf("%s window %ds..%ds, app -> %s %s: %v, want %.6g", w.name, w.from, w.to, dep, x.what, g, x.want)
				}
			}
		}
	}
}
