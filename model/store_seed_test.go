package model

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestStoreNewSeriesStartAtZero: a counter (histogram, summary count) series
// that a target already scraped did not have is stored with a 0 at the
// previous scrape, so its first value counts; not across a restart.
func TestStoreNewSeriesStartAtZero(t *testing.T) {
	hist := func(name string, count float64, bounds ...float64) Family {
		s := Sample{Labels: LabelsFromPairs("dependency", "x"), Count: count, Sum: count / 10}
		for _, b := range bounds {
			s.Buckets = append(s.Buckets, Bucket{UpperBound: b, Count: count})
		}
		return Family{Name: name, Type: Histogram, Samples: []Sample{s}}
	}
	gauge := func(name string, v float64) Family {
		return Family{Name: name, Type: Gauge, Samples: []Sample{{Value: v}}}
	}
	created := func(f Family, ms int64) Family {
		f.Samples[0].CreatedMs = ms
		return f
	}
	marked := func(f Family) Family {
		f.Samples[0].Baseline = true
		return f
	}
	type scrape struct {
		fams     []Family
		start    float64
		baseline bool
	}
	tests := []struct {
		name      string
		cfg       StoreConfig
		scrapes   []scrape
		series    string // name whose points are checked
		want      string
		restarted bool // at the last scrape
	}{
		{"a new counter starts at 0 at the previous scrape", StoreConfig{},
			[]scrape{{fams: []Family{counter("old", 1)}}, {fams: []Family{counter("old", 2), counter("new", 5)}}},
			"new", "[{1000 0} {2000 5}]", false},
		{"the first scrape of a target is a baseline", StoreConfig{},
			[]scrape{{fams: []Family{counter("new", 5)}}},
			"new", "[{1000 5}]", false},
		{"a new gauge is not a count", StoreConfig{},
			[]scrape{{fams: []Family{counter("old", 1)}}, {fams: []Family{counter("old", 2), gauge("new", 5)}}},
			"new", "[{2000 5}]", false},
		{"a new histogram starts at 0, buckets and sum too", StoreConfig{},
			[]scrape{{fams: []Family{counter("old", 1)}}, {fams: []Family{counter("old", 2), hist("h", 4, 1, math.Inf(1))}}},
			"h_sum", "[{1000 0} {2000 0.4}]", false},
		{"a bucket new to a known histogram is not new data", StoreConfig{},
			[]scrape{{fams: []Family{hist("h", 4, math.Inf(1))}}, {fams: []Family{hist("h", 6, 1, math.Inf(1))}}},
			"h_bucket", `[{1000 4} {2000 6}]|[{2000 6}]`, false},
		{"a summary's count and sum start at 0, its quantiles do not", StoreConfig{},
			[]scrape{{fams: []Family{counter("old", 1)}}, {fams: []Family{counter("old", 2), {Name: "s", Type: Summary, Samples: []Sample{{Count: 3, Sum: 1, Quantiles: []QuantileValue{{0.5, 0.2}}}}}}}},
			"s_count", "[{1000 0} {2000 3}]", false},
		{"process start moved: a restart, no seed", StoreConfig{},
			[]scrape{{fams: []Family{counter("old", 1)}, start: 100}, {fams: []Family{counter("old", 2), counter("new", 5)}, start: 1500}},
			"new", "[{2000 5}]", true},
		{"process start read from its family", StoreConfig{},
			[]scrape{{fams: []Family{counter("old", 1), gauge(MetricProcessStart, 100)}}, {fams: []Family{counter("old", 2), counter("new", 5), gauge(MetricProcessStart, 1500)}}},
			"new", "[{2000 5}]", true},
		{"process start unchanged within a second", StoreConfig{},
			[]scrape{{fams: []Family{counter("old", 1)}, start: 100}, {fams: []Family{counter("old", 2), counter("new", 5)}, start: 100.4}},
			"new", "[{1000 0} {2000 5}]", false},
		{"counters reset together: a restart", StoreConfig{},
			[]scrape{{fams: []Family{counter("a", 10), counter("b", 10)}}, {fams: []Family{counter("a", 1), counter("b", 2), counter("new", 5)}}},
			"new", "[{2000 5}]", true},
		{"one counter of three reset: not a restart", StoreConfig{},
			[]scrape{{fams: []Family{counter("a", 10), counter("b", 10), counter("c", 10)}}, {fams: []Family{counter("a", 1), counter("b", 12), counter("c", 12), counter("new", 5)}}},
			"new", "[{1000 0} {2000 5}]", false},
		{"created after the previous scrape: from 0 even across a restart", StoreConfig{},
			[]scrape{{fams: []Family{counter("old", 1)}, start: 100}, {fams: []Family{counter("old", 2), created(counter("new", 5), 1500)}, start: 1400}},
			"new", "[{1000 0} {2000 5}]", true},
		{"created before the previous scrape across a restart: a baseline", StoreConfig{},
			[]scrape{{fams: []Family{counter("old", 1)}, start: 100}, {fams: []Family{counter("old", 2), created(counter("new", 5), 900)}, start: 800}},
			"new", "[{2000 5}]", true},
		{"a Baseline snapshot is not seeded", StoreConfig{},
			[]scrape{{fams: []Family{counter("old", 1)}}, {fams: []Family{counter("old", 2), counter("new", 5)}, baseline: true}},
			"new", "[{2000 5}]", false},
		{"a sample marked Baseline is not seeded", StoreConfig{},
			[]scrape{{fams: []Family{counter("old", 1)}}, {fams: []Family{counter("old", 2), marked(counter("new", 5))}}},
			"new", "[{2000 5}]", false},
		{"FirstValueIsBaseline: Prometheus' rule", StoreConfig{FirstValueIsBaseline: true},
			[]scrape{{fams: []Family{counter("old", 1)}}, {fams: []Family{counter("old", 2), counter("new", 5)}}},
			"new", "[{2000 5}]", false},
		{"a series back after a gap keeps its history", StoreConfig{},
			[]scrape{{fams: []Family{counter("old", 1), counter("new", 3)}}, {fams: []Family{counter("old", 2)}}, {fams: []Family{counter("old", 3), counter("new", 5)}}},
			"new", "[{1000 3} {3000 5}]", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := NewStore(tt.cfg)
			var res AppendResult
			for i, sc := range tt.scrapes {
				s := &Snapshot{Target: "a", Time: time.Unix(int64(i+1), 0), Families: sc.fams, ProcessStart: sc.start, Baseline: sc.baseline}
				res = st.Append(s)
			}
			var got []string
			for _, p := range points(st.Select("a", tt.series, nil)) {
				got = append(got, fmt.Sprint(p))
			}
			if g := strings.Join(got, "|"); g != tt.want {
				t.Errorf("%s points = %s, want %s", tt.series, g, tt.want)
			}
			if res.Restarted != tt.restarted {
				t.Errorf("Restarted = %v, want %v", res.Restarted, tt.restarted)
			}
		})
	}
}
