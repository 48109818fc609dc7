package whatif

import (
	"math"
	"testing"
	"time"

	"github.com/retrytop/retrytop/policy"
)

const ms = time.Millisecond

func oneHop(attempts int, perAttempt time.Duration, slots int, service time.Duration, arrivals ...float64) Model {
	st := make([]time.Duration, len(arrivals))
	for i := range st {
		st[i] = service
	}
	return Model{
		Bin:      time.Second,
		Arrivals: arrivals,
		Hops: []Hop{{Name: "client", Dependency: "provider", Base: policy.Base{MaxAttempts: attempts},
			Deadline: time.Second, PerAttemptTimeout: perAttempt, MinAttemptTime: 50 * ms}},
		Provider: Provider{Slots: slots, ServiceTime: st},
	}
}

// Hand-computed runs of the engine, each event written out.
func TestRunHandComputed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		m     Model
		want  []Bin
		fates map[string]int64
	}{
		{
			// Arrivals at 0.1, 0.3, 0.5, 0.7, 0.9 s, 100 ms each on one
			// slot: all succeed; the one from 0.9 s still runs at the
			// bin's end and ends at 1 s, in the next bin.
			name: "no queue",
			m:    oneHop(1, 0, 1, 100*ms, 5, 0),
			want: []Bin{{Offered: 5, Ended: 4, Succeeded: 4, Attempts: 4, Received: 5, Held: 1},
				{Ended: 1, Succeeded: 1, Attempts: 1}},
			fates: map[string]int64{"success": 5},
		},
		{
			// One original at 0.5 s; 300 ms of work, 200 ms per attempt:
			// attempts end (timed out, slot freed) at 0.7, 0.9 and 1.1 s;
			// the third is the last allowed and runs at 1 s.
			name:  "three timeouts",
			m:     oneHop(3, 200*ms, 1, 300*ms, 1, 0),
			want:  []Bin{{Offered: 1, Attempts: 2, Received: 3, Held: 1}, {Ended: 1, Attempts: 1}},
			fates: map[string]int64{"max_attempts": 1},
		},
		{
			// Arrivals at 0.25 and 0.75 s, 500 ms of work, 400 ms per
			// attempt: A is cancelled at 0.65 s (its slot freed), B gets
			// the slot at 0.75 s, still runs at 1 s, times out at 1.15 s.
			name:  "cancel frees the slot",
			m:     oneHop(1, 400*ms, 1, 500*ms, 2, 0),
			want:  []Bin{{Offered: 2, Ended: 1, Attempts: 1, Received: 2, Held: 1}, {Ended: 1, Attempts: 1}},
			fates: map[string]int64{"max_attempts": 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(tc.m, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range tc.want {
				if r.Bins[i] != w {
					t.Errorf("bin %d: %+v, want %+v", i, r.Bins[i], w)
				}
			}
			for k, v := range tc.fates {
				if r.Fates[k] != v {
					t.Errorf("fates %v, want %v", r.Fates, tc.fates)
				}
			}
		})
	}
}

// A queued request whose caller gives up leaves the queue; with
// IgnoreCancel it stays and runs, holding the slot for nobody.
func TestIgnoreCancelHoldsTheQueue(t *testing.T) {
	// 4 arrivals at 0.125, 0.375, 0.625, 0.875 s on one slot of 1 s work,
	// 300 ms per attempt: every attempt times out.
	m := oneHop(1, 300*ms, 1, time.Second, 4, 0, 0, 0, 0)
	r, _ := Run(m, nil)
	// Honoured: at 1 s only the request from 0.875 s is held (the others
	// left at 0.425, 0.675 and 0.925 s).
	if r.Bins[0].Held != 1 {
		t.Errorf("held at 1 s %d, want 1", r.Bins[0].Held)
	}
	m.Provider.IgnoreCancel = true
	r, _ = Run(m, nil)
	// Ignored: all four held (one running, three queued) at 1 s; they run
	// one after the other until 4.125 s, so three are held at 2 s, two at
	// 3 s, one at 4 s.
	for i, want := range []int{4, 3, 2, 1, 0} {
		if r.Bins[i].Held != want {
			t.Errorf("ignore-cancel: held at %d s %d, want %d", i+1, r.Bins[i].Held, want)
		}
	}
}

func TestSummarizeRecovery(t *testing.T) {
	f := math.NaN()
	for _, tc := range []struct {
		name       string
		ratios     []float64 // success ratio per bin, 10 ended per bin
		tr         Span
		end        time.Duration
		want       float64 // -1: nil
		metastable bool
	}{
		{"at once", []float64{1, 1, 0, 0, 1, 1}, Span{2, 4}, 0, 0, false},
		// Bin 4 after the trigger reads 50 %: a step from bin 3's 0 to bin
		// 5's 100 % half-way through it.
		{"half a bin late", []float64{1, 1, 0, 0, 0.5, 1, 1}, Span{2, 4}, 0, 0.5, false},
		// The end inside bin 4 at 4.3 s, the same step at 4.5 s: 0.2 s. It
		// read 0.7 s (5 - 4.3) when counted to the next bin's start, the
		// end's phase in its bin.
		{"end inside a bin", []float64{1, 1, 0, 0, 0.5, 1, 1}, Span{2, 4}, 4300 * ms, 0.2, false},
		// The same immediate recovery with the end early and late in bin 3
		// (two recordings at other scrape offsets): both 0. They read 0
		// (bin 3, mostly recovered, passed 95 %) and 0.1 s; with bin 3 at
		// 90 %, 0.9 s and 0.1 s.
		{"end early in a bin", []float64{1, 1, 0, 0.96, 1, 1}, Span{2, 3}, 3100 * ms, 0, false},
		{"end early, mixed bin short", []float64{1, 1, 0, 0.9, 1, 1}, Span{2, 3}, 3100 * ms, 0, false},
		{"end late in a bin", []float64{1, 1, 0, 0.1, 1, 1}, Span{2, 3}, 3900 * ms, 0, false},
		// On a bin edge (the virtual-time sim's scrapes), as before.
		{"end on an edge", []float64{1, 1, 0, 0, 0.5, 0.5, 1}, Span{2, 4}, 4000 * ms, 2, false},
		// Two slow bins after the trigger's: 2 s.
		{"late, end inside a bin", []float64{1, 1, 0, 0.2, 0, 0.5, 1, 1}, Span{2, 3}, 3500 * ms, 2, false},
		// Bin 4 finished nothing: it is not known to have recovered, bin 5 is.
		{"unknown bins skipped", []float64{1, 1, 0, 0, f, 1, f}, Span{2, 4}, 0, 1, false},
		{"never", []float64{1, 1, 0, 0, 1, 0.5}, Span{2, 4}, 0, -1, true},
		{"no trigger", []float64{1, 1, 1}, Span{}, 0, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Series{Bin: time.Second, Trigger: tc.tr, TriggerEnd: tc.end}
			for _, r := range tc.ratios {
				s.Offered = append(s.Offered, 10)
				if math.IsNaN(r) {
					s.Ended, s.Succeeded = append(s.Ended, 0), append(s.Succeeded, 0)
					continue
				}
				s.Ended = append(s.Ended, 10)
				s.Succeeded = append(s.Succeeded, 10*r)
			}
			got := Summarize(s)
			if tc.want < 0 {
				if got.RecoveryS != nil {
					t.Errorf("recovery %v, want none", *got.RecoveryS)
				}
			} else if got.RecoveryS == nil || math.Abs(*got.RecoveryS-tc.want) > 1e-9 {
				t.Errorf("recovery %s, want %.1fs", secs(got.RecoveryS), tc.want)
			}
			if got.Metastable != tc.metastable {
				t.Errorf("metastable %v, want %v", got.Metastable, tc.metastable)
			}
		})
	}
}

// Amplification peaks only over bins with enough originals; a bin whose
// attempts are unknown is null in the timeline, never 0.
func TestSummarizeAmplification(t *testing.T) {
	n := math.NaN()
	s := Series{Bin: time.Second, Offered: []float64{10, 2, 10, 10}, Ended: []float64{10, 2, 10, 10},
		Succeeded: []float64{10, 2, 10, 10}, Attempts: []float64{n, 20, 25, 10}, Held: []float64{1, 2, 8, n}, Slots: 4}
	got := Summarize(s)
	if val(got.PeakAmplification) != 2.5 {
		t.Errorf("peak amplification %v, want 2.5 (the 2-original bin is left out)", val(got.PeakAmplification))
	}
	// Bin 0's attempts are unknown: its originals are left out too.
	if val(got.MeanAmplification) != 55.0/22 {
		t.Errorf("mean amplification %v, want 55/22", val(got.MeanAmplification))
	}
	if got.Timeline[0].Amplification != nil || got.Timeline[3].ProviderLoad != nil {
		t.Errorf("unknown bins must be nil: %+v", got.Timeline)
	}
	if val(got.PeakProviderLoad) != 2 {
		t.Errorf("peak load %v, want 8/4", val(got.PeakProviderLoad))
	}
}
