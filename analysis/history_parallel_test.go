package analysis

import (
	"math/rand/v2"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/model"
)

// EvaluateHistory makes each bin's findings on several goroutines and
// merges them in bin order: the findings (codes, peaks, first and last
// bins, bin counts) are those of one goroutine going through the bins.
// The timelines are random episodes over 300 bins (enough for every
// goroutine to take many bins, forBins' minimum being 16): amplification
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
	frame := model.Frame{Timelines: map[model.Key][]model.Signals{app[0].Key(): app, client[0].Key(): client, edge[0].Key(): edge}}
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
