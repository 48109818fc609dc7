package dashboard

import "github.com/retrytop/retrytop/internal/gcpercent"

// LiveGCPercent is the collector's GOGC while a dashboard watches live
// targets (docs/performance.md, "Watch RSS"). Go's default of 100 lets
// the heap grow to twice what is live before a collection, and a live
// dashboard's live heap is most of what it holds: its history and the
// frames' timelines, which a collection never frees. At 40 the heap
// peaks near 1.4 times it, for a collection two and a half times as
// often.
const LiveGCPercent = 40

// LiveGC sets GOGC to LiveGCPercent, unless the environment sets GOGC,
// and returns what puts the previous setting back: defer LiveGC()().
func LiveGC() (restore func()) { return gcpercent.Set(LiveGCPercent) }
