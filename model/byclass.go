package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ByClass holds one value per result class (success, fast_failure,
// failure, ...): a few entries, sorted by class. It replaces a map where
// a timeline holds one per row and bin: a map of two classes costs about
// 600 bytes, the slice 2 entries. Build it with Set; read it with At, Get
// or a range over the entries. JSON writes it as an object keyed by class,
// as a map would be written.
type ByClass[V any] []ClassValue[V]

// ClassValue is one class's entry of a ByClass.
type ClassValue[V any] struct {
	Class string
	V     V
}

// Get returns class's value and whether the class is present.
func (m ByClass[V]) Get(class string) (V, bool) {
	for i := range m {
		if m[i].Class == class {
			return m[i].V, true
		}
	}
	var zero V
	return zero, false
}

// At returns class's value, the zero value when the class is absent.
func (m ByClass[V]) At(class string) V {
	v, _ := m.Get(class)
	return v
}

// Has reports whether class is present.
func (m ByClass[V]) Has(class string) bool {
	_, ok := m.Get(class)
	return ok
}

// Set sets class's value, keeping the entries sorted by class.
func (m *ByClass[V]) Set(class string, v V) {
	i, found := slices.BinarySearchFunc(*m, class, func(e ClassValue[V], c string) int { return strings.Compare(e.Class, c) })
	if found {
		(*m)[i].V = v
		return
	}
	*m = slices.Insert(*m, i, ClassValue[V]{Class: class, V: v})
}

// Classes lists the classes present, sorted.
func (m ByClass[V]) Classes() []string {
	out := make([]string, len(m))
	for i := range m {
		out[i] = m[i].Class
	}
	return out
}

// MarshalJSON writes {"class": value, ...}, sorted by class; null when nil.
func (m ByClass[V]) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m[i].Class)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m[i].V)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (m *ByClass[V]) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*m = nil
		return nil
	}
	var raw map[string]V
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("by class: %w", err)
	}
	out := make(ByClass[V], 0, len(raw))
	for k, v := range raw {
		out.Set(k, v)
	}
	*m = out
	return nil
}

// ClassesOf is m as a ByClass (nil for a nil map).
func ClassesOf[V any](m map[string]V) ByClass[V] {
	if m == nil {
		return nil
	}
	out := make(ByClass[V], 0, len(m))
	for k, v := range m {
		out.Set(k, v)
	}
	return out
}
