//go:build race

package retry

// raceEnabled: the race detector allocates, so allocation counts are not
// checked under -race.
const raceEnabled = true
