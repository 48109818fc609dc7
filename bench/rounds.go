package bench

import (
	"slices"
	"time"
)

// Contender is one side of a ratio: run does one operation.
type Contender struct {
	Name string
	Run  func()
}

// Rounds runs the contenders interleaved, rounds times, each round timing
// enough operations of each to take about roundTime, and returns the
// median time per operation of each and, for every contender, the median
// over rounds of its time divided by the first contender's (the anchor)
// in the same round. Interleaving keeps a busy machine's load alike for
// both sides of a ratio; the median drops rounds a neighbour disturbed.
func Rounds(rounds int, roundTime time.Duration, cs ...Contender) (nsPerOp, ratio []float64) {
	inner := make([]int, len(cs))
	for i, c := range cs {
		c.Run() // warm-up: pools, interning, the store's rings
		start := time.Now()
		c.Run()
		d := time.Since(start)
		inner[i] = max(1, int(roundTime/max(d, time.Microsecond)))
	}
	per := make([][]float64, len(cs))
	rat := make([][]float64, len(cs))
	for r := 0; r < rounds; r++ {
		round := make([]float64, len(cs))
		for i, c := range cs {
			start := time.Now()
			for k := 0; k < inner[i]; k++ {
				c.Run()
			}
			round[i] = float64(time.Since(start).Nanoseconds()) / float64(inner[i])
			per[i] = append(per[i], round[i])
		}
		for i := range cs {
			rat[i] = append(rat[i], round[i]/round[0])
		}
	}
	nsPerOp = make([]float64, len(cs))
	ratio = make([]float64, len(cs))
	for i := range cs {
		nsPerOp[i], ratio[i] = median(per[i]), median(rat[i])
	}
	return nsPerOp, ratio
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
