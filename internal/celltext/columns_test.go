package celltext

import (
	"testing"

	"github.com/retrytop/retrytop/model"
)

// TestFitRanked: columns go in by rank with the empty ones after every
// other, and the first that does not fit ends the table.
func TestFitRanked(t *testing.T) {
	rank := []int{3, 0, 1, 2}
	cost := []int{5, 10, 1, 10}
	empty := []bool{false, false, true, false}
	for _, c := range []struct {
		width int
		want  []bool
		used  int
	}{
		{9, []bool{false, false, false, false}, 0},
		{10, []bool{false, true, false, false}, 10},
		{20, []bool{false, true, false, true}, 20},
		{24, []bool{false, true, false, true}, 20}, // the empty column would fit, but comes after one that does not
		{25, []bool{true, true, false, true}, 25},
		{26, []bool{true, true, true, true}, 26},
	} {
		used, show := FitRanked(rank, cost, empty, 0, c.width)
		if used != c.used {
			t.Errorf("width %d: used %d, want %d", c.width, used, c.used)
		}
		for i := range show {
			if show[i] != c.want[i] {
				t.Errorf("width %d: shown %v, want %v", c.width, show, c.want)
				break
			}
		}
	}
}

// TestEmptyColumns: a column is empty when every row has it zero or
// absent; one non-zero value in any row keeps it.
func TestEmptyColumns(t *testing.T) {
	rows := []model.Signals{
		{RetriesPerS: model.Some(0), TimeoutsPerS: model.Some(0)},
		{RetriesPerS: model.Some(2)},
	}
	empty := EmptyColumns(len(rows), func(i int) *model.Signals { return &rows[i] })
	if empty[ColRetry] || !empty[ColTimeouts] || !empty[ColErrors] {
		t.Errorf("retry %v timeouts %v errors %v, want false true true", empty[ColRetry], empty[ColTimeouts], empty[ColErrors])
	}
}
