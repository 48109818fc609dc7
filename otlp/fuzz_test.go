package otlp

import (
	"testing"
)

// The decoders never panic, and what they accept applies and renders.
func FuzzDecodeProto(f *testing.F) {
	f.Add([]byte{0x0a, 0x00})
	f.Add([]byte{0x0a, 0x05, 0x12, 0x03, 0x12, 0x01, 0x00})
	f.Add(protoExport(3, 1, [3]uint64{1, 2, 3}, 0.5))
	f.Add(seriesExport("s", 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		ex, err := DecodeProto(b, 1000)
		if err != nil {
			return
		}
		st := NewState(Limits{SeriesPerResource: 1000})
		if _, err := st.Apply(ex, "sender"); err == nil {
			for _, name := range st.Targets() {
				st.Exposition(name)
			}
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(export(1, 1, 2, [3]int{1, 2, 3})))
	f.Add([]byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"h","exponentialHistogram":{"dataPoints":[{"count":"3","scale":20,"positive":{"offset":-5,"bucketCounts":["1","2"]}}]}}]}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ex, err := DecodeJSON(b, 1000)
		if err != nil {
			return
		}
		st := NewState(Limits{SeriesPerResource: 1000})
		if _, err := st.Apply(ex, "sender"); err == nil {
			for _, name := range st.Targets() {
				st.Exposition(name)
			}
		}
	})
}
