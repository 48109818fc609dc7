package analysis

import (
	"sort"

	"github.com/retrytop/retrytop/model"
)

// ChainOfTargets builds a declared chain from target names in call order
// (user-facing first): hop i is (targets[i], targets[i+1]), and the last
// hop is the last target with the dependency it calls in rows. When the
// last target calls several dependencies, the first by name is taken; when
// it calls none (yet), the chain ends at the previous hop.
func ChainOfTargets(name string, targets []string, rows []model.Signals) Chain {
	c := Chain{Name: name}
	for i := 0; i+1 < len(targets); i++ {
		c.Hops = append(c.Hops, Hop{Target: targets[i], Dependency: targets[i+1]})
	}
	if len(targets) == 0 {
		return c
	}
	last := targets[len(targets)-1]
	var deps []string
	for _, r := range rows {
		if r.Target == last {
			deps = append(deps, r.Dependency)
		}
	}
	if len(deps) > 0 {
		sort.Strings(deps)
		c.Hops = append(c.Hops, Hop{Target: last, Dependency: deps[0]})
	}
	return c
}

// ChainSpec declares a chain by its targets in call order, as a config
// file or --chain does; ChainOfTargets resolves it against the rows.
type ChainSpec struct {
	Name    string
	Targets []string
}

// ResolveChains turns specs into chains against rows, after chains.
func ResolveChains(chains []Chain, specs []ChainSpec, rows []model.Signals) []Chain {
	out := append([]Chain(nil), chains...)
	for _, s := range specs {
		out = append(out, ChainOfTargets(s.Name, s.Targets, rows))
	}
	return out
}
