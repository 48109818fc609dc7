// Package model is retrytop's vocabulary: metric samples and snapshots as a
// scrape delivers them, flat float series as the store keeps them, and the
// retry signals that analysis derives from them.
//
// It does no I/O and imports nothing else of retrytop, so every other package
// can depend on it. Time is always data here (a time.Time or a Unix
// millisecond), never read from a clock.
package model
