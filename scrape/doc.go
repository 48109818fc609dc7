// Package scrape polls Prometheus endpoints into a model.Store.
//
// A Scraper polls many targets, each on its own interval with a
// deterministic phase, a timeout and a body size cap; one scheduler hands
// due scrapes to a bounded pool of workers, so hundreds of targets cost a
// few dozen goroutines, and the target set may change while it runs. It
// negotiates OpenMetrics or the Prometheus text format, accepts gzip,
// authenticates with prometheus/common's HTTPClientConfig and appends every
// successful scrape to the store. One target's failure or slowness never
// delays another. MemoryBudget bounds the bodies and parses in flight.
//
// Everything that came from a target is untrusted: errors go through
// internal/safetext and URLs through SafeURL so credentials never appear.
package scrape
