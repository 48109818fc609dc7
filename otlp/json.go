package otlp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// jnum is an OTLP/JSON number: 64-bit integers come as strings, doubles
// as numbers, either may come as the other.
type jnum struct {
	s string
}

func (n *jnum) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		n.s = s
		return nil
	}
	n.s = string(b)
	return nil
}

func (n jnum) uint() (uint64, error) {
	if n.s == "" {
		return 0, nil
	}
	return strconv.ParseUint(n.s, 10, 64)
}

func (n jnum) int() (int64, error) {
	if n.s == "" {
		return 0, nil
	}
	return strconv.ParseInt(n.s, 10, 64)
}

func (n jnum) float() (float64, error) {
	if n.s == "" {
		return 0, nil
	}
	return strconv.ParseFloat(n.s, 64) // "NaN", "Infinity" and "-Infinity" too
}

type jsonRequest struct {
	ResourceMetrics []struct {
		Resource struct {
			Attributes []jsonKV `json:"attributes"`
		} `json:"resource"`
		ScopeMetrics []struct {
			Metrics []jsonMetric `json:"metrics"`
		} `json:"scopeMetrics"`
	} `json:"resourceMetrics"`
}

type jsonKV struct {
	Key   string `json:"key"`
	Value struct {
		StringValue *string         `json:"stringValue"`
		BoolValue   *bool           `json:"boolValue"`
		IntValue    *jnum           `json:"intValue"`
		DoubleValue *jnum           `json:"doubleValue"`
		Array       json.RawMessage `json:"arrayValue"`
		KV          json.RawMessage `json:"kvlistValue"`
	} `json:"value"`
}

type jsonData struct {
	DataPoints             []jsonPoint `json:"dataPoints"`
	AggregationTemporality int8        `json:"aggregationTemporality"`
	IsMonotonic            bool        `json:"isMonotonic"`
}

type jsonMetric struct {
	Name                 string    `json:"name"`
	Unit                 string    `json:"unit"`
	Gauge                *jsonData `json:"gauge"`
	Sum                  *jsonData `json:"sum"`
	Histogram            *jsonData `json:"histogram"`
	ExponentialHistogram *jsonData `json:"exponentialHistogram"`
}

type jsonPoint struct {
	Attributes     []jsonKV `json:"attributes"`
	StartTime      jnum     `json:"startTimeUnixNano"`
	Time           jnum     `json:"timeUnixNano"`
	AsDouble       *jnum    `json:"asDouble"`
	AsInt          *jnum    `json:"asInt"`
	Count          jnum     `json:"count"`
	Sum            *jnum    `json:"sum"`
	BucketCounts   []jnum   `json:"bucketCounts"`
	ExplicitBounds []jnum   `json:"explicitBounds"`
	Scale          int32    `json:"scale"`
	Positive       *struct {
		Offset       int32  `json:"offset"`
		BucketCounts []jnum `json:"bucketCounts"`
	} `json:"positive"`
}

// DecodeJSON decodes an ExportMetricsServiceRequest in OTLP's JSON
// encoding; limit bounds the points as in DecodeProto.
func DecodeJSON(b []byte, limit int) (*Export, error) {
	var req jsonRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&req); err != nil {
		return nil, bad("request", "%v", err)
	}
	d := &decoder{limit: limit}
	ex := &Export{}
	for _, rm := range req.ResourceMetrics {
		var r Resource
		for _, kv := range rm.Resource.Attributes {
			r.Attrs = append(r.Attrs, kv.attr())
		}
		for _, sm := range rm.ScopeMetrics {
			for _, jm := range sm.Metrics {
				m, err := d.jsonMetric(jm)
				if err != nil {
					return nil, fmt.Errorf("metric %q: %w", jm.Name, err)
				}
				if m.Kind != 0 {
					r.Metrics = append(r.Metrics, m)
				}
			}
		}
		ex.Resources = append(ex.Resources, r)
	}
	return ex, nil
}

func (kv jsonKV) attr() Attr {
	a := Attr{Key: kv.Key}
	v := kv.Value
	switch {
	case v.StringValue != nil:
		a.Value = *v.StringValue
	case v.BoolValue != nil:
		a.Value = strconv.FormatBool(*v.BoolValue)
	case v.IntValue != nil:
		a.Value = v.IntValue.s
	case v.DoubleValue != nil:
		a.Value = v.DoubleValue.s
	case v.Array != nil || v.KV != nil:
		a.Value = "(complex)"
	}
	return a
}

func (d *decoder) jsonMetric(jm jsonMetric) (Metric, error) {
	m := Metric{Name: jm.Name, Unit: jm.Unit}
	if err := checkName(m.Name); err != nil {
		return m, err
	}
	var data *jsonData
	switch {
	case jm.Gauge != nil:
		m.Kind, data = KindGauge, jm.Gauge
	case jm.Sum != nil:
		m.Kind, data = KindSum, jm.Sum
		m.Monotonic = data.IsMonotonic
	case jm.Histogram != nil:
		m.Kind, data = KindHistogram, jm.Histogram
	case jm.ExponentialHistogram != nil:
		m.Kind, data = KindExpHistogram, jm.ExponentialHistogram
	default:
		return m, nil
	}
	if m.Kind != KindGauge {
		m.Temporality = Temporality(data.AggregationTemporality)
	}
	for i := range data.DataPoints {
		if err := d.count(); err != nil {
			return m, err
		}
		p, err := jsonPointOf(m.Kind, &data.DataPoints[i])
		if err != nil {
			return m, fmt.Errorf("point %d: %w", i, err)
		}
		m.Points = append(m.Points, p)
	}
	return m, nil
}

func jsonPointOf(k Kind, jp *jsonPoint) (Point, error) {
	var p Point
	var err error
	for _, kv := range jp.Attributes {
		p.Attrs = append(p.Attrs, kv.attr())
	}
	if p.StartNs, err = jp.StartTime.uint(); err != nil {
		return p, err
	}
	if p.TimeNs, err = jp.Time.uint(); err != nil {
		return p, err
	}
	switch k {
	case KindGauge, KindSum:
		switch {
		case jp.AsDouble != nil:
			p.Value, err = jp.AsDouble.float()
		case jp.AsInt != nil:
			var v int64
			v, err = jp.AsInt.int()
			p.Value = float64(v)
		}
		return p, err
	}
	if p.Count, err = jp.Count.uint(); err != nil {
		return p, err
	}
	if jp.Sum != nil {
		if p.Sum, err = jp.Sum.float(); err != nil {
			return p, err
		}
		p.HasSum = true
	}
	if k == KindHistogram {
		for _, c := range jp.BucketCounts {
			v, err := c.uint()
			if err != nil {
				return p, err
			}
			p.Counts = append(p.Counts, v)
		}
		for _, b := range jp.ExplicitBounds {
			v, err := b.float()
			if err != nil {
				return p, err
			}
			p.Bounds = append(p.Bounds, v)
		}
		return p, checkBuckets(&p)
	}
	p.Scale = jp.Scale
	if jp.Positive != nil {
		p.Offset = jp.Positive.Offset
		if len(jp.Positive.BucketCounts) > maxExpBuckets {
			return p, bad("exponential_histogram_data_point", "%d buckets, more than %d", len(jp.Positive.BucketCounts), maxExpBuckets)
		}
		for _, c := range jp.Positive.BucketCounts {
			v, err := c.uint()
			if err != nil {
				return p, err
			}
			p.ExpCounts = append(p.ExpCounts, v)
		}
	}
	return p, checkExp(&p)
}
