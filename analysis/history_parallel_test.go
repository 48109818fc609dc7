package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// EvaluateHistory makes each bin's findings on several goroutines and
// merges them in bin order: the findings (codes, peaks, first and last
// bins, bin counts) are those of one goroutine going through the bins.
// The timelines are random episodes over 300 bins (enough for every
// goroutine to take many bins, EvaluateHistory's minimum being 16 a goroutine): amplification
// under timeouts, shedding, a hidden layer between app and client, and
// holes.
func TestEvaluateHistoryParallelEqualsSerial(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 5))
	const n = 300
	series := func(base, peak int, p float64, hole float64) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			switch r := rng.Float64(); {
			case r < hole:
				b.WriteByte('_')
			case r < hole+p:
				b.WriteString(strconv.Itoa(peak + rng.IntN(20)))
			default:
				b.WriteString(strconv.Itoa(base + rng.IntN(3)))
			}
		}
		return b.String()
	}
	app := tline(t, "app>client", map[string]string{"originals": "50x300", "attempts": series(50, 80, 0.2, 0.02)})
	client := tline(t, "client>provider", map[string]string{
		"originals": series(50, 75, 0.3, 0.02), "attempts": series(50, 130, 0.3, 0),
		"timeouts": series(0, 30, 0.3, 0), "admission": series(0, 7, 0.1, 0),
	})
	edge := tline(t, "edge>app", map[string]string{"originals": "50x300", "attempts": series(50, 120, 0.1, 0)})
	frame := model.Frame{Timelines: timelines(app, client, edge)}
	th := DefaultThresholds()
	th.HistoryMinBins = 1

	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	serial := EvaluateHistory(frame, nil, th)
	runtime.GOMAXPROCS(4)
	parallel := EvaluateHistory(frame, nil, th)
	codes := map[string]bool{}
	for _, f := range serial {
		codes[f.Code] = true
	}
	for _, c := range []string{CodeRetryAmplification, CodeAdmissionShedding, CodeHiddenRetries} {
		if !codes[c] {
			t.Errorf("no %s among the serial findings %v: the timelines test too little", c, codes)
		}
	}
	if !reflect.DeepEqual(parallel, serial) {
		t.Errorf("parallel findings differ:\n%+v\nserial:\n%+v", parallel, serial)
	}
}

// buildReport evaluates one target's rows on several goroutines: the
// report, BuildReport's and WholeBuilder's, is the bytes one goroutine
// makes. One target calls 12 dependencies (three rows a goroutine at
// least, parallelFor's minimum being 4), each with its own rates, a
// reset, a gauge and a latency histogram; db0's server-side series are
// read by every row that names it.
func TestReportParallelEqualsSerial(t *testing.T) {
	const n = 120
	rng := rand.New(rand.NewPCG(19, 6))
	svcTimes, dbTimes := every(1000, 1000, n), every(1300, 1000, n)
	var series []ts
	for d := range 12 {
		dep := func(more ...string) []string {
			return append([]string{model.LabelDependency, fmt.Sprintf("db%d", d%4) + strings.Repeat("x", d/4)}, more...)
		}
		a, b := 1+rng.IntN(9), 1+rng.IntN(9)
		series = append(series,
			ts{model.MetricOriginals, dep(), fmt.Sprintf("0+%dx59 3+%dx59", a, b)},
			ts{model.MetricAttempts, dep(model.LabelOutcome, "success"), fmt.Sprintf("0+%dx119", a+b)},
			ts{model.MetricAttempts, dep(model.LabelOutcome, "timeout"), fmt.Sprintf("_x%d 0+%dx%d", 10*d%50, b, n-1-10*d%50)},
			ts{model.MetricActiveCalls, dep(), fmt.Sprintf("%dx119", rng.IntN(20))},
			ts{model.MetricRequestDuration + "_bucket", dep(model.LabelResultClass, "success", "le", "0.1"), fmt.Sprintf("0+%dx119", a)},
			ts{model.MetricRequestDuration + "_bucket", dep(model.LabelResultClass, "success", "le", "+Inf"), fmt.Sprintf("0+%dx119", a+b)},
			ts{model.MetricRequestDuration + "_sum", dep(model.LabelResultClass, "success"), "0+0.25x119"},
		)
	}
	svc := snapshots(t, "svc", svcTimes, series...)
	db := snapshots(t, "db0", dbTimes, ts{model.MetricServerReceived, nil, "0+6x119"})
	targets := []model.TargetStatus{{Name: "db0", Up: true}, {Name: "svc", Up: true}}
	opts := ReportOptions{Bin: time.Second, Window: 5 * time.Second}
	report := func(procs int) (full, whole []byte) {
		prev := runtime.GOMAXPROCS(procs)
		defer runtime.GOMAXPROCS(prev)
		st := model.NewStore(model.StoreConfig{History: n + 1, MaxSeries: 1000})
		bounded := model.NewStore(model.StoreConfig{History: WholeHistory([][]int64{svcTimes, dbTimes}, opts), MaxSeries: 1000, KeepSeries: true})
		wb := NewWholeBuilder(bounded, opts)
		for i := range n {
			for _, s := range []*model.Snapshot{&svc[i], &db[i]} {
				st.Append(s)
				bounded.Append(s)
				wb.Observe(s.Time, true)
			}
		}
		rep := BuildReport(st, targets, opts)
		if len(rep.Dependencies) != 12 {
			t.Fatalf("%d rows, want 12", len(rep.Dependencies))
		}
		full, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		wrep, err := wb.Report(targets)
		if err != nil {
			t.Fatal(err)
		}
		whole, err = json.Marshal(wrep)
		if err != nil {
			t.Fatal(err)
		}
		return full, whole
	}
	full1, whole1 := report(1)
	full4, whole4 := report(4)
	if !bytes.Equal(full4, full1) {
		t.Error("BuildReport on 4 goroutines differs from one")
	}
	if !bytes.Equal(whole4, whole1) {
		t.Error("WholeBuilder's report on 4 goroutines differs from one")
	}
	if !bytes.Contains(full1, []byte(`"dependency_received_per_s"`)) {
		t.Error("no row reads db0's server-side series: the test covers less than it says")
	}
}
