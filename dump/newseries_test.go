package dump_test

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
)

// lazyStream is one counter series of the lazy emitter: events at rate per
// second from from seconds on, the series created on its first event (at
// from + 1/rate), as client libraries create a labelled child.
type lazyStream struct {
	metric, upstream, label, value string
	from, rate                     float64
}

// count is the stream's counter at t seconds; ok is false before the
// series exists.
func (s lazyStream) count(t float64) (float64, bool) {
	n := math.Floor(s.rate * (t - s.from))
	return n, t >= s.from && n >= 1
}

// lazyEmitter is a proxy in the last minutes of an incident (the window
// is [150 s, 450 s]): four upstreams; calls and 200s from the start; 503s
// from 300 s, 429s from 350 s, queue rejections from 330 s and rate
// rejections from 360 s, staggered by upstream, each a new series when it
// starts.
func lazyEmitter() []lazyStream {
	var out []lazyStream
	for i, u := range []string{"billing", "search", "ledger", "mail"} {
		f := float64(i)
		out = append(out,
			lazyStream{"acme_calls_total", u, "", "", 7 * f, 20},
			lazyStream{"acme_tries_total", u, "status", "200", 7 * f, 20},
			lazyStream{"acme_tries_total", u, "status", "503", 300 + 30*f, 6},
			lazyStream{"acme_tries_total", u, "status", "429", 350 + 20*f, 2},
			lazyStream{"acme_rejected_total", u, "reason", "queue", 330 + 25*f, 4},
			lazyStream{"acme_rejected_total", u, "reason", "rate", 360 + 20*f, 1.5},
		)
	}
	return out
}

// lazyBody is the emitter's exposition at t seconds.
func lazyBody(streams []lazyStream, t float64) []byte {
	var b bytes.Buffer
	b.WriteString("# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1741057000\n")
	for _, m := range []string{"acme_calls_total", "acme_tries_total", "acme_rejected_total"} {
		fmt.Fprintf(&b, "# TYPE %s counter\n", m)
		for _, s := range streams {
			if v, ok := s.count(t); ok && s.metric == m {
				if s.label == "" {
					fmt.Fprintf(&b, "%s{upstream=%q} %g\n", m, s.upstream, v)
				} else {
					fmt.Fprintf(&b, "%s{upstream=%q,%s=%q} %g\n", m, s.upstream, s.label, s.value, v)
				}
			}
		}
	}
	return b.Bytes()
}

var lazyMapping = dialect.Mapping{
	Name:            "acme-proxy",
	DependencyLabel: "upstream",
	Signals: []dialect.Signal{
		{Family: model.MetricOriginals, Metric: "acme_calls_total"},
		{Family: model.MetricAttempts, Metric: "acme_tries_total", Match: []string{`status=~"5..|429"`}, Labels: map[string]string{"outcome": "temporary_error"}},
		{Family: model.MetricAttempts, Metric: "acme_tries_total", Match: []string{`status!~"5..|429"`}, Labels: map[string]string{"outcome": "success"}},
		{Family: model.MetricAdmissionRejected, Metric: "acme_rejected_total"},
	},
}

// TestLazySeriesCountFromZero: a custom mapping over an emitter that
// creates status-code and rejection series on their first event, scraped
// at 1 s and at 15 s (Prometheus' usual interval), reads every rate over a
// 5-minute window within 3 % of the events that happened between the
// window's first and last scrape; live and from the recorded dump alike.
// Before new series started at 0, rejections read 10-20 % low at 15 s.
func TestLazySeriesCountFromZero(t *testing.T) {
	streams := lazyEmitter()
	cfg := dialect.Config{Custom: []dialect.Mapping{lazyMapping}}
	for _, interval := range []time.Duration{time.Second, 15 * time.Second} {
		t.Run(interval.String(), func(t *testing.T) {
			const total, window = 450 * time.Second, 300 * time.Second
			var times []time.Time
			for at := time.Duration(0); at <= total; at += interval {
				times = append(times, agreeT0.Add(at))
			}
			tr, err := dialect.NewTranslator(cfg)
			if err != nil {
				t.Fatal(err)
			}
			rtd := filepath.Join(t.TempDir(), "acme.rtd")
			live := scrapeLive(t, tr, "acme", times, func(now time.Time) []byte {
				return lazyBody(streams, now.Sub(agreeT0).Seconds())
			}, rtd)

			// The truth: events between the window's first and last scrape.
			ta, tb := (total - window).Seconds(), total.Seconds()
			truth := map[string]float64{}
			for _, s := range streams {
				a, _ := s.count(ta)
				b, _ := s.count(tb)
				n := (max(b, 0) - max(a, 0)) / (tb - ta)
				switch {
				case s.metric == "acme_calls_total":
					truth["originals"] += n
				case s.metric == "acme_rejected_total":
					truth["admission rejected"] += n
				case s.value == "200":
					truth["attempts"] += n
				default:
					truth["attempts"] += n
					truth["temporary errors"] += n
				}
			}
			for name, st := range map[string]*model.Store{"live": live, "dump": loadFile(t, cfg, rtd)} {
				got := lazyRates(st, "acme", agreeT0.Add(total-window).UnixMilli(), agreeT0.Add(total).UnixMilli())
				keys := make([]string, 0, len(truth))
				for k := range truth {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					g, ok := got[k]
					dev := (g - truth[k]) / truth[k]
					t.Logf("%s %s: %s %.3f/s, truth %.3f/s (%+.2f %%)", interval, name, k, g, truth[k], 100*dev)
					if !ok || math.Abs(dev) > 0.03 {
						t.Errorf("%s %s: %s %.3f/s (present %v), truth %.3f/s: %+.1f %%, want within 3 %%", interval, name, k, g, ok, truth[k], 100*dev)
					}
				}
			}
		})
	}
}

// lazyRates sums the window's rates over the target's dependencies.
func lazyRates(st *model.Store, target string, startMs, endMs int64) map[string]float64 {
	out := map[string]float64{}
	add := func(k string, v model.Value) {
		if v.OK() {
			out[k] += v.V()
		}
	}
	for _, dep := range analysis.Dependencies(st, target) {
		s := analysis.SignalsFor(st, target, dep, startMs, endMs)
		add("originals", s.OriginalsPerS)
		add("attempts", s.AttemptsPerS)
		add("admission rejected", s.AdmissionRejectedPerS)
		add("temporary errors", s.TemporaryErrorsPerS)
	}
	return out
}

// TestRestartedTargetKeepsBaselines: through the scraper and a custom
// mapping, process_start_time_seconds reaches the store, so a series that
// shows up together with a restart is a baseline (the new process may have
// counted it before the previous scrape), while one that shows up on the
// same process starts at 0.
func TestRestartedTargetKeepsBaselines(t *testing.T) {
	bodies := []string{
		"process_start_time_seconds 1000\nacme_calls_total{upstream=\"billing\"} 100\n",
		"process_start_time_seconds 1000\nacme_calls_total{upstream=\"billing\"} 120\nacme_calls_total{upstream=\"search\"} 7\n",
		"process_start_time_seconds 2000\nacme_calls_total{upstream=\"billing\"} 130\nacme_calls_total{upstream=\"search\"} 9\nacme_calls_total{upstream=\"mail\"} 4\n",
	}
	times := []time.Time{agreeT0, agreeT0.Add(time.Second), agreeT0.Add(2 * time.Second)}
	tr, err := dialect.NewTranslator(dialect.Config{Custom: []dialect.Mapping{lazyMapping}})
	if err != nil {
		t.Fatal(err)
	}
	st := scrapeLive(t, tr, "acme", times, func(now time.Time) []byte {
		return []byte(bodies[int(now.Sub(agreeT0)/time.Second)])
	}, filepath.Join(t.TempDir(), "acme.rtd"))
	ms := func(i int) int64 { return times[i].UnixMilli() }
	for dep, want := range map[string][]model.Point{
		"billing": {{T: ms(0), V: 100}, {T: ms(1), V: 120}, {T: ms(2), V: 130}},
		"search":  {{T: ms(0), V: 0}, {T: ms(1), V: 7}, {T: ms(2), V: 9}}, // new on the same process
		"mail":    {{T: ms(2), V: 4}},                                     // new with a restart
	} {
		got := st.Select("acme", model.MetricOriginals, func(ls model.Labels) bool { return ls.Get(model.LabelDependency) == dep })
		if len(got) != 1 || fmt.Sprint(got[0].Points) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", dep, got, want)
		}
	}
	if n := len(st.Select("acme", model.MetricProcessStart, nil)); n != 0 {
		t.Errorf("%s stored as a series", model.MetricProcessStart)
	}
}

// TestCreatedAfterRestartCounts: an OpenMetrics target's _created says when
// a series started; one created after the previous scrape counts from 0
// even across a restart, live and through the dump and its export.
func TestCreatedAfterRestartCounts(t *testing.T) {
	t1 := float64(agreeT0.Unix()) // the first scrape, in the target's seconds
	bodies := []string{
		"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1000\n# TYPE acme_calls counter\nacme_calls_total{upstream=\"billing\"} 100\nacme_calls_created{upstream=\"billing\"} 1000\n# EOF\n",
		fmt.Sprintf("# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %g\n# TYPE acme_calls counter\nacme_calls_total{upstream=\"billing\"} 5\nacme_calls_created{upstream=\"billing\"} %g\nacme_calls_total{upstream=\"search\"} 7\nacme_calls_created{upstream=\"search\"} %g\nacme_calls_total{upstream=\"mail\"} 3\nacme_calls_created{upstream=\"mail\"} 999\n# EOF\n", t1+0.5, t1+0.5, t1+0.7),
	}
	times := []time.Time{agreeT0, agreeT0.Add(time.Second)}
	cfg := dialect.Config{Custom: []dialect.Mapping{lazyMapping}}
	tr, err := dialect.NewTranslator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rtd := filepath.Join(dir, "acme.rtd")
	live := scrapeLive(t, tr, "acme", times, func(now time.Time) []byte {
		return []byte(bodies[int(now.Sub(agreeT0)/time.Second)])
	}, rtd)
	exportOM(t, rtd, filepath.Join(dir, "acme.om"))
	ms := func(i int) int64 { return times[i].UnixMilli() }
	for name, st := range map[string]*model.Store{"live": live, "dump": loadFile(t, cfg, rtd), "export": loadFile(t, cfg, filepath.Join(dir, "acme.om"))} {
		for dep, want := range map[string][]model.Point{
			"billing": {{T: ms(0), V: 100}, {T: ms(1), V: 5}},
			"search":  {{T: ms(0), V: 0}, {T: ms(1), V: 7}}, // created after the previous scrape
			"mail":    {{T: ms(1), V: 3}},                   // created before it: a baseline after a restart
		} {
			got := st.Select("acme", model.MetricOriginals, func(ls model.Labels) bool { return ls.Get(model.LabelDependency) == dep })
			if len(got) != 1 || fmt.Sprint(got[0].Points) != fmt.Sprint(want) {
				t.Errorf("%s %s: %v, want %v", name, dep, got, want)
			}
		}
	}
}
