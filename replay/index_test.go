package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/replay"
)

// The index logs each target in chunks of 64 scrapes (replay's chunkLen):
// the "checkpoints" the cases below straddle.
const chunk = 64

// indexRounds is the recording's length in rounds of 1 s.
const indexRounds = 330

// indexBody is target's exposition at round n, or "" when it is down.
// Around the chunk boundaries (scrape 64, 128, 192, 256 of a target):
//   - a: every counter resets at round 128 (a restart, its process start
//     moves) and once more at 200 without one; dependency "late" appears
//     at round 65, after the first boundary; "gone" leaves at round 40
//     and comes back at 250, long after the store forgot it; "edge"
//     appears at round 192, a boundary (its seed, the zero at 191, lies
//     in the chunk before, which does not hold it); a gauge is
//     NaN (present, its value absent) every seventh round.
//   - b: down from round 60 to 70, across its first boundary; a histogram
//     appears at round 129.
//   - c: starts at round 100; at round 150 it is recorded twice at one
//     time (the store keeps the first).
func indexBody(target string, n int) string {
	var b strings.Builder
	switch target {
	case "a":
		base := n
		start := 1000
		if n >= 128 {
			base, start = n-128, 2000
		}
		if n >= 200 {
			base = n - 200
		}
		fmt.Fprintf(&b, "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %d\n", start)
		fmt.Fprintf(&b, "# TYPE retry_originals_total counter\n")
		fmt.Fprintf(&b, "retry_originals_total{dependency=\"provider\"} %d\n", 10*base)
		if n >= 65 {
			fmt.Fprintf(&b, "retry_originals_total{dependency=\"late\"} %d\n", 3*(n-60))
		}
		if n < 40 || n >= 250 {
			fmt.Fprintf(&b, "retry_originals_total{dependency=\"gone\"} %d\n", 2*n)
		}
		if n >= 3*chunk {
			fmt.Fprintf(&b, "retry_originals_total{dependency=\"edge\"} %d\n", 4*(n-190))
		}
		fmt.Fprintf(&b, "# TYPE retry_attempts_total counter\n")
		fmt.Fprintf(&b, "retry_attempts_total{dependency=\"provider\",outcome=\"success\"} %d\n", 12*base)
		fmt.Fprintf(&b, "retry_attempts_total{dependency=\"provider\",outcome=\"temporary_error\"} %d\n", base*base/40)
		g := fmt.Sprint(n % 5)
		if n%7 == 3 {
			g = "NaN"
		}
		fmt.Fprintf(&b, "# TYPE retry_active_calls gauge\nretry_active_calls{dependency=\"provider\"} %s\n", g)
		fmt.Fprintf(&b, "# TYPE retry_latency_sum_seconds gauge\nretry_latency_sum_seconds %g\n", 0.1*float64(n)+1e-9)
	case "b":
		if n >= 60 && n < 70 {
			return ""
		}
		fmt.Fprintf(&b, "# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"db\"} %d\n", 5*n)
		if n >= 129 {
			fmt.Fprintf(&b, "# TYPE retry_attempt_duration_seconds histogram\n")
			for k, le := range []string{"0.1", "1", "+Inf"} {
				fmt.Fprintf(&b, "retry_attempt_duration_seconds_bucket{dependency=\"db\",le=%q} %d\n", le, (k+1)*(n-128))
			}
			fmt.Fprintf(&b, "retry_attempt_duration_seconds_sum{dependency=\"db\"} %g\nretry_attempt_duration_seconds_count{dependency=\"db\"} %d\n", 0.25*float64(n-128), 3*(n-128))
		}
	case "c":
		if n < 100 {
			return "-"
		}
		fmt.Fprintf(&b, "# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"cache\"} %d\n", n)
	}
	return b.String()
}

// indexRec writes the recording: a, b and c scraped every second, 37 ms
// apart.
func indexRec(t *testing.T) dump.Recording {
	t.Helper()
	rec, _ := indexRecAt(t, filepath.Join(t.TempDir(), "index.rtd"), 0)
	return rec
}

// indexRecAt writes the recording to path, target a's originals shifted
// by shift (another recording of the same length), and opens it.
func indexRecAt(t *testing.T, path string, shift int) (dump.Recording, string) {
	t.Helper()
	w, err := dump.Create(path, false, dump.WriterOptions{KeyEvery: 16})
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < indexRounds; n++ {
		for k, target := range []string{"a", "b", "c"} {
			at := t0.Add(time.Duration(n)*time.Second + time.Duration(k)*37*time.Millisecond)
			body := indexBody(target, n)
			if shift != 0 && target == "a" {
				body = strings.Replace(body, "retry_originals_total{dependency=\"provider\"} ", fmt.Sprintf("retry_originals_total{dependency=\"provider\"} %d", shift), 1)
			}
			switch body {
			case "-":
			case "":
				err = w.AppendError(target, at, "connection refused")
			default:
				err = w.Append(target, at, "text/plain; version=0.0.4", []byte(body))
				if err == nil && target == "c" && n == 150 {
					// Twice at one time: the store ignores the second.
					err = w.Append(target, at, "text/plain; version=0.0.4", []byte(indexBody(target, n+1)))
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return closeAndOpen(t, w, path), path
}

// closeAndOpen closes a recording's writer and opens what it wrote, closed
// when the test ends.
func closeAndOpen(t *testing.T, w *dump.Writer, path string) dump.Recording {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := dump.OpenRecording(path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec
}

// countingTransform adds, per target, a gauge of how many snapshots the
// transform has read and a counter that only a transform that saw every
// scrape since the start gets right: a translation with memory, as the
// dialects' guards are. The index must translate as playing does.
func countingTransform() replay.Transform {
	var mu sync.Mutex // targets are translated at once
	calls := map[string]int{}
	return func(s *model.Snapshot) (*model.Snapshot, error) {
		mu.Lock()
		calls[s.Target]++
		n := calls[s.Target]
		mu.Unlock()
		out := *s
		out.Families = append(append([]model.Family(nil), s.Families...),
			model.Family{Name: "transform_calls", Type: model.Gauge, Samples: []model.Sample{{Value: float64(n)}}})
		return &out, nil
	}
}

// indexStore is the store of the tests: 100 scrapes, so that the ring
// wraps and series are forgotten within the recording.
var indexStore = model.StoreConfig{History: 100}

// scratch is what playing the recording from its start up to head builds:
// a player without an index whose lookback is the whole recording.
func scratch(rec dump.Recording, head time.Time, tf func() replay.Transform) *replay.Player {
	p := replay.New(rec, replay.Options{Store: indexStore, Lookback: 24 * time.Hour, QuickLookback: 24 * time.Hour,
		NewTransform: tf, IndexMemory: -1})
	p.Seek(head)
	p.Settle()
	return p
}

// playerText is what the dashboard can read of a player: its store, its
// statuses and the frame (rows over 30 s, a timeline of 10 s bins over
// 5 minutes) at its playhead.
func playerText(p *replay.Player) string {
	st := p.Store()
	pos, _, _ := p.Position()
	fo := analysis.FrameOptions{Window: 30 * time.Second, Bin: 10 * time.Second, Bins: 30}
	f := analysis.BuildFrame(st, p.Statuses(), fo)
	// The statuses as JSON: their caps by value, not by pointer. The
	// frame's are the same.
	statuses, err := json.Marshal(p.Statuses())
	if err != nil {
		panic(err)
	}
	f.Targets = nil
	return fmt.Sprintf("at %v\n%s\nstatuses %s\nframe %+v", pos, dumpStore(st), statuses, f)
}

func indexed(t *testing.T, rec dump.Recording, tf func() replay.Transform, budget int64) *replay.Player {
	t.Helper()
	p := replay.New(rec, replay.Options{Store: indexStore, NewTransform: tf, IndexMemory: budget})
	if err := p.BuildIndex(context.Background()); err != nil && !errors.Is(err, replay.ErrIndexBudget) {
		t.Fatal(err)
	}
	return p
}

// seekHeads are playheads in every chunk of every target: at the
// boundaries, next to them, in the middle, and both ends.
func seekHeads(rec dump.Recording) []time.Time {
	start, end := rec.Time(0), rec.Time(rec.Len()-1)
	var out []time.Time
	for s := 0; s < indexRounds; s += chunk {
		for _, d := range []int{-1, 0, 1, chunk / 2} {
			if n := s + d; n >= 0 && n < indexRounds {
				out = append(out, start.Add(time.Duration(n)*time.Second+40*time.Millisecond))
			}
		}
	}
	return append(out, start, end, start.Add(129*time.Second), start.Add(65*time.Second+20*time.Millisecond),
		start.Add(150*time.Second+80*time.Millisecond), start.Add(151*time.Second+80*time.Millisecond))
}

// TestSeekMatchesScratch: a seek restored from the index shows what
// playing from the start up to the playhead shows (store, statuses,
// frame), at positions in every chunk, forwards and then backwards, with
// and without a transform that remembers.
func TestSeekMatchesScratch(t *testing.T) {
	rec := indexRec(t)
	for _, tc := range []struct {
		name string
		tf   func() replay.Transform
	}{{"no transform", nil}, {"transform with memory", countingTransform}} {
		t.Run(tc.name, func(t *testing.T) {
			p := indexed(t, rec, tc.tf, 0)
			if done, total, stopped := p.IndexProgress(); done != total || stopped {
				t.Fatalf("index reaches %d of %d entries (stopped %v)", done, total, stopped)
			}
			if err := p.BuildIndex(context.Background()); err == nil {
				t.Fatal("a second BuildIndex did not say so")
			}
			heads := seekHeads(rec)
			for k := len(heads) - 1; k >= 0; k-- { // backwards too
				heads = append(heads, heads[k])
			}
			want := map[time.Time]string{} // scratch, once per playhead
			for _, head := range heads {
				p.Seek(head)
				if p.Tick() == time.Nanosecond {
					t.Fatalf("seek to %v: not restored at once", head)
				}
				if _, ok := want[head]; !ok {
					want[head] = playerText(scratch(rec, head, tc.tf))
				}
				if got, want := playerText(p), want[head]; got != want {
					t.Fatalf("seek to %v differs from playing there\n--- seek\n%s\n--- scratch\n%s", head, got, want)
				}
			}
		})
	}
}

// TestPlayOnFromTheIndex: after a restore, stepping and playing go on
// from the index scrape by scrape (across chunk boundaries, a target's
// outage, a restart and a histogram's birth) and show what a player
// without an index shows that plays the same way from the start.
func TestPlayOnFromTheIndex(t *testing.T) {
	rec := indexRec(t)
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := replay.New(rec, replay.Options{Store: indexStore, NewTransform: countingTransform, Now: clock.Now})
	if err := p.BuildIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	ref := replay.New(rec, replay.Options{Store: indexStore, NewTransform: countingTransform, Now: clock.Now,
		Lookback: 24 * time.Hour, QuickLookback: 24 * time.Hour, IndexMemory: -1})
	both := func(f func(*replay.Player)) {
		f(p)
		f(ref)
	}
	for _, from := range []time.Duration{55 * time.Second, 124 * time.Second} {
		both(func(x *replay.Player) { x.Seek(t0.Add(from)); x.Tick() })
		for k := 0; k < 24; k++ {
			if k%2 == 0 {
				both(func(x *replay.Player) { x.Step(1) })
			} else {
				// Play 1 s of data at 1x.
				both(func(x *replay.Player) { x.Toggle() })
				clock.Add(time.Second)
				both(func(x *replay.Player) { x.Tick(); x.Toggle() })
			}
			both(func(x *replay.Player) { x.Tick() })
			if got, want := playerText(p), playerText(ref); got != want {
				t.Fatalf("from %v, step %d differs\n--- played on\n%s\n--- without an index\n%s", from, k, got, want)
			}
		}
	}
}

// TestSeekPastTheIndex: where the index does not reach (it stopped at its
// budget, or is still being built) a seek works as without one: the
// lookback is loaded, and what it shows is a player's without an index.
func TestSeekPastTheIndex(t *testing.T) {
	rec := indexRec(t)
	p := indexed(t, rec, nil, 64<<10)
	done, total, stopped := p.IndexProgress()
	if !stopped || done == 0 || done >= total {
		t.Fatalf("a 64 KiB index reaches %d of %d entries (stopped %v), want part", done, total, stopped)
	}
	if p.IndexBytes() > 64<<10+64<<10 {
		// One entry past the budget at most: a chunk sealed, 64 KiB of
		// slack here is far above one entry's columns.
		t.Errorf("index holds %d bytes over a budget of 64 KiB", p.IndexBytes())
	}
	last := rec.Time(done - 1)
	inside := last.Add(-time.Second)
	p.Seek(inside)
	p.Tick()
	if got, want := playerText(p), playerText(scratch(rec, inside, nil)); got != want {
		t.Fatalf("seek inside the index differs\n--- seek\n%s\n--- scratch\n%s", got, want)
	}
	past := rec.Time(rec.Len() - 1)
	p.Seek(past)
	p.Settle()
	plain := replay.New(rec, replay.Options{Store: indexStore, IndexMemory: -1})
	plain.Seek(past)
	plain.Settle()
	if got, want := playerText(p), playerText(plain); got != want {
		t.Fatalf("seek past the index differs from a player without one\n--- seek\n%s\n--- plain\n%s", got, want)
	}
}

// TestIndexColumnsRoundTrip: values the column encoding must give back
// exactly, through a restore (integers of every size, fractions, -0, the
// infinities, present NaN, absent).
func TestIndexColumnsRoundTrip(t *testing.T) {
	vals := []float64{0, 1, -1, 1 << 52, -(1 << 53), 1<<53 + 2, 0.1, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 3, 3, 1e300, 42}
	path := filepath.Join(t.TempDir(), "cols.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 3*chunk; n++ {
		var b strings.Builder
		fmt.Fprintf(&b, "# TYPE v gauge\n")
		for k, v := range vals {
			if (n+k)%5 == 0 {
				continue // absent
			}
			if (n+k)%7 == 0 {
				fmt.Fprintf(&b, "v{k=\"%d\"} NaN\n", k)
				continue
			}
			fmt.Fprintf(&b, "v{k=\"%d\"} %s\n", k, model.FormatFloat(v+float64(n%3)*v))
		}
		fmt.Fprintf(&b, "v{k=\"int\"} %d\n", n*n*n*1000-5000000)
		if err := w.Append("t", t0.Add(time.Duration(n)*time.Second), "text/plain; version=0.0.4", []byte(b.String())); err != nil {
			t.Fatal(err)
		}
	}
	rec := closeAndOpen(t, w, path)
	p := replay.New(rec, replay.Options{Store: model.StoreConfig{History: 3 * chunk}})
	if err := p.BuildIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, chunk - 1, chunk, 2*chunk + 5, 3*chunk - 1} {
		head := t0.Add(time.Duration(n) * time.Second)
		p.Seek(head)
		p.Tick()
		ref := replay.New(rec, replay.Options{Store: model.StoreConfig{History: 3 * chunk}, Lookback: time.Hour, QuickLookback: time.Hour, IndexMemory: -1})
		ref.Seek(head)
		ref.Settle()
		if got, want := dumpStore(p.Store()), dumpStore(ref.Store()); got != want {
			t.Fatalf("at %d:\n--- index\n%s\n--- appended\n%s", n, got, want)
		}
	}
}

// TestSeekRetiresTheReplacedStore: a restore retires the store it
// replaced (its rings go to the next restore's), unless a frame holds
// it: then it stays whole until the frame lets it go.
func TestSeekRetiresTheReplacedStore(t *testing.T) {
	rec := indexRec(t)
	p := indexed(t, rec, nil, 0)
	start, end := rec.Time(0).Add(150*time.Second), rec.Time(rec.Len()-1)
	p.Seek(start)
	p.Tick()
	free := p.Store()
	p.Seek(end)
	p.Tick()
	if got := free.Targets(); len(got) != 0 {
		t.Errorf("the store a seek replaced lists %v, want it retired", got)
	}
	held := p.Store()
	want := dumpStore(held)
	if !held.Hold() {
		t.Fatal("the current store cannot be held")
	}
	p.Seek(start)
	p.Tick()
	if got := dumpStore(held); got != want {
		t.Fatalf("a held store changed when a seek replaced it:\n%s\nwant\n%s", got, want)
	}
	held.Release()
	if got := held.Targets(); len(got) != 0 {
		t.Errorf("released, the replaced store lists %v", got)
	}
}

// TestFramesReadWhileSeeking: frames hold the store they read while
// seeks replace it and retire the one before (run with -race): what a
// held store shows does not change under the reader. Every seek here
// restores (playing forward a few scrapes would add to the store).
func TestFramesReadWhileSeeking(t *testing.T) {
	rec := indexRec(t)
	p := indexed(t, rec, nil, 0)
	heads := []time.Time{rec.Time(0).Add(150 * time.Second), rec.Time(rec.Len() - 1), rec.Time(0).Add(200 * time.Second)}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var reads, changed int
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			st := p.Store()
			if !st.Hold() {
				continue
			}
			a := dumpStore(st)
			b := dumpStore(st)
			st.Release()
			reads++
			if a != b {
				changed++
			}
		}
	})
	for k := range 60 {
		p.Seek(heads[k%len(heads)])
		p.Tick()
	}
	close(done)
	wg.Wait()
	if reads == 0 || changed != 0 {
		t.Errorf("%d reads of a held store, %d of them changed under the reader", reads, changed)
	}
}
