package model

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestStatusJSONSeriesCap: series_cap holds the store's caps and the
// memory cap, whichever refused something, and reads back the same.
func TestStatusJSONSeriesCap(t *testing.T) {
	for _, tt := range []struct {
		name string
		st   TargetStatus
		want string
	}{
		{"none", TargetStatus{Name: "a"}, ``},
		{"store", TargetStatus{Name: "a", DroppedSeries: 2, SeriesCap: &SeriesCap{ByTarget: 2, PerTarget: 6, Kept: 6, StoreKept: 6}},
			`"series_cap":{"by_target_cap":2,"by_total_cap":0,"per_target_cap":6,"total_cap":0,"kept":6,"store_kept":6}`},
		{"memory", TargetStatus{Name: "a", MemoryCap: &MemoryCap{ByMemory: 1000001, Needed: 512000512, Budget: 128 << 20}},
			`"series_cap":{"by_memory_limit":1000001,"memory_needed_bytes":512000512,"memory_budget_bytes":134217728}`},
	} {
		b, err := json.Marshal(tt.st)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		got := ""
		if c, ok := m["series_cap"]; ok {
			got = `"series_cap":` + string(c)
		}
		if got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
		if _, ok := m["name"]; !ok || m["MemoryCap"] != nil {
			t.Errorf("%s: the other fields as before, MemoryCap only in series_cap: %s", tt.name, b)
		}
		var back TargetStatus
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, tt.st) {
			t.Errorf("%s: read back %+v, want %+v", tt.name, back, tt.st)
		}
	}
}
