package bench

import (
	"bytes"
	"io"
	"testing"
	"time"

	vmprom "github.com/VictoriaMetrics/VictoriaMetrics/lib/protoparser/prometheus"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

const textType = "text/plain; version=0.0.4"

// anchors returns the anchors of a body: VictoriaMetrics first (every
// ratio of BenchmarkParse is against it), then Prometheus' PromParser
// (series only: the bytes a scrape cache looks up, no label set built),
// expfmt and the IndexByte floor (one pass finding the newlines).
//
// Every contender reads the bodies in turn, one per call, as successive
// scrapes of one target: the values change, the series stay.
func anchors(bodies [][]byte) []Contender {
	strs := make([]string, len(bodies))
	for i, b := range bodies {
		strs[i] = string(b)
	}
	var rows vmprom.Rows
	st := labels.NewSymbolTable()
	var kv, kp, ke, ki int
	return []Contender{
		{"vm", func() {
			rows.UnmarshalWithErrLogger(next(strs, &kv), func(string) {})
		}},
		{"promparse", func() {
			p := textparse.NewPromParser(next(bodies, &kp), st, false)
			for {
				e, err := p.Next()
				if err == io.EOF {
					return
				}
				if err != nil {
					panic(err)
				}
				if e == textparse.EntrySeries {
					p.Series()
				}
			}
		}},
		{"expfmt", func() {
			p := expfmt.NewTextParser(pmodel.UTF8Validation)
			if _, err := p.TextToMetricFamilies(bytes.NewReader(next(bodies, &ke))); err != nil {
				panic(err)
			}
		}},
		{"indexbyte", func() {
			for rest := next(bodies, &ki); ; {
				i := bytes.IndexByte(rest, '\n')
				if i < 0 {
					return
				}
				rest = rest[i+1:]
			}
		}},
	}
}

// retrytop returns retrytop's contenders on a body: the parse with the
// dialects' filter (what watch and replay run), and parse + store of
// every family and of the relevant ones.
//
// Each contender is its own target (Parse keeps a line cache per target,
// as Prometheus' scrape cache is per target), reading the bodies in turn.
func retrytop(tb testing.TB, bodies [][]byte) []Contender {
	filter := dialect.Auto().Filter
	p := expo.ExpfmtParser{Lines: expo.NewLineCaches(0)}
	parse := func(target string, k *int, f func(string) bool) []model.Family {
		fams, err := p.Parse(target, next(bodies, k), textType, f)
		if err != nil {
			tb.Fatal(err)
		}
		return fams
	}
	store := func(target string, f func(string) bool) func() {
		st := model.NewStore(model.DefaultStoreConfig)
		at := time.Unix(1_700_000_000, 0)
		var k int
		return func() {
			at = at.Add(time.Second)
			st.Append(&model.Snapshot{Target: "bench", Time: at, Families: parse(target, &k, f)})
		}
	}
	var k int
	return []Contender{
		{"rt-relevant", func() { parse("rt-relevant", &k, filter) }},
		{"rt-all+store", store("rt-all+store", nil)},
		{"rt-relevant+store", store("rt-relevant+store", filter)},
	}
}

// scrapeSteps is how many successive scrapes of a body the parse
// contenders read in turn.
const scrapeSteps = 4

// texts returns a body's first scrapeSteps scrapes.
func texts(body Body) [][]byte {
	out := make([][]byte, scrapeSteps)
	for i := range out {
		out[i] = body.Text(i)
	}
	return out
}

// next returns xs[*k] and moves k on, round robin.
func next[T any](xs []T, k *int) T {
	x := xs[*k%len(xs)]
	*k++
	return x
}

// BenchmarkParse reports, per body, each contender's ns/op and its ratio
// to VictoriaMetrics' Rows.Unmarshal measured in the same rounds
// (ratio-X), plus rt-all+store against PromParser (ratio-all+store/promparse).
// Run it with -benchtime 1x: the rounds are inside (ROUNDS, default 5).
func BenchmarkParse(b *testing.B) {
	for _, body := range Bodies() {
		b.Run("body="+body.Name, func(b *testing.B) {
			bodies := texts(body)
			text := bodies[0]
			cs := append(anchors(bodies), retrytop(b, bodies)...)
			for b.Loop() {
				ns, ratio := Rounds(rounds(), roundTime(), cs...)
				for i, c := range cs {
					b.ReportMetric(ns[i], "ns/"+c.Name)
					if i > 0 {
						b.ReportMetric(ratio[i], "ratio-"+c.Name)
					}
				}
				b.ReportMetric(float64(len(text))/ns[0]*1e3, "MB/s-vm")
				// The all-families parse + store against PromParser, in the
				// same rounds: the ratio of their ratios to the anchor.
				b.ReportMetric(ratio[5]/ratio[1], "ratio-all+store/promparse")
			}
		})
	}
}

// BenchmarkEach runs every contender of BenchmarkParse alone, for
// profiles and for instruction counts under callgrind (scripts/
// bench-ratios.sh -c), where one contender per run is what is counted.
func BenchmarkEach(b *testing.B) {
	for _, body := range Bodies() {
		b.Run("body="+body.Name, func(b *testing.B) {
			bodies := texts(body) // only for the bodies asked for
			text := bodies[0]
			cs := append(anchors(bodies), retrytop(b, bodies)...)
			for _, c := range cs {
				b.Run(c.Name, func(b *testing.B) {
					c.Run()
					b.SetBytes(int64(len(text)))
					for b.Loop() {
						c.Run()
					}
				})
			}
		})
	}
}
