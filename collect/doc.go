// Package collect reads Prometheus endpoints into model snapshots.
//
// A Scraper polls many targets, each on its own interval with a
// deterministic jitter, a timeout and a body size cap; one scheduler hands
// due scrapes to a bounded pool of workers, so hundreds of targets cost a
// few dozen goroutines, and the target set may change while it runs. It negotiates
// OpenMetrics or the Prometheus text format, accepts gzip, authenticates with
// prometheus/common's HTTPClientConfig (basic auth, bearer tokens and their
// files, TLS with custom CA and client certificates) and appends every
// successful scrape to a model.Store. One target's failure or slowness never
// delays another.
//
// Parsing sits behind the small Parser interface so that a faster parser can
// replace ExpfmtParser, the prometheus/common/expfmt implementation; a
// filter lets a caller materialise only the families it needs.
//
// Everything that came from a target (errors, help text) is untrusted: text
// meant for a screen or a log goes through Sanitize, and URLs through SafeURL
// so that credentials never appear.
package collect
