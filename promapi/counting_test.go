package promapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// countingAPI answers like Prometheus for TestSourceCountsLikeAScraper.
// Per evaluation step: app's originals rise by 5 and its attempts by 3,
// and job late (from evaluation t0+2 on) its originals by 7. The clock
// query says app was last scraped 300 ms before each evaluation (but its
// newest scrape failed at t0+2, unless steady), late 600 ms. The attempts
// query fails at the evaluations attemptsFail.
type countingAPI struct {
	t0 float64
	// clockFailsAt, when set, is an evaluation whose clock query fails.
	clockFailsAt float64
	// steady: app's scrapes never fail.
	steady bool
	// attemptsFail are the evaluations (after t0) the attempts query
	// fails at, instant or the end of a range.
	attemptsFail []float64
	mu           sync.Mutex
	// ranges records the [start, end] of each attempts query_range.
	ranges [][2]float64
}

func (f *countingAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.FormValue("query")
	var times []float64
	ranged := r.URL.Path == "/api/v1/query_range"
	if ranged {
		start, _ := strconv.ParseFloat(r.FormValue("start"), 64)
		end, _ := strconv.ParseFloat(r.FormValue("end"), 64)
		step, _ := strconv.ParseFloat(r.FormValue("step"), 64)
		for t := start; t <= end+1e-9; t += step {
			times = append(times, t)
		}
	} else {
		t, _ := strconv.ParseFloat(r.FormValue("time"), 64)
		times = []float64{t}
	}
	type series struct {
		metric string
		value  func(t float64) (string, bool)
	}
	var out []series
	every := func(v string) func(float64) (string, bool) { return func(float64) (string, bool) { return v, true } }
	switch {
	case strings.HasPrefix(q, "avg by (job) (timestamp(up) and up == 1) or"):
		if f.clockFailsAt != 0 && !ranged && times[0] == f.clockFailsAt {
			http.Error(w, `{"status":"error","errorType":"timeout","error":"query timed out"}`, http.StatusServiceUnavailable)
			return
		}
		out = append(out,
			series{`{"job":"app"}`, func(t float64) (string, bool) {
				if t == f.t0+2 && !f.steady {
					return "-1", true // its newest scrape failed
				}
				return fmt.Sprintf("%.3f", t-0.3), true
			}},
			series{`{"job":"late"}`, func(t float64) (string, bool) { return fmt.Sprintf("%.3f", t-0.6), t >= f.t0+2 }})
	case strings.Contains(q, "(retry_originals_total "):
		out = append(out,
			series{`{"job":"app","dependency":"db","priority":"critical"}`, every("5")},
			series{`{"job":"late","dependency":"db","priority":"critical"}`, func(t float64) (string, bool) { return "7", t >= f.t0+2 }})
	case strings.Contains(q, "(retry_attempts_total "):
		if slices.Contains(f.attemptsFail, times[len(times)-1]-f.t0) {
			http.Error(w, `{"status":"error","errorType":"internal","error":"boom"}`, http.StatusInternalServerError)
			return
		}
		if ranged {
			f.mu.Lock()
			f.ranges = append(f.ranges, [2]float64{times[0], times[len(times)-1]})
			f.mu.Unlock()
		}
		out = append(out, series{`{"job":"app","dependency":"db","outcome":"success"}`, every("3")})
	}
	var res []string
	for _, s := range out {
		var pts []string
		for _, t := range times {
			if v, ok := s.value(t); ok {
				pts = append(pts, fmt.Sprintf("[%.3f,%q]", t, v))
			}
		}
		switch {
		case len(pts) == 0:
		case ranged:
			res = append(res, fmt.Sprintf(`{"metric":%s,"values":[%s]}`, s.metric, strings.Join(pts, ",")))
		default:
			res = append(res, fmt.Sprintf(`{"metric":%s,"value":%s}`, s.metric, pts[0]))
		}
	}
	typ := "vector"
	if ranged {
		typ = "matrix"
	}
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":%q,"result":[%s]}}`, typ, strings.Join(res, ","))
}

// TestSourceCountsLikeAScraper: each evaluation's increase adds to the
// synthetic counter, stored at the target's newest scrape time (the clock
// query); the Source's first evaluation is a bare baseline; a target new
// later gets its baseline one step before its first increase, so its
// first increase counts over its own span; a query that failed catches up
// on the step it missed at its next success, and its target stores nothing
// of the evaluation it failed at (TestSourceQueryFailsHoldsTarget).
func TestSourceCountsLikeAScraper(t *testing.T) {
	const t0 = 1700000000
	fake := &countingAPI{t0: t0, attemptsFail: []float64{3}}
	store := runCounting(t, fake, 5, "boom", func(i int) bool { return i == 3 })
	points := func(target, name string) string { return countingPoints(store, t0, target, name) }
	for _, c := range []struct{ target, name, want string }{
		// Baseline at t0 (scraped at t0-0.3 s), then +5 per step; nothing
		// at t0+2, whose scrape failed, nor at t0+3, where the attempts
		// query failed: their steps count at t0+4.
		{"app", model.MetricOriginals, "-300:0 +700:5 +3700:20"},
		// At t0+4 the step the attempts query missed is caught up.
		{"app", model.MetricAttempts, "-300:0 +700:3 +3700:12"},
		// New at t0+2: its baseline a step before (t0+1, scraped 0.6 s
		// earlier), then +7 per step.
		{"late", model.MetricOriginals, "+400:0 +1400:7 +2400:14 +3400:21"},
	} {
		if got := points(c.target, c.name); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.target, c.name, got, c.want)
		}
	}
	fake.mu.Lock()
	if len(fake.ranges) != 1 || fake.ranges[0] != [2]float64{t0 + 3, t0 + 4} {
		t.Errorf("attempts caught up with %v, want one query_range over t0+3..t0+4", fake.ranges)
	}
	fake.mu.Unlock()
	// Rates over each target's own span, as a scraper's.
	if v, ok := analysis.SignalsFor(store, "late", "db", (t0-10)*1000, (t0+10)*1000).OriginalsPerS.Get(); !ok || v != 7 {
		t.Errorf("late originals/s %v %v, want 7", v, ok)
	}
	if v, ok := analysis.SignalsFor(store, "app", "db", (t0-10)*1000, (t0+10)*1000).AttemptsPerS.Get(); !ok || v != 3 {
		t.Errorf("app attempts/s %v %v, want 3", v, ok)
	}
}

// TestSourceClockFails: when the clock query (each target's newest scrape
// time) fails at an evaluation, its samples are not stored at all, not at
// the evaluation's own time (300 ms after app's real scrape here): its
// increases land at the next evaluation, at that one's scrape time, so a
// rate over any window is the server's.
func TestSourceClockFails(t *testing.T) {
	const t0 = 1700000000
	store := runCounting(t, &countingAPI{t0: t0, clockFailsAt: t0 + 1}, 5, "scrape times (up)", func(i int) bool { return i == 1 })
	got := countingPoints(store, t0, "app", model.MetricOriginals)
	// Baseline at t0 (scraped 0.3 s before), +5 a step; t0+1's step
	// counted at t0+2's scrape; t0+2's own scrape failed (the fake's
	// clock says so), so its step is counted at t0+3.
	if want := "-300:0 +2700:15 +3700:20"; got != want {
		t.Errorf("app originals %s, want %s", got, want)
	}
	// Windows in ms after t0. [900, 3800] held the sample stored at
	// t0+1's evaluation time (+1000:5): 15 over 2.7 s, 5.56/s.
	for _, w := range [][2]int64{{-10000, 10000}, {-1000, 3000}, {900, 3800}, {2000, 4000}} {
		from, to := t0*1000+w[0], t0*1000+w[1]
		if v, ok := analysis.SignalsFor(store, "app", "db", from, to).OriginalsPerS.Get(); !ok || v != 5 {
			t.Errorf("app originals/s over [t0%+dms, t0%+dms] = %v %v, want the server's 5", w[0], w[1], v, ok)
		}
	}
}

// TestSourceQueryFailsHoldsTarget: a counter query that fails leaves no
// value of its series standing at a scrape time it was not read at. On its
// first failure the target stores nothing of that evaluation (its steps
// land at the next one); failing again, its series are absent while the
// rest of the target is stored. app's scrapes all work here (at t0+k-0.3 s),
// its originals rise 5 and its attempts 3 a step.
func TestSourceQueryFailsHoldsTarget(t *testing.T) {
	const t0 = 1700000000
	type window struct {
		from, to int64 // ms after t0
		want     string
	}
	for _, c := range []struct {
		name         string
		fails        []float64 // evaluations (after t0) the attempts query fails at
		origs, atts  string
		attemptsPerS []window
	}{{
		// Before: attempts 3 (counted through t0+1) stood at t0+2's
		// scrape: 4/s over [+1500, +4800], 1.5/s over [-1000, +2000].
		name:  "once",
		fails: []float64{2},
		origs: "-300:0 +700:5 +2700:15 +3700:20 +4700:25",
		atts:  "-300:0 +700:3 +2700:9 +3700:12 +4700:15",
		attemptsPerS: []window{
			{1500, 4800, "3"}, {-1000, 2000, "3"}, {-1000, 5000, "3"},
		},
	}, {
		// Before: attempts 3 stood at t0+2, t0+3 and t0+4: 0/s over
		// [+1500, +3800], a flat counter where nothing was read.
		name:  "again and again",
		fails: []float64{2, 3, 4},
		origs: "-300:0 +700:5 +2700:15 +3700:20 +4700:25",
		atts:  "-300:0 +700:3 +4700:15",
		attemptsPerS: []window{
			{1500, 3800, "absent"}, {-1000, 5000, "3"},
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			store := runCounting(t, &countingAPI{t0: t0, steady: true, attemptsFail: c.fails}, 6, "1 of 65 queries failed",
				func(i int) bool { return slices.Contains(c.fails, float64(i)) })
			points := func(name string) string { return countingPoints(store, t0, "app", name) }
			if got := points(model.MetricOriginals); got != c.origs {
				t.Errorf("originals %s, want %s", got, c.origs)
			}
			if got := points(model.MetricAttempts); got != c.atts {
				t.Errorf("attempts %s, want %s", got, c.atts)
			}
			for _, w := range c.attemptsPerS {
				v := analysis.SignalsFor(store, "app", "db", t0*1000+w.from, t0*1000+w.to).AttemptsPerS
				got := "absent"
				if v.OK() {
					got = fmt.Sprintf("%g", v.V())
				}
				if got != w.want {
					t.Errorf("attempts/s over [t0%+dms, t0%+dms] = %s, want %s", w.from, w.to, got, w.want)
				}
			}
		})
	}
}

// runCounting refreshes a Source over fake n times, one second apart from
// fake.t0, checking that the server status says status at exactly the
// evaluations failing names; it returns the Source's store.
func runCounting(t *testing.T, fake *countingAPI, n int, status string, failing func(i int) bool) *model.Store {
	t.Helper()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	now := time.Unix(int64(fake.t0), 0)
	src, err := New(Options{Delay: -1, Client: ClientConfig{URL: srv.URL}, Backfill: -1, Step: time.Second, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		st := src.Refresh(context.Background())
		if got := strings.Contains(st[0].LastError, status); got != failing(i) {
			t.Errorf("evaluation t0+%d: server status %q", i, st[0].LastError)
		}
		now = now.Add(time.Second)
	}
	return src.Store()
}

// countingPoints is target's series of name as "ms after t0:value".
func countingPoints(st *model.Store, t0 int64, target, name string) string {
	var out []string
	for _, s := range st.Select(target, name, nil) {
		for _, p := range s.Points {
			out = append(out, fmt.Sprintf("%+d:%g", p.T-t0*1000, p.V))
		}
	}
	return strings.Join(out, " ")
}
