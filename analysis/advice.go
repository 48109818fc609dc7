package analysis

// Advice is what to do about a finding, by code: Short in one line for the
// dashboard (the FINDINGS section and the findings pane), Long in a
// sentence for analyze's JSON and text and the postmortem page. The
// reasoning behind each rule is in docs/findings.md; this is its
// conclusion for the person in the incident. One list, so every view says
// the same thing.
type Advice struct {
	Short, Long string
}

// AdviceFor returns a code's advice (zero for a code without any).
func AdviceFor(code string) Advice { return advice[code] }

var advice = map[string]Advice{
	CodeRetryAmplification: {"cap retries with a shared retry budget (about 10 %) and fewer max attempts; retry only at one layer",
		"Bound retries with a shared retry budget (about 10 % of originals) and full-jitter backoff, and retry at one layer only: the provider gets this many calls per admitted operation at the moment it has the least capacity."},
	CodeMultipleRetryLayers: {"retry at one layer only (usually the edge); inner layers fail fast and pass errors up",
		"Retry at one layer (the one that owns the operation's deadline) and let the others pass failures up with a single attempt: layers multiply, up to the worst case shown."},
	CodeHiddenRetries: {"a hop without metrics retries: find it (proxy, SDK, mesh) and turn its retries off or give it a budget",
		"Something between these hops retries without exporting metrics (a proxy, an SDK, an HTTP client's silent re-sends): find it, and disable or instrument its retries."},
	CodeHopLoss: {"calls vanish between hops: look for a proxy shedding or timing out before the next target counts them",
		"Fewer requests arrived than were sent: look for a proxy or load balancer shedding or failing them between the hops."},
	CodeBudgetExhausted: {"the budget is doing its job; if denials persist, the provider needs capacity, not more retries",
		"The budget is doing its job by denying retries; if the denials hurt users, the provider lacks capacity: raising the budget would only add load."},
	CodeAdmissionShedding: {"load is shed before it reaches the provider: protection working; raise capacity if it lasts",
		"Local shedding protects the provider; make sure shed calls fail fast and that callers do not retry them."},
	CodePoolSaturation: {"the pool is the bottleneck: lower the timeout or concurrency instead of growing the pool into the provider",
		"Calls wait for a connection or slot: size the pool to what the provider can serve and count the wait inside the deadline."},
	CodeCapacityShortfall: {"arrivals x latency exceed the slots: shed load or add capacity; retries only deepen the queue",
		"The provider cannot serve the offered load: add capacity or shed earlier and cheaper; retries only lengthen its queue."},
	CodeMisleadingLatency: {"read the success p99, not the mixed one: fast failures hide a slow provider",
		"The mixed latency hides what users see: watch and alert on the success and fast-failure quantiles separately."},
	CodeWorkAfterCancel: {"the provider works for callers that gave up: propagate cancellation and check it before expensive work",
		"The provider finishes work whose caller has gone: propagate cancellation and deadlines, and drop queued requests whose caller disconnected."},
	CodeNestedRetryOwners: {"one retry owner per call: the inner owner should not retry inside the outer one's attempts",
		"A retrying call runs inside another owner's attempt: keep one owner per operation and pass the inner failures up."},
	CodeTargetDown: {"check the target's address and that it is up; its signals are unknown until it answers",
		"The target could not be read: check its address and that it serves /metrics."},
	CodeRecordingEnded: {"the recording outlived the run: nothing to fix; its last scrapes found everything stopped",
		"Every target stopped answering before the recording ended: the run it recorded was over, not a target down."},
	CodeNoRetrySignals: {"no dialect reads it: check the URL (.../metrics), force a dialect (URL@envoy), or `retrytop dialect draft URL`",
		"The target exports none of the retry families retrytop reads: check the URL, force its dialect (URL@dialect), or let `retrytop dialect draft URL` draft a custom mapping from its exposition (docs/dialects.md)."},
	CodeDeadlineDropped: {"send the caller's deadline downstream (grpc-timeout or a header) so work stops when it expires",
		"Send the remaining deadline with every attempt (grpc-timeout, X-Request-Timeout), so the callee stops when the caller does."},
	CodeMetastable: {"the load dropped but the failure stays: shed load or restart to break the retry loop",
		"The overload outlived its trigger: retries keep it going. Cut retries (budget) or shed load to get out; the dependency recovering alone does not end it."},
	CodeUnsafeRetries: {"retries re-send a non-idempotent request: add an Idempotency-Key the provider deduplicates, or stop retrying it",
		"Retries re-send POST/PATCH requests the provider may already have carried out: make the request idempotent (an Idempotency-Key the provider deduplicates) or stop retrying it."},
	CodeBreakerStuckOpen: {"the breaker refuses calls the dependency would serve: shorten its open wait, let half-open probes close it",
		"The circuit breaker keeps refusing calls after its dependency answers again: shorten its open wait and let a few successful half-open probes close it."},
	CodeQuotaNotRefilling: {"the retry quota does not refill after failures stop: check the client's retry mode and quota refill",
		"The retry quota drained during the failures and does not come back with successes: retries stay refused after recovery; check the client's retry mode (the AWS SDKs' adaptive mode) or restart the client."},
	CodeEmitterDataOff: {"the emitter hides the data retrytop needs: turn on the setting the finding names",
		"The dialect recognises the emitter, but one of its settings keeps the retry data out of its metrics: turn on the setting the finding names (docs/dialects.md)."},
	"SERIES_CAP": {"raise the per-target series cap or scrape a narrower endpoint",
		"The store dropped series over its per-target cap: raise the cap or scrape a narrower endpoint, or the dropped series' signals are unknown."},
}
