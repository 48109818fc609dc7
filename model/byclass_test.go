package model

import (
	"encoding/json"
	"testing"
)

func TestByClass(t *testing.T) {
	var m ByClass[float64]
	if b, _ := json.Marshal(m); string(b) != "null" {
		t.Errorf("nil: %s, want null (as a nil map)", b)
	}
	m.Set("success", 1)
	m.Set("fast_failure", 2)
	m.Set("failure", 3)
	m.Set("success", 4)
	if got := m.Classes(); len(got) != 3 || got[0] != "failure" || got[1] != "fast_failure" || got[2] != "success" {
		t.Errorf("classes %v, want sorted and unique", got)
	}
	if v, ok := m.Get("success"); !ok || v != 4 {
		t.Errorf("success = %v %v, want 4 (set twice: the last)", v, ok)
	}
	if v, ok := m.Get("cancelled"); ok || v != 0 || m.At("cancelled") != 0 || m.Has("cancelled") {
		t.Errorf("an absent class reads %v %v", v, ok)
	}
	b, err := json.Marshal(m)
	if err != nil || string(b) != `{"failure":3,"fast_failure":2,"success":4}` {
		t.Fatalf("json %s %v, want a map's object", b, err)
	}
	want, _ := json.Marshal(map[string]float64{"success": 4, "fast_failure": 2, "failure": 3})
	if string(b) != string(want) {
		t.Errorf("json %s, a map writes %s", b, want)
	}
	var back ByClass[float64]
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 3 || back.At("fast_failure") != 2 {
		t.Errorf("read back %v %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"a":"x"}`), &back); err == nil {
		t.Error("a string value read as a number")
	}
	if got := ClassesOf(map[string]float64{"b": 1, "a": 2}); len(got) != 2 || got[0].Class != "a" {
		t.Errorf("ClassesOf %v, want sorted", got)
	}
	type holder struct {
		L ByClass[float64] `json:"l,omitempty"`
	}
	if b, _ := json.Marshal(holder{L: ByClass[float64]{}}); string(b) != "{}" {
		t.Errorf("empty with omitempty: %s, want omitted as an empty map is", b)
	}
}
