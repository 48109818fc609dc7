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

	"github.com/retrytop/retrytop/collect"
	"github.com/retrytop/retrytop/collect/dialect"
	"github.com/retrytop/retrytop/model"
)

const textType = "text/plain; version=0.0.4"

// anchors returns the anchors of a body: VictoriaMetrics first (every
// ratio of BenchmarkParse is against it), then Prometheus' PromParser
// (series only: the bytes a scrape cache looks up, no label set built),
// expfmt and the IndexByte floor (one pass finding the newlines).
func anchors(body []byte) []Contender {
	s := string(body)
	var rows vmprom.Rows
	st := labels.NewSymbolTable()
	return []Contender{
		{"vm", func() {
			rows.UnmarshalWithErrLogger(s, func(string) {})
		}},
		{"promparse", func() {
			p := textparse.NewPromParser(body, st, false)
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
			if _, err := p.TextToMetricFamilies(bytes.NewReader(body)); err != nil {
				panic(err)
			}
		}},
		{"indexbyte", func() {
			for rest := body; ; {
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
func retrytop(tb testing.TB, body []byte) []Contender {
	filter := dialect.Auto().Filter
	var p collect.ExpfmtParser
	parse := func(f func(string) bool) []model.Family {
		fams, err := p.Parse("bench", body, textType, f)
		if err != nil {
			tb.Fatal(err)
		}
		return fams
	}
	store := func(f func(string) bool) func() {
		st := model.NewStore(model.DefaultStoreConfig)
		at := time.Unix(1_700_000_000, 0)
		return func() {
			at = at.Add(time.Second)
			st.Append(&model.Snapshot{Target: "bench", Time: at, Families: parse(f)})
		}
	}
	return []Contender{
		{"rt-relevant", func() { parse(filter) }},
		{"rt-all+store", store(nil)},
		{"rt-relevant+store", store(filter)},
	}
}

// BenchmarkParse reports, per body, each contender's ns/op and its ratio
// to VictoriaMetrics' Rows.Unmarshal measured in the same rounds
// (ratio-X), plus rt-all+store against PromParser (ratio-all+store/promparse).
// Run it with -benchtime 1x: the rounds are inside (ROUNDS, default 5).
func BenchmarkParse(b *testing.B) {
	for _, body := range Bodies() {
		b.Run("body="+body.Name, func(b *testing.B) {
			text := body.Text(0)
			cs := append(anchors(text), retrytop(b, text)...)
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
			text := body.Text(0) // only for the bodies asked for
			cs := append(anchors(text), retrytop(b, text)...)
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
