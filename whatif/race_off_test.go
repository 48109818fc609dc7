//go:build !race

package whatif

// raceOn: the race detector is on (the seed tests then run fewer recordings).
const raceOn = false
