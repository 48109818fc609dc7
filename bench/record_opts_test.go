package bench

import "github.com/retrytop/retrytop/scrape"

// recordOptions sets what runRecord sets beyond the hook.
func recordOptions(o scrape.Options) scrape.Options {
	o.ParseEvery = 60 // as cmd/retrytop.recordParseEvery
	return o
}
