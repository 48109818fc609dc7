package dump

import (
	"testing"

	"github.com/retrytop/retrytop/expo"
)

// TestApplyValuesConverts: a map applied with values only (the decoded
// numbers, no text) converts each slot as the parser converts its token,
// or refuses where the parser decides otherwise: every slot of a
// histogram, a summary and a gauge, each given numbers of every sign (a
// negative count or bucket the parser does not take as one), read
// changed alone and with the others, ends as the parse of that body.
func TestApplyValuesConverts(t *testing.T) {
	a := []byte(`# TYPE h histogram
h_bucket{le="0.1"} 3
h_bucket{le="+Inf"} 5
h_sum 1.5
h_count 5
# TYPE s summary
s{quantile="0.5"} 0.25
s_sum 3
s_count 7
# TYPE g gauge
g 4
`)
	var ta tokens
	ta.wide = true
	tokenize(a, &ta)
	refused, applied := 0, 0
	for k := range ta.nums {
		for _, m := range []int64{-3, 0, 2, 9} {
			fams, vm, err := expo.ExpfmtParser{}.ParseValues("t", a, "text/plain", nil)
			if err != nil {
				t.Fatal(err)
			}
			_, offs, err := ta.renderOffs(nil, nil, len(a))
			if err != nil {
				t.Fatal(err)
			}
			sm := vm.Bind(fams, offs)
			if sm == nil {
				t.Fatal("no map")
			}
			tb := ta
			tb.nums = append([]num(nil), ta.nums...)
			tb.nums[k].m, tb.nums[k].f, tb.nums[k].hasExp, tb.nums[k].exp = m, 0, false, 0
			b, _, err := tb.renderOffs(nil, nil, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			changed := make([]bool, len(tb.nums))
			changed[k] = tb.nums[k] != ta.nums[k]
			var vs valueState
			got, ok := sm.ApplyValues(changed, vs.slotValues(tb.nums, nil))
			want, err := expo.ExpfmtParser{}.Parse("t", b, "text/plain", nil)
			if !ok {
				refused++
				continue
			}
			applied++
			if err != nil {
				t.Errorf("slot %d = %d: the map took %q, which the parser refuses: %v", k, m, b, err)
				continue
			}
			if d := diffFamilies(got, want); d != "" {
				t.Errorf("slot %d = %d: %s", k, m, d)
			}
		}
	}
	if refused == 0 || applied == 0 {
		t.Errorf("%d applied, %d refused: the test reaches only one side", applied, refused)
	}
}
