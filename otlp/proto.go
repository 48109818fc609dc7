package otlp

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// Export is one decoded ExportMetricsServiceRequest: what the receiver
// keeps of it.
type Export struct {
	Resources []Resource
}

// Resource is a ResourceMetrics: the resource's attributes and its
// metrics, every scope's together.
type Resource struct {
	Attrs   []Attr
	Metrics []Metric
}

// Attr is one attribute, its value as text.
type Attr struct{ Key, Value string }

// Kind is a metric's data type.
type Kind int8

// The kinds the receiver reads; a summary is skipped.
const (
	KindGauge Kind = iota + 1
	KindSum
	KindHistogram
	KindExpHistogram
)

// Temporality is OTLP's AggregationTemporality.
type Temporality int8

// Temporalities.
const (
	TemporalityUnspecified Temporality = 0
	TemporalityDelta       Temporality = 1
	TemporalityCumulative  Temporality = 2
)

// Metric is one instrument's points.
type Metric struct {
	Name, Unit  string
	Kind        Kind
	Temporality Temporality
	Monotonic   bool
	Points      []Point
}

// Point is a data point of any kind: Value for gauges and sums, the rest
// for histograms. An exponential histogram's positive buckets are Scale,
// Offset and ExpCounts until the state turns them into explicit ones
// (toExplicit).
type Point struct {
	Attrs           []Attr
	StartNs, TimeNs uint64
	Value           float64
	Count           uint64
	Sum             float64
	HasSum          bool
	Bounds          []float64 // upper bounds, ascending, without +Inf
	Counts          []uint64  // len(Bounds)+1: the last is (last bound, +Inf)
	Scale, Offset   int32
	ExpCounts       []uint64
}

// decodeError is a malformed message: where, and what.
type decodeError struct {
	at  string
	msg string
}

func (e *decodeError) Error() string { return e.at + ": " + e.msg }

func bad(at, format string, args ...any) error {
	return &decodeError{at: at, msg: fmt.Sprintf(format, args...)}
}

// field reads one field of b: its number, wire type, the bytes of a
// length-delimited value or the number of any other, and the rest.
type field struct {
	num  protowire.Number
	typ  protowire.Type
	raw  []byte
	v    uint64
	rest []byte
}

func next(b []byte, at string) (field, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return field{}, bad(at, "bad tag: %v", protowire.ParseError(n))
	}
	f := field{num: num, typ: typ}
	b = b[n:]
	switch typ {
	case protowire.VarintType:
		f.v, n = protowire.ConsumeVarint(b)
	case protowire.Fixed64Type:
		f.v, n = protowire.ConsumeFixed64(b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		f.v = uint64(v)
	case protowire.BytesType:
		f.raw, n = protowire.ConsumeBytes(b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	if n < 0 {
		return field{}, bad(at, "field %d: %v", num, protowire.ParseError(n))
	}
	f.rest = b[n:]
	return f, nil
}

// each calls fn for every field of b.
func each(b []byte, at string, fn func(f field) error) error {
	for len(b) > 0 {
		f, err := next(b, at)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
		b = f.rest
	}
	return nil
}

// DecodeProto decodes an ExportMetricsServiceRequest in the protobuf
// encoding. limit bounds the points kept (0: none); past it the export is
// refused, not cut.
func DecodeProto(b []byte, limit int) (*Export, error) {
	d := &decoder{limit: limit}
	ex := &Export{}
	err := each(b, "request", func(f field) error {
		if f.num != 1 || f.typ != protowire.BytesType {
			return nil
		}
		r, err := d.resource(f.raw)
		if err != nil {
			return err
		}
		ex.Resources = append(ex.Resources, r)
		return nil
	})
	return ex, err
}

// decoder counts the points decoded against limit.
type decoder struct {
	limit, points int
}

// errTooMany is an export with more points than the receiver takes.
var errTooMany = errors.New("too many points")

func (d *decoder) count() error {
	d.points++
	if d.limit > 0 && d.points > d.limit {
		return fmt.Errorf("%w: more than %d in one export", errTooMany, d.limit)
	}
	return nil
}

func (d *decoder) resource(b []byte) (Resource, error) {
	var r Resource
	err := each(b, "resource_metrics", func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType: // resource
			return each(f.raw, "resource", func(g field) error {
				if g.num == 1 && g.typ == protowire.BytesType {
					a, err := attr(g.raw)
					if err != nil {
						return err
					}
					r.Attrs = append(r.Attrs, a)
				}
				return nil
			})
		case f.num == 2 && f.typ == protowire.BytesType: // scope_metrics
			return each(f.raw, "scope_metrics", func(g field) error {
				if g.num != 2 || g.typ != protowire.BytesType {
					return nil
				}
				m, err := d.metric(g.raw)
				if err != nil {
					return err
				}
				if m.Kind != 0 {
					r.Metrics = append(r.Metrics, m)
				}
				return nil
			})
		}
		return nil
	})
	return r, err
}

func (d *decoder) metric(b []byte) (Metric, error) {
	var m Metric
	err := each(b, "metric", func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			m.Name = string(f.raw)
		case f.num == 3 && f.typ == protowire.BytesType:
			m.Unit = string(f.raw)
		case f.num == 5 && f.typ == protowire.BytesType:
			m.Kind = KindGauge
			return d.data(&m, f.raw)
		case f.num == 7 && f.typ == protowire.BytesType:
			m.Kind = KindSum
			return d.data(&m, f.raw)
		case f.num == 9 && f.typ == protowire.BytesType:
			m.Kind = KindHistogram
			return d.data(&m, f.raw)
		case f.num == 10 && f.typ == protowire.BytesType:
			m.Kind = KindExpHistogram
			return d.data(&m, f.raw)
		}
		return nil
	})
	if err == nil {
		err = checkName(m.Name)
	}
	if err != nil {
		return m, fmt.Errorf("metric %q: %w", m.Name, err)
	}
	return m, nil
}

// checkName refuses a metric whose name has nothing a Prometheus name
// can keep.
func checkName(name string) error {
	if sanitize(name) == "" {
		return bad("metric", "no name: want one with a letter or digit")
	}
	return nil
}

// data reads a Gauge, Sum, Histogram or ExponentialHistogram message.
func (d *decoder) data(m *Metric, b []byte) error {
	return each(b, "data", func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			if err := d.count(); err != nil {
				return err
			}
			var p Point
			var err error
			switch m.Kind {
			case KindGauge, KindSum:
				p, err = numberPoint(f.raw)
			case KindHistogram:
				p, err = histPoint(f.raw)
			case KindExpHistogram:
				p, err = expPoint(f.raw)
			}
			if err != nil {
				return err
			}
			m.Points = append(m.Points, p)
		case f.num == 2 && f.typ == protowire.VarintType && m.Kind != KindGauge:
			m.Temporality = Temporality(f.v)
		case f.num == 3 && f.typ == protowire.VarintType && m.Kind == KindSum:
			m.Monotonic = f.v != 0
		}
		return nil
	})
}

func numberPoint(b []byte) (Point, error) {
	var p Point
	err := each(b, "number_data_point", func(f field) error {
		switch {
		case f.num == 7 && f.typ == protowire.BytesType:
			a, err := attr(f.raw)
			p.Attrs = append(p.Attrs, a)
			return err
		case f.num == 2 && f.typ == protowire.Fixed64Type:
			p.StartNs = f.v
		case f.num == 3 && f.typ == protowire.Fixed64Type:
			p.TimeNs = f.v
		case f.num == 4 && f.typ == protowire.Fixed64Type:
			p.Value = math.Float64frombits(f.v)
		case f.num == 6 && f.typ == protowire.Fixed64Type:
			p.Value = float64(int64(f.v))
		}
		return nil
	})
	return p, err
}

// histField reads the fields both histogram points number alike (start
// and end times, count, sum) and their attributes, numbered attrNum; done
// says it was one of them.
func (p *Point) histField(f field, attrNum protowire.Number) (done bool, err error) {
	switch {
	case f.num == attrNum && f.typ == protowire.BytesType:
		a, err := attr(f.raw)
		p.Attrs = append(p.Attrs, a)
		return true, err
	case f.num == 2 && f.typ == protowire.Fixed64Type:
		p.StartNs = f.v
	case f.num == 3 && f.typ == protowire.Fixed64Type:
		p.TimeNs = f.v
	case f.num == 4 && f.typ == protowire.Fixed64Type:
		p.Count = f.v
	case f.num == 5 && f.typ == protowire.Fixed64Type:
		p.Sum, p.HasSum = math.Float64frombits(f.v), true
	default:
		return false, nil
	}
	return true, nil
}

func histPoint(b []byte) (Point, error) {
	var p Point
	err := each(b, "histogram_data_point", func(f field) error {
		if done, err := p.histField(f, 9); done {
			return err
		}
		switch {
		case f.num == 6 && f.typ == protowire.BytesType: // packed fixed64
			for r := f.raw; len(r) > 0; {
				v, n := protowire.ConsumeFixed64(r)
				if n < 0 {
					return bad("histogram_data_point", "bucket_counts: %v", protowire.ParseError(n))
				}
				p.Counts, r = append(p.Counts, v), r[n:]
			}
		case f.num == 6 && f.typ == protowire.Fixed64Type: // unpacked
			p.Counts = append(p.Counts, f.v)
		case f.num == 7 && f.typ == protowire.BytesType: // packed double
			for r := f.raw; len(r) > 0; {
				v, n := protowire.ConsumeFixed64(r)
				if n < 0 {
					return bad("histogram_data_point", "explicit_bounds: %v", protowire.ParseError(n))
				}
				p.Bounds, r = append(p.Bounds, math.Float64frombits(v)), r[n:]
			}
		case f.num == 7 && f.typ == protowire.Fixed64Type:
			p.Bounds = append(p.Bounds, math.Float64frombits(f.v))
		}
		return nil
	})
	if err != nil {
		return p, err
	}
	return p, checkBuckets(&p)
}

// checkBuckets holds a histogram point to OTLP's rules: bucket counts one
// more than the bounds (or none), bounds finite and ascending, counts
// adding up to the count.
func checkBuckets(p *Point) error {
	if len(p.Counts) == 0 && len(p.Bounds) == 0 {
		p.Counts = []uint64{p.Count} // no buckets: one, (-Inf, +Inf]
		return nil
	}
	if len(p.Counts) != len(p.Bounds)+1 {
		return bad("histogram_data_point", "%d bucket counts for %d bounds (want one more)", len(p.Counts), len(p.Bounds))
	}
	for i, b := range p.Bounds {
		if math.IsNaN(b) || math.IsInf(b, 0) || i > 0 && !(b > p.Bounds[i-1]) {
			return bad("histogram_data_point", "explicit_bounds[%d] = %v: want finite and ascending", i, b)
		}
	}
	var sum uint64
	for _, c := range p.Counts {
		if sum+c < sum {
			return bad("histogram_data_point", "bucket counts overflow")
		}
		sum += c
	}
	if sum != p.Count {
		return bad("histogram_data_point", "bucket counts add up to %d, count is %d", sum, p.Count)
	}
	return nil
}

func expPoint(b []byte) (Point, error) {
	var p Point
	err := each(b, "exponential_histogram_data_point", func(f field) error {
		if done, err := p.histField(f, 1); done {
			return err
		}
		switch {
		case f.num == 6 && f.typ == protowire.VarintType:
			p.Scale = int32(protowire.DecodeZigZag(f.v))
		case f.num == 8 && f.typ == protowire.BytesType: // positive
			return each(f.raw, "buckets", func(g field) error {
				switch {
				case g.num == 1 && g.typ == protowire.VarintType:
					p.Offset = int32(protowire.DecodeZigZag(g.v))
				case g.num == 2 && g.typ == protowire.BytesType:
					for r := g.raw; len(r) > 0; {
						v, n := protowire.ConsumeVarint(r)
						if n < 0 {
							return bad("buckets", "bucket_counts: %v", protowire.ParseError(n))
						}
						p.ExpCounts, r = append(p.ExpCounts, v), r[n:]
					}
				case g.num == 2 && g.typ == protowire.VarintType:
					p.ExpCounts = append(p.ExpCounts, g.v)
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return p, err
	}
	return p, checkExp(&p)
}

// maxExpBuckets bounds an exponential histogram's positive buckets (the
// SDKs' default is 160).
const maxExpBuckets = 1 << 14

// checkExp holds an exponential histogram point to OTLP's rules: a scale
// in [-10, 20], its buckets' counts within its count.
func checkExp(p *Point) error {
	const at = "exponential_histogram_data_point"
	if p.Scale < -10 || p.Scale > 20 {
		return bad(at, "scale %d out of [-10, 20]", p.Scale)
	}
	if len(p.ExpCounts) > maxExpBuckets {
		return bad(at, "%d buckets, more than %d", len(p.ExpCounts), maxExpBuckets)
	}
	if int64(p.Offset)+int64(len(p.ExpCounts)) > math.MaxInt32 {
		return bad(at, "bucket index past 2^31")
	}
	var sum uint64
	for _, c := range p.ExpCounts {
		if sum+c < sum || sum+c > p.Count {
			return bad(at, "buckets hold more than the count %d", p.Count)
		}
		sum += c
	}
	return nil
}

// attr reads a KeyValue; a value that is not a scalar is kept as its
// kind's name.
func attr(b []byte) (Attr, error) {
	var a Attr
	err := each(b, "key_value", func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			a.Key = string(f.raw)
		case f.num == 2 && f.typ == protowire.BytesType:
			return each(f.raw, "any_value", func(g field) error {
				switch {
				case g.num == 1 && g.typ == protowire.BytesType:
					a.Value = string(g.raw)
				case g.num == 2 && g.typ == protowire.VarintType:
					a.Value = strconv.FormatBool(g.v != 0)
				case g.num == 3 && g.typ == protowire.VarintType:
					a.Value = strconv.FormatInt(int64(g.v), 10)
				case g.num == 4 && g.typ == protowire.Fixed64Type:
					a.Value = strconv.FormatFloat(math.Float64frombits(g.v), 'g', -1, 64)
				case g.num == 5 || g.num == 6 || g.num == 7:
					a.Value = "(complex)"
				}
				return nil
			})
		}
		return nil
	})
	return a, err
}
