package retry

// FakeClock is the package's fake clock (fakes_test.go) for the external
// tests: Sleep advances Now instead of sleeping.
type FakeClock = fakeClock

// NewFakeClock returns a FakeClock reading the real time now.
func NewFakeClock() *FakeClock { return newFakeClock() }

// HedgeClock is the package's hedge clock (hedge_test.go): a fake clock
// whose Sleep of exactly HedgeDelay returns only once Fire is called.
type HedgeClock = hedgeClock

// HedgeDelay is the delay HedgeClock holds back.
const HedgeDelay = hedgeDelay

// NewHedgeClock returns a HedgeClock reading the real time now.
func NewHedgeClock() *HedgeClock {
	return &hedgeClock{fakeClock: newFakeClock(), fire: make(chan struct{})}
}

// Fire lets the held-back sleeps return.
func (c *hedgeClock) Fire() { close(c.fire) }

// OnHedgeDecided has f called each time o's hedge timer fires, with
// whether a hedge was sent.
func OnHedgeDecided(o *Owner, f func(sent bool)) { o.hedgeDecided = f }
