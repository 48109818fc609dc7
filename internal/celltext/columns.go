package celltext

import "github.com/retrytop/retrytop/model"

// Column is a signal column of a dependency table, the dashboard's
// overview and analyze's text alike. The constants are in priority
// order: a narrower table keeps the earlier ones. First what the incident
// is (amplification and the traffic it multiplies), then what users get
// (effective success), then the causes (retries, and the timeouts and
// errors that start them), then what protection turned away, then latency
// and capacity.
type Column int

// The columns, in priority order.
const (
	ColAmp Column = iota
	ColOrig
	ColAtt
	ColEff
	ColRetry
	ColTimeouts
	ColErrors
	ColAdmission
	ColBudget
	ColOK99
	ColAttOK
	ColFF99
	ColActive
	ColPool
	ColRescued
	ColHedge
	NumColumns
)

// ColumnValue is the value behind a column for one row.
func ColumnValue(c Column, s *model.Signals) model.Value {
	switch c {
	case ColOrig:
		return s.OriginalsPerS
	case ColAtt:
		return s.AttemptsPerS
	case ColAmp:
		return s.Amplification
	case ColEff:
		return s.EffectiveSuccess
	case ColAttOK:
		return s.AttemptSuccess
	case ColRetry:
		return s.RetriesPerS
	case ColRescued:
		return s.RescuedPerS
	case ColHedge:
		return s.HedgesPerS
	case ColBudget:
		return s.BudgetDeniedPerS
	case ColAdmission:
		return s.AdmissionRejectedPerS
	case ColErrors:
		return s.ProviderErrorsPerS
	case ColTimeouts:
		return s.TimeoutsPerS
	case ColActive:
		return s.ActiveCalls
	case ColPool:
		return s.PoolWaitP99
	case ColOK99:
		return s.Latency.At(model.ClassSuccess).P99
	case ColFF99:
		return s.Latency.At(model.ClassFastFailure).P99
	}
	return model.Absent
}

// EmptyColumns marks the columns zero or absent in every row.
func EmptyColumns(n int, row func(i int) *model.Signals) (empty [NumColumns]bool) {
	for c := range NumColumns {
		empty[c] = true
		for i := 0; i < n && empty[c]; i++ {
			if v := ColumnValue(c, row(i)); v.OK() && v.V() != 0 {
				empty[c] = false
			}
		}
	}
	return empty
}

// FitRanked chooses the columns of a table: in rank order (lower first,
// ties in index order), with every empty column after every other, each
// is shown while its cost still fits in width after used; the first that
// does not fit ends the table, so a wider table keeps every column a
// narrower one does. It returns the width used and whether each column is
// shown. The dashboard and analyze's text choose their columns through
// it, so a narrow terminal and a narrow report keep the same ones.
func FitRanked(rank []int, cost []int, empty []bool, used, width int) (int, []bool) {
	show := make([]bool, len(rank))
	order := make([]int, len(rank))
	for i := range order {
		order[i] = i
	}
	key := func(i int) int {
		if empty[i] {
			return rank[i] + 1<<20
		}
		return rank[i]
	}
	for i := 1; i < len(order); i++ { // insertion sort: stable, a few columns
		for j := i; j > 0 && key(order[j]) < key(order[j-1]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	for _, i := range order {
		if used+cost[i] > width {
			break
		}
		show[i] = true
		used += cost[i]
	}
	return used, show
}
