package model

import (
	"sort"
	"strconv"
	"strings"
)

// Label is one name/value pair of a series.
type Label struct {
	Name, Value string
}

// Labels is a set of labels sorted by name, so that equal sets compare and
// print identically.
type Labels []Label

// LabelsFromMap builds sorted Labels from a map.
func LabelsFromMap(m map[string]string) Labels {
	ls := make(Labels, 0, len(m))
	for n, v := range m {
		ls = append(ls, Label{Name: n, Value: v})
	}
	ls.Sort()
	return ls
}

// LabelsFromPairs builds sorted Labels from name, value, name, value...
// An odd trailing name is ignored.
func LabelsFromPairs(pairs ...string) Labels {
	ls := make(Labels, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		ls = append(ls, Label{Name: pairs[i], Value: pairs[i+1]})
	}
	ls.Sort()
	return ls
}

// Sort orders the labels by name in place.
func (ls Labels) Sort() {
	sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
}

// Get returns the value of the named label, or "" when it is not set
// (Prometheus treats an empty value and a missing label alike).
func (ls Labels) Get(name string) string {
	for _, l := range ls {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

// Has reports whether the named label is present.
func (ls Labels) Has(name string) bool {
	for _, l := range ls {
		if l.Name == name {
			return true
		}
	}
	return false
}

// With returns a copy with the label set to value (added or replaced).
func (ls Labels) With(name, value string) Labels {
	out := make(Labels, 0, len(ls)+1)
	done := false
	for _, l := range ls {
		if l.Name == name {
			out = append(out, Label{Name: name, Value: value})
			done = true
			continue
		}
		out = append(out, l)
	}
	if !done {
		out = append(out, Label{Name: name, Value: value})
		out.Sort()
	}
	return out
}

// Without returns a copy without the named labels.
func (ls Labels) Without(names ...string) Labels {
	out := make(Labels, 0, len(ls))
next:
	for _, l := range ls {
		for _, n := range names {
			if l.Name == n {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// Equal reports whether two sorted label sets are identical.
func (ls Labels) Equal(o Labels) bool {
	if len(ls) != len(o) {
		return false
	}
	for i := range ls {
		if ls[i] != o[i] {
			return false
		}
	}
	return true
}

// AppendKey appends an unambiguous identity of the labels to buf, for use
// as a map key without building a string per lookup.
func (ls Labels) AppendKey(buf []byte) []byte {
	for _, l := range ls {
		buf = append(buf, l.Name...)
		buf = append(buf, 0)
		buf = append(buf, l.Value...)
		buf = append(buf, 0)
	}
	return buf
}

// String renders the labels in exposition form: {a="1",b="2"}. Values are
// quoted with Go escaping, so control characters never reach a terminal raw.
func (ls Labels) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.Name)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(l.Value))
	}
	b.WriteByte('}')
	return b.String()
}
