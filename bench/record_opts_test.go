package bench

import "github.com/retrytop/retrytop/collect"

// recordOptions sets what runRecord sets beyond the hook.
func recordOptions(o collect.Options) collect.Options {
	o.ParseEvery = 60 // as cmd/retrytop.recordParseEvery
	return o
}
