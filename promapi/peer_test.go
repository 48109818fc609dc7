package promapi

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/internal/testpeer"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// scrapeJob is one job of the test Prometheus: one static target, or
// more (replicas: the same path on other hosts).
type scrapeJob struct {
	name, host, path string
	more             []string
	// late targets answer only later in the test: startPrometheus does
	// not wait for them.
	late bool
}

// startPrometheus starts a real Prometheus on 127.0.0.1 scraping the jobs
// every second (skipped without the peer, see internal/testpeer) and
// returns its base URL once every job has been scraped successfully at
// least samples times (waitScraped). It is killed at the end of the test, its output
// logged if the test failed.
func startPrometheus(t *testing.T, ctx context.Context, jobs []scrapeJob, samples int) string {
	t.Helper()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n")
	for _, j := range jobs {
		hosts := make([]string, 0, 1+len(j.more))
		for _, h := range append([]string{j.host}, j.more...) {
			hosts = append(hosts, fmt.Sprintf("%q", h))
		}
		fmt.Fprintf(&cfg, "  - job_name: %q\n    metrics_path: %q\n    static_configs:\n      - targets: [%s]\n", j.name, j.path, strings.Join(hosts, ", "))
	}
	base, _ := testpeer.StartPrometheus(t, ctx, cfg.String())
	waitScraped(t, ctx, base, jobs, samples)
	return base
}

// waitScraped waits until Prometheus at base has scraped every target of
// the jobs (late ones aside) successfully `samples` times in a row; with
// samples 0, until it has tried every target, late ones
// too, whether it answered or not (targets that will listen later).
func waitScraped(t *testing.T, ctx context.Context, base string, jobs []scrapeJob, samples int) {
	t.Helper()
	targets, all := 0, 0
	for _, j := range jobs {
		n := 1 + len(j.more)
		all += n
		if !j.late {
			targets += n
		}
	}
	client, err := NewClient(ClientConfig{URL: base, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Over the last samples+1 scrape intervals (1 s), so that a target
	// tried while it did not listen yet counts once it does.
	q := fmt.Sprintf("count(count_over_time(up[%[1]ds]) >= %[2]d and min_over_time(up[%[1]ds]) == 1)", samples+1, samples)
	if samples == 0 {
		q, targets = "count(up)", all
	}
	for {
		res, err := client.Query(ctx, q, time.Now())
		if err == nil && len(res.Series) == 1 && res.Series[0].Points[0].V == float64(targets) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("prometheus never scraped every job %d times: %v", samples, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitEachScraped waits until Prometheus at base has scraped each target
// of the jobs (late ones aside) successfully at least once since since:
// what a reader's baseline needs. Not every target in the same scrape
// interval (waitScraped): beside CPU hogs at load 9-14 Prometheus' 1 s
// scrapes of the sim time out in stretches of 10-20 s, and five targets
// up within the same 2 s took 17-81 s after the stack started, past the
// healthy phase, while each had answered within a few seconds.
func waitEachScraped(t *testing.T, ctx context.Context, base string, jobs []scrapeJob, since time.Time) {
	t.Helper()
	var names []string
	targets := 0
	for _, j := range jobs {
		if !j.late {
			names = append(names, regexp.QuoteMeta(j.name))
			targets += 1 + len(j.more)
		}
	}
	client, err := NewClient(ClientConfig{URL: base, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for {
		// The range reaches back to since (rounded up to a whole second).
		span := time.Since(since).Truncate(time.Second) + time.Second
		q := fmt.Sprintf("count(max_over_time(up{job=~%q}[%s]) == 1)", strings.Join(names, "|"), dialect.PromDuration(span))
		res, err := client.Query(ctx, q, time.Now())
		if err == nil && len(res.Series) == 1 && res.Series[0].Points[0].V == float64(targets) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("prometheus never scraped every target once: %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readTogether scrapes directly and refreshes from Prometheus every 1 s
// until ctx is done, each on its own goroutine, and returns the direct
// scrapes' lags. The Source's samples stand at Prometheus' scrape times
// whenever it evaluates, so the two need not share a tick; on one
// goroutine a refresh that took 3-6 s (64 queries at load 12 on 2 cores)
// held the direct scrapes back as long, and a 6 s window held fewer than
// two of them.
func readTogether(ctx context.Context, wg *sync.WaitGroup, direct *scrape.Scraper, src *Source) *lags {
	l := &lags{}
	every := func(f func()) {
		wg.Go(func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				f()
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	every(func() { l.note(direct.ScrapeOnce(ctx)) })
	every(func() { src.Refresh(ctx) })
	return l
}

// waitEvaluated waits until src has evaluated at or after t (the grid
// time of its newest refresh with an answer, its server status'
// LastSuccess): only then has
// it seen every scrape stamped up to t. A wall-clock wait of DefaultDelay
// past t is not enough on a busy machine: a refresh of the dialects' 64
// queries took 2-3 s at load 11 on 2 cores, so when the test stopped at
// t + 3.3 s the Source's newest evaluation lay 1-5 s before t and the
// window held 0-2 of its samples (its rates were absent, or a quotient of
// two samples a second apart whose scrape lags differed by 0.1-0.2 s).
func waitEvaluated(ctx context.Context, src *Source, t time.Time) error {
	for {
		if st := src.Statuses(); !st[0].LastSuccess.Before(t) {
			return nil
		}
		select {
		case <-src.Updates():
		case <-ctx.Done():
			return fmt.Errorf("the Source had not evaluated past %v: newest evaluation %v", t, src.Statuses()[0].LastSuccess)
		}
	}
}

// lags are how long each scrape of a reader took, by target and sample
// stamp (ms): a sample's value was read between its stamp and that much
// later. max is the longest, which stands for a scrape not noted.
type lags struct {
	mu  sync.Mutex
	by  map[string]map[int64]time.Duration
	max time.Duration
}

func (l *lags) add(target string, stampMs int64, took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string]map[int64]time.Duration{}
	}
	if l.by[target] == nil {
		l.by[target] = map[int64]time.Duration{}
	}
	l.by[target][stampMs] = took
	l.max = max(l.max, took)
}

// note records the scrapes ScrapeOnce reported.
func (l *lags) note(sts []model.TargetStatus) {
	for _, st := range sts {
		if st.Scrapes > 0 {
			l.add(st.Name, st.LastScrape.UnixMilli(), st.ScrapeDuration)
		}
	}
}

// of is the lag of target's sample stamped at stampMs, in ms: the longest
// of the reader when that scrape was not noted.
func (l *lags) of(target string, stampMs int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d, ok := l.by[target][stampMs]; ok {
		return d.Milliseconds() + 1 // rounded up
	}
	return l.max.Milliseconds() + 1
}

// longest is the longest scrape noted.
func (l *lags) longest() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.max
}
