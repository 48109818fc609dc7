//go:build !race

package collect

const raceOn = false
