package whatif

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/retrytop/retrytop/model"
)

// Confidence of a fitted parameter (Assumption.Confidence).
const (
	// ConfidenceExact: read from a configuration gauge.
	ConfidenceExact = "exact"
	// ConfidenceMeasured: computed from observations the recording holds;
	// the value says how many.
	ConfidenceMeasured = "measured"
	// ConfidenceCarried: not observed where it is used, carried over from
	// where the recording did observe it, under a stated assumption.
	ConfidenceCarried = "carried"
	// ConfidenceAssumed: no metric exports it; a default is used.
	ConfidenceAssumed = "assumed"
	// ConfidenceUndetermined: the recording cannot determine it; only a
	// bound is known, and predictions that depend on it are bounds too.
	ConfidenceUndetermined = "undetermined"
)

// slowFactor: a service time above 1.5x the healthy level is slow (the
// trigger's definition, below).
const slowFactor = 1.5

// binState is what the recording says of the service time in one bin.
type binState int

const (
	binIdle    binState = iota // nothing granted, nothing finished
	binHealthy                 // requests finished, none slow
	binSlow                    // slow requests finished (maybe healthy ones too)
	binStuck                   // requests got a slot but none finished
)

// serviceBin is one bin's provider-side counts, between the scrapes at
// or before its edges.
type serviceBin struct {
	done, sum      float64 // service-time histogram: finished requests
	low            float64 // of them, at or below the split bucket
	granted, waits float64 // queue-wait histogram: requests given a slot
	received       float64 // requests that reached the provider
	state          binState
	slow           float64 // mean service time of the slow finished ones, seconds
}

// serviceFit is the provider's service time per bin from every signal a
// bin holds, not only from the requests that finished in it: a bin where
// requests got a slot but none finished (cancelled while executing) is
// slow, its level carried from the finished slow requests of the same
// stretch, or only bounded when there are none.
type serviceFit struct {
	Times   []time.Duration
	Healthy float64 // seconds
	Notes   []Assumption
}

// fitServiceTime fits the provider's service time over bins [edges[i],
// edges[i+1]). attemptTimeout is the provider caller's per-attempt
// timeout (0: unknown), slots its execution slots.
func fitServiceTime(st *model.Store, prov string, edges []int64, slots int, attemptTimeout time.Duration) (serviceFit, error) {
	var f serviceFit
	n := len(edges) - 1
	w := float64(edges[1]-edges[0]) / 1000
	hist := model.MetricServerServiceTime
	bins := make([]serviceBin, n)
	inc := func(name string, match func(model.Labels) bool, i int) float64 {
		var v float64
		for _, s := range st.Select(prov, name, match) {
			if x, ok := edgeIncrease(s.Points, edges[i], edges[i+1]); ok {
				v += x
			}
		}
		return v
	}
	var total float64
	for i := range bins {
		b := &bins[i]
		b.done, b.sum = inc(hist+"_count", nil, i), inc(hist+"_sum", nil, i)
		b.granted, b.waits = inc(model.MetricServiceQueueWait+"_count", nil, i), inc(model.MetricServiceQueueWait+"_sum", nil, i)
		b.received = inc(model.MetricServerReceived, nil, i)
		total += b.done
	}
	if total == 0 {
		return f, fmt.Errorf("whatif: %q finished no request (%s): no service time to fit", prov, hist)
	}
	// The healthy level: finished requests of the bins whose mean is
	// within slowFactor of the lowest bin mean.
	lo := math.Inf(1)
	for _, b := range bins {
		if b.done > 0 {
			lo = min(lo, b.sum/b.done)
		}
	}
	var hs, hn float64
	for _, b := range bins {
		if b.done > 0 && b.sum/b.done <= slowFactor*lo {
			hs, hn = hs+b.sum, hn+b.done
		}
	}
	f.Healthy = hs / hn
	add := func(what, value, source, conf string) {
		f.Notes = append(f.Notes, Assumption{What: prov + " " + what, Value: value, Source: source, Confidence: conf})
	}
	add("healthy service time", fmtSeconds(f.Healthy), fmt.Sprintf("mean of %.0f finished requests, %s _sum/_count", hn, hist),
		ConfidenceMeasured)

	// A bin whose mean is above slowFactor x healthy is slow. Its finished
	// requests are split at the smallest bucket bound at or above that:
	// those above are the slow ones, their mean the bin's sum less the
	// fast ones at the healthy level (a bin that mixes both levels, where
	// the slowdown began or ended, shows the slow level, not the mix).
	split, haveBuckets := splitBound(st, prov, hist, slowFactor*f.Healthy)
	leIs := func(ls model.Labels) bool { return ls.Get("le") == split }
	for i := range bins {
		b := &bins[i]
		switch {
		case b.done == 0 && (b.granted > 0 || b.received > 0):
			// Work arrived (got a slot, where the queue-wait histogram
			// says so) and none finished.
			b.state = binStuck
		case b.done == 0:
			b.state = binIdle
		case b.sum/b.done <= slowFactor*f.Healthy:
			// A stray slow request among healthy ones is noise, not a
			// slow bin.
			b.state = binHealthy
		default:
			b.state = binSlow
			b.slow = b.sum / b.done
			if haveBuckets {
				b.low = min(inc(hist+"_bucket", leIs, i), b.done)
				if hi := b.done - b.low; hi > 0 {
					b.slow = max((b.sum-b.low*f.Healthy)/hi, slowFactor*f.Healthy)
				} else {
					b.low = 0
				}
			}
		}
	}

	f.Times = make([]time.Duration, n)
	for i, b := range bins {
		v := f.Healthy
		if b.state == binHealthy {
			v = b.sum / b.done
		}
		f.Times[i] = seconds(v)
	}
	f.stretches(bins, slots, w, attemptTimeout, split, add)
	return f, nil
}

// stretches sets the service time of each stretch of slow and stuck
// bins: its level from its slow finished requests, carried into its stuck
// bins, or only a bound when none finished.
func (f *serviceFit) stretches(bins []serviceBin, slots int, w float64, attemptTimeout time.Duration, split string, add func(what, value, source, conf string)) {
	n := len(bins)
	for i := 0; i < n; {
		if bins[i].state != binSlow && bins[i].state != binStuck {
			i++
			continue
		}
		j := i
		var ss, sn, bound float64
		stuck := 0
		for ; j < n && (bins[j].state == binSlow || bins[j].state == binStuck); j++ {
			b := bins[j]
			if b.state == binSlow {
				ss += b.slow * (b.done - b.low)
				sn += b.done - b.low
				continue
			}
			stuck++
			bound = max(bound, holdBound(b, slots, w, attemptTimeout))
		}
		level := ss / max(sn, 1)
		span := fmt.Sprintf("bins %d..%d", i, j-1)
		switch {
		case sn > 0 && stuck == 0:
			add("slow service time, "+span, fmtSeconds(level), fmt.Sprintf("mean of %.0f finished requests above %s%s", sn, fmtSeconds(slowFactor*f.Healthy), bucketNote(split)), ConfidenceMeasured)
		case sn > 0:
			held := "consistent"
			if bound > level {
				held, level = "the level raised to that bound", bound
			}
			add("slow service time, "+span, fmtSeconds(level),
				fmt.Sprintf("mean of %.0f finished slow requests of the stretch, carried into its %d bins where requests got a slot but none finished (each held it at least %s before its caller gave up: %s)", sn, stuck, fmtSeconds(bound), held),
				ConfidenceCarried)
		default:
			level = bound
			add("slow service time, "+span, "at least "+fmtSeconds(level),
				"no request finished in the stretch: each held its slot until its caller gave up (slots x bin / grants, per-attempt timeout less the mean queue wait); the replay uses this lower bound, so its predictions for the stretch are optimistic",
				ConfidenceUndetermined)
		}
		for k := i; k < j; k++ {
			v := level
			if bins[k].state == binSlow && bins[k].done-bins[k].low >= minSlowRequests {
				v = bins[k].slow
			}
			f.Times[k] = seconds(v)
		}
		i = j
	}
}

// minSlowRequests: a bin's own slow mean is used from this many slow
// finished requests on; below, its stretch's level.
const minSlowRequests = 5

// holdBound is the least service time consistent with a stuck bin: no
// granted request finished, so each held its slot for less than its
// service time. With the slots busy the bin through, the mean hold is
// slots x bin / grants; a caller with a per-attempt timeout gave up
// after the timeout less the mean queue wait.
func holdBound(b serviceBin, slots int, w float64, attemptTimeout time.Duration) float64 {
	var bound float64
	if b.granted > 0 && slots > 0 {
		bound = float64(slots) * w / b.granted
	}
	if attemptTimeout > 0 && b.granted > 0 {
		bound = max(bound, attemptTimeout.Seconds()-b.waits/b.granted)
	}
	return bound
}

// bucketNote names the bucket the slow requests were split at.
func bucketNote(split string) string {
	if split == "" {
		return " (no buckets: the bin means)"
	}
	return fmt.Sprintf(" (split at bucket le=%q)", split)
}

// splitBound is the le label of the smallest bucket bound at or above
// at, if the histogram has buckets.
func splitBound(st *model.Store, target, hist string, at float64) (string, bool) {
	type le struct {
		v float64
		s string
	}
	var les []le
	for _, s := range st.Select(target, hist+"_bucket", nil) {
		txt := s.Labels.Get("le")
		v, err := model.ParseFloat(txt)
		if err == nil && v >= at && !math.IsInf(v, 1) {
			les = append(les, le{v, txt})
		}
	}
	if len(les) == 0 {
		return "", false
	}
	sort.Slice(les, func(i, j int) bool { return les[i].v < les[j].v })
	return les[0].s, true
}

func seconds(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }

func fmtSeconds(v float64) string { return seconds(v).Round(100 * time.Microsecond).String() }
