package sim

import (
	"math"
	"time"
)

// Arrivals is an open-loop arrival schedule: original k (k = 0, 1, ...) is
// due at Start + k/Rate, whether or not earlier originals have finished.
// It is a pure function of the times it is given.
type Arrivals struct {
	Start time.Time
	Rate  float64 // originals per second, > 0
}

// At is the time original k is due.
func (a Arrivals) At(k int64) time.Time {
	return a.Start.Add(time.Duration(math.Round(float64(k) * float64(time.Second) / a.Rate)))
}

// Due is the number of originals due by now: every k with At(k) <= now.
// It is 0 before Start and 1 at Start.
func (a Arrivals) Due(now time.Time) int64 {
	if a.Rate <= 0 || now.Before(a.Start) {
		return 0
	}
	el := now.Sub(a.Start)
	n := int64(math.Floor(el.Seconds()*a.Rate)) + 1
	// Correct float rounding so that At(n-1) <= now < At(n).
	for n > 0 && a.At(n-1).After(now) {
		n--
	}
	for !a.At(n).After(now) {
		n++
	}
	return n
}

// Before is the number of originals due strictly before end: the count a
// run that stops at end sends.
func (a Arrivals) Before(end time.Time) int64 {
	if a.Rate <= 0 || !end.After(a.Start) {
		return 0
	}
	n := a.Due(end)
	if n > 0 && !a.At(n-1).Before(end) {
		n--
	}
	return n
}

// Lag is how late original k is when it is sent at now (0 when early).
func (a Arrivals) Lag(k int64, now time.Time) time.Duration {
	return max(now.Sub(a.At(k)), 0)
}
