package model

import (
	"encoding/json"
	"math"
	"testing"
)

// Values a target may export that JSON numbers cannot hold are written as
// Prometheus' HTTP API writes them, and read back.
func TestNonFiniteJSON(t *testing.T) {
	tests := []struct {
		in   Value
		want string
	}{
		{Some(math.Inf(1)), `"+Inf"`},
		{Some(math.Inf(-1)), `"-Inf"`},
		{Some(math.NaN()), `"NaN"`},
		{Some(1.5), `1.5`},
		{Absent, `null`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.in)
		if err != nil || string(b) != tt.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", tt.in, b, err, tt.want)
			continue
		}
		var back Value
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("Unmarshal(%s): %v", b, err)
			continue
		}
		same := back.OK() == tt.in.OK() && (back.V() == tt.in.V() || math.IsNaN(back.V()) && math.IsNaN(tt.in.V()))
		if !same {
			t.Errorf("round trip of %s: %v, want %v", b, back, tt.in)
		}
	}
	b, err := json.Marshal([]Breakdown{{Key: "queue/critical", PerS: math.Inf(1)}})
	if err != nil || string(b) != `[{"key":"queue/critical","per_s":"+Inf"}]` {
		t.Errorf("breakdown: %s, %v", b, err)
	}
	var bs []Breakdown
	if err := json.Unmarshal(b, &bs); err != nil || len(bs) != 1 || !math.IsInf(bs[0].PerS, 1) {
		t.Errorf("breakdown round trip: %v, %v", bs, err)
	}
	var v Value
	if err := json.Unmarshal([]byte(`"lots"`), &v); err == nil {
		t.Error(`"lots" read as a number`)
	}
}
