package otlp

import (
	"bytes"
	"testing"

	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
)

// applied applies what a decoder accepted and checks that every
// resource's exposition parses as the text format, legacy names only.
func applied(t *testing.T, ex *Export) {
	st := NewState(Limits{SeriesPerResource: 1000})
	if _, err := st.Apply(ex, "fuzz"); err != nil {
		return
	}
	for _, name := range st.Targets() {
		body, _ := st.Exposition(name)
		p := expfmt.NewTextParser(pmodel.LegacyValidation)
		if _, err := p.TextToMetricFamilies(bytes.NewReader(body)); err != nil {
			t.Fatalf("%s: exposition does not parse: %v\n%s", name, err, body)
		}
	}
}

// The decoders never panic, and what they accept applies and renders as
// an exposition that parses.
func FuzzDecodeProto(f *testing.F) {
	f.Add([]byte{0x0a, 0x00})
	f.Add([]byte{0x0a, 0x05, 0x12, 0x03, 0x12, 0x01, 0x00})
	f.Add(protoExport(3, 1, [3]uint64{1, 2, 3}, 0.5))
	f.Add(seriesExport("s", 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		if ex, err := DecodeProto(b, 1000); err == nil {
			applied(t, ex)
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(export(1, 1, 2, [3]int{1, 2, 3})))
	f.Add([]byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"h","exponentialHistogram":{"dataPoints":[{"count":"3","scale":20,"positive":{"offset":-5,"bucketCounts":["1","2"]}}]}}]}]}]}`))
	f.Add([]byte(`{"resourceMetrics":[{"resource":{"attributes":[{"key":"2xx","value":{"stringValue":"\u00ff"}}]},"scopeMetrics":[{"metrics":[{"name":"9.total","sum":{"isMonotonic":true,"dataPoints":[{"attributes":[{"key":"__a","value":{"intValue":"3"}}],"asDouble":"NaN"}]}}]}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if ex, err := DecodeJSON(b, 1000); err == nil {
			applied(t, ex)
		}
	})
}
