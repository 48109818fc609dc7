//go:build race

package dump

const raceOn = true
