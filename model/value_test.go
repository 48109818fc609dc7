package model

import (
	"math"
	"testing"
)

// A Value is 8 bytes: absent is the zero value, and every float64 is a
// present value, zero and NaN included; the one NaN payload a Value cannot
// hold becomes another NaN, still present.
func TestValueEncoding(t *testing.T) {
	var zero Value
	if zero.OK() || zero != Absent || zero.V() != 0 || zero.Or(7) != 7 {
		t.Errorf("the zero Value: ok %v, v %v, or %v; want absent", zero.OK(), zero.V(), zero.Or(7))
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -2.5, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1)} {
		v := Some(f)
		if got, ok := v.Get(); !ok || got != f || math.Signbit(got) != math.Signbit(f) {
			t.Errorf("Some(%v).Get() = %v %v", f, got, ok)
		}
	}
	if v := Some(math.NaN()); !v.OK() || !math.IsNaN(v.V()) {
		t.Errorf("Some(NaN) = %v %v, want a present NaN", v.V(), v.OK())
	}
	if v := Some(math.Float64frombits(absentBits)); !v.OK() || !math.IsNaN(v.V()) {
		t.Errorf("Some of the absent pattern = %v %v, want a present NaN", v.V(), v.OK())
	}
	if ValueOf(3, false) != Absent || ValueOf(3, true) != Some(3) {
		t.Error("ValueOf does not follow ok")
	}
}
