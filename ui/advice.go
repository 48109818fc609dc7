package ui

// adviceFor is what to do about a finding, by code: one line that the
// FINDINGS section and the findings pane show under the message. The
// reasoning behind each rule is in docs/findings.md; this is its
// conclusion for the person watching the incident. An unknown code has
// none ("").
func adviceFor(code string) string {
	return advice[code]
}

var advice = map[string]string{
	"RETRY_AMPLIFICATION":     "cap retries with a shared retry budget (about 10 %) and fewer max attempts; retry only at one layer",
	"MULTIPLE_RETRY_LAYERS":   "retry at one layer only (usually the edge); inner layers fail fast and pass errors up",
	"HIDDEN_RETRIES":          "a hop without metrics retries: find it (proxy, SDK, mesh) and turn its retries off or give it a budget",
	"HOP_LOSS":                "calls vanish between hops: look for a proxy shedding or timing out before the next target counts them",
	"BUDGET_EXHAUSTED":        "the budget is doing its job; if denials persist, the provider needs capacity, not more retries",
	"ADMISSION_SHEDDING":      "load is shed before it reaches the provider: protection working; raise capacity if it lasts",
	"POOL_SATURATION":         "the pool is the bottleneck: lower the timeout or concurrency instead of growing the pool into the provider",
	"CAPACITY_SHORTFALL":      "arrivals x latency exceed the slots: shed load or add capacity; retries only deepen the queue",
	"MISLEADING_LATENCY":      "read the success p99, not the mixed one: fast failures hide a slow provider",
	"WORK_AFTER_CANCEL":       "the provider works for callers that gave up: propagate cancellation and check it before expensive work",
	"NESTED_RETRY_OWNERS":     "one retry owner per call: the inner owner should not retry inside the outer one's attempts",
	"TARGET_DOWN":             "check the target's address and that it is up; its signals are unknown until it answers",
	"NO_RETRY_SIGNALS":        "the target answers but exports no retry metrics: check the URL (.../metrics) and the dialect",
	"DEADLINE_NOT_PROPAGATED": "send the caller's deadline downstream (grpc-timeout or a header) so work stops when it expires",
	"METASTABLE":              "the load dropped but the failure stays: shed load or restart to break the retry loop",
	"SERIES_CAP":              "raise the per-target series cap or scrape a narrower endpoint",
}
