package promapi

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// exactCounter is a counter of one target as a function of time (s): 0
// before born, then the integral of a rate that steps at stepAt.
type exactCounter struct {
	job, priority        string
	born, stepAt         float64
	before, after        float64 // rates (1/s)
	failFrom, failBefore float64 // the server fails queries evaluated in [failFrom, failBefore)
	missed               float64 // a scrape time without a sample (0: none)
}

func (c exactCounter) at(t float64) float64 {
	if t <= c.born {
		return 0
	}
	if t <= c.stepAt {
		return c.before * (t - c.born)
	}
	return c.before*(max(c.stepAt, c.born)-c.born) + c.after*(t-max(c.stepAt, c.born))
}

// exactAPI answers increase(retry_originals_total[d]) at t with the exact
// increase of each counter over (t-d, t] when, as in Prometheus, the
// counter has two samples in it (scraped at every whole second + 0.5 from
// its birth), so that the Source's rates can be checked against the
// counters' to the last digit; /api/v1/targets says every target is
// scraped every second.
type exactAPI struct{ counters []exactCounter }

func (f exactAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/api/v1/targets" {
		fmt.Fprint(w, `{"status":"success","data":{"activeTargets":[{"labels":{"job":"app"},"scrapeInterval":"1s"}]}}`)
		return
	}
	q := r.FormValue("query")
	m := spanRe.FindStringSubmatch(q)
	var times []float64
	typ := "vector"
	if r.URL.Path == "/api/v1/query_range" {
		typ = "matrix"
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
	var result []string
	if m != nil && strings.Contains(q, "increase(retry_originals_total[") {
		d, _ := time.ParseDuration(m[1])
		for _, c := range f.counters {
			var pts []string
			for _, t := range times {
				if t >= c.failFrom && t < c.failBefore {
					w.WriteHeader(http.StatusServiceUnavailable)
					fmt.Fprint(w, `{"status":"error","errorType":"unavailable","error":"down"}`)
					return
				}
				n := 0
				for s := math.Floor(t-d.Seconds()) + 0.5; s <= t; s++ {
					if s > t-d.Seconds() && s >= c.born && s != c.missed {
						n++
					}
				}
				if n >= 2 {
					pts = append(pts, fmt.Sprintf(`[%.3f,"%v"]`, t, c.at(t)-c.at(t-d.Seconds())))
				}
			}
			if len(pts) == 0 {
				continue
			}
			metric := fmt.Sprintf(`{"job":%q,"dependency":"db","priority":%q}`, c.job, c.priority)
			if typ == "vector" {
				result = append(result, fmt.Sprintf(`{"metric":%s,"value":%s}`, metric, pts[0]))
			} else {
				result = append(result, fmt.Sprintf(`{"metric":%s,"values":[%s]}`, metric, strings.Join(pts, ",")))
			}
		}
	}
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":%q,"result":[%s]}}`, typ, strings.Join(result, ","))
}

// TestSourceRatesAreExactOverSpans: with a server whose increase() is
// exact, the Source's rate over any window of its refreshes is the
// counter's rate over the time the series has data, to 1e-6: no range/2
// lag at a step change just before the window ends, a target that appears
// mid-window counts from its first refresh (its rate not diluted by the
// time before it existed), a gap of failed queries is spanned by the next
// evaluation, a series created after its target's first refresh counts from
// 0 even when its first sample fell alone into a span, a span left with one
// sample by a missed scrape is recovered, and a backfill
// tiles its history the same way. The range is
// learned from the server: 2 s for its 1 s scrape interval.
func TestSourceRatesAreExactOverSpans(t *testing.T) {
	const t0 = 1700000000.0
	for _, tt := range []struct {
		name     string
		c        exactCounter
		more     []exactCounter // of the same target
		backfill time.Duration
		// want: the first stored time of the target, the window's rate
		firstAt float64
		want    float64
	}{
		{"steady", exactCounter{born: t0 - 100, stepAt: math.Inf(1), before: 10}, nil, -1, t0, 10},
		// The rate triples 2.5 s before the window ends: 20 s at 10/s and
		// 2.5 s at 30/s over 22.5 s.
		{"step before the end", exactCounter{born: t0 - 100, stepAt: t0 + 19.5, before: 10, after: 30}, nil, -1, t0, (19.5*10 + 2.5*30) / 22},
		// Born 6.5 s in: its baseline is the first refresh after it
		// that spans from the newest anchor (t0+8; t0+7 spans from the
		// one before); 20/s from there.
		{"new target", exactCounter{born: t0 + 6.5, stepAt: math.Inf(1), before: 20}, nil, -1, t0 + 8, 20},
		// A series created at 0 at t0+9.2 in a target already read: its
		// first sample (t0+9.5) is alone in the span (t0+8, t0+10], so
		// the span from t0+10 misses its first 16 events; the Source asks
		// again from t0+8 for it, and every event counts.
		{"new series", exactCounter{born: t0 - 100, stepAt: math.Inf(1), before: 10},
			[]exactCounter{{priority: "batch", born: t0 + 9.2, stepAt: math.Inf(1), before: 20}}, -1, t0, 10 + 20*(22-9.2)/22},
		// Queries fail from t0+8 to t0+12 while the rate doubles: the
		// evaluation at t0+12 spans the gap.
		{"gap", exactCounter{born: t0 - 100, stepAt: t0 + 10, before: 10, after: 20, failFrom: t0 + 8, failBefore: t0 + 12}, nil, -1, t0, (10*10 + 12*20) / 22.0},
		// The scrape at t0+9.5 is missed: the span (t0+8, t0+10] has one
		// sample and no result; the evaluation from t0+10 asks again from
		// t0+8, so the span's increase is not lost.
		{"missed scrape", exactCounter{born: t0 - 100, stepAt: math.Inf(1), before: 10, missed: t0 + 9.5}, nil, -1, t0, 10},
		// Backfill of 10 s tiled by 2 s from t0-10, then refreshes.
		{"backfill", exactCounter{born: t0 - 100, stepAt: t0 + 19.5, before: 10, after: 30}, nil, 10 * time.Second, t0 - 10, (29.5*10 + 2.5*30) / 32},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs := append([]exactCounter{tt.c}, tt.more...)
			for i := range cs {
				cs[i].job = "app"
				if cs[i].priority == "" {
					cs[i].priority = "critical"
				}
			}
			srv := httptest.NewServer(exactAPI{counters: cs})
			defer srv.Close()
			var mu sync.Mutex
			now := time.Unix(t0, 0)
			src, err := New(Options{Client: ClientConfig{URL: srv.URL}, Step: time.Second, Backfill: tt.backfill,
				Clock: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
			if err != nil {
				t.Fatal(err)
			}
			for range 23 {
				src.Refresh(context.Background())
				mu.Lock()
				now = now.Add(time.Second)
				mu.Unlock()
			}
			if got := src.Range(); got != 2*time.Second {
				t.Errorf("range %v, want 2s (twice the 1 s scrape interval)", got)
			}
			st := src.Store()
			times := st.Times("app")
			if len(times) == 0 || times[0] != int64(tt.firstAt*1000) {
				t.Fatalf("times %v, want the first at %.0f", times, tt.firstAt*1000)
			}
			from, to := times[0], int64((t0+22)*1000)
			sig := analysis.SignalsFor(st, "app", "db", from, to)
			got, ok := sig.OriginalsPerS.Get()
			// Unix seconds as float64 carry about 1e-7 s.
			if !ok || math.Abs(got-tt.want) > 1e-6 {
				t.Errorf("originals/s %v, want %.9g", sig.OriginalsPerS, tt.want)
			}
			// The stored counter never decreases, and once stored a
			// series has a sample at every later refresh: none waits
			// at evaluations from the older anchor.
			for _, s := range st.Select("app", model.MetricOriginals, nil) {
				if n := len(s.Points); n == 0 || len(times) < n || s.Points[0].T != times[len(times)-n] {
					t.Errorf("%s: %d samples from %v, the target has %d times", s.Labels, n, s.Points, len(times))
				}
				for i := 1; i < len(s.Points); i++ {
					if s.Points[i].V < s.Points[i-1].V {
						t.Errorf("counter went down at %d: %v", s.Points[i].T, s.Points)
					}
				}
			}
		})
	}
}
