package retry

// FakeClock is the package's fake clock (fakes_test.go) for the external
// tests: Sleep advances Now instead of sleeping.
type FakeClock = fakeClock

// NewFakeClock returns a FakeClock reading the real time now.
func NewFakeClock() *FakeClock { return newFakeClock() }
