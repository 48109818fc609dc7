//go:build !race

package dump

const raceOn = false
