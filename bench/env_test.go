package bench

import (
	"os"
	"strconv"
	"time"
)

// rounds is ROUNDS (default 5): the rounds Rounds takes medians over.
func rounds() int {
	if n, err := strconv.Atoi(os.Getenv("ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 5
}

// roundTime is ROUND_MS (default 200 ms): how long one contender runs in
// one round.
func roundTime() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("ROUND_MS")); err == nil && n > 0 {
		return time.Duration(n) * time.Millisecond
	}
	return 200 * time.Millisecond
}
