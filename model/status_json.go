package model

import "encoding/json"

// MemoryCap is a body whose parse was refused because it would take more
// than the scrapes' share of the process' memory (--memory-limit): its
// series are counted, not stored. JSON writes it inside a target's
// series_cap, beside the store's caps.
type MemoryCap struct {
	// ByMemory is the series the body held that the parse would keep.
	ByMemory int `json:"by_memory_limit"`
	// Needed is what parsing them was taken to cost, Budget the scrapes'
	// share of memory, in bytes.
	Needed int64 `json:"memory_needed_bytes"`
	Budget int64 `json:"memory_budget_bytes"`
}

// seriesCapJSON is series_cap: the store's caps and the memory cap, each
// when it refused something.
type seriesCapJSON struct {
	*SeriesCap
	*MemoryCap
}

// statusJSON is TargetStatus as JSON: series_cap holds MemoryCap too.
type statusJSON struct {
	*plainStatus
	SeriesCap *seriesCapJSON `json:"series_cap,omitempty"`
}

type plainStatus TargetStatus

// MarshalJSON writes the status with MemoryCap inside series_cap.
func (t TargetStatus) MarshalJSON() ([]byte, error) {
	w := statusJSON{plainStatus: (*plainStatus)(&t)}
	if t.SeriesCap != nil || t.MemoryCap != nil {
		w.SeriesCap = &seriesCapJSON{t.SeriesCap, t.MemoryCap}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *TargetStatus) UnmarshalJSON(b []byte) error {
	*t = TargetStatus{}
	w := statusJSON{plainStatus: (*plainStatus)(t)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if c := w.SeriesCap; c != nil {
		t.SeriesCap, t.MemoryCap = c.SeriesCap, c.MemoryCap
	}
	return nil
}
