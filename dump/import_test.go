package dump

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// flat renders snapshots one series per line, for comparisons.
func flat(snaps []model.Snapshot) string {
	var b strings.Builder
	for _, s := range snaps {
		fmt.Fprintf(&b, "%s @%d\n", s.Target, s.Time.UnixMilli())
		s.Flatten(func(fs model.FlatSeries) {
			fmt.Fprintf(&b, "  %s%s %s %v\n", fs.Name, fs.Labels, fs.Type, fs.Value)
		})
	}
	return b.String()
}

// TestImporters: histograms come out whole (typed, as a scrape of the same
// text parses them), from the file's # TYPE or, in JSON, from the names.
func TestImporters(t *testing.T) {
	tests := []struct {
		file, format, want string
	}{
		{"metrics.om", FormatOpenMetrics, `app @1741057965000
  retry_active_calls{dependency="db"} gauge 3
  retry_attempts_total{dependency="db",outcome="success"} counter 10
  retry_request_duration_seconds_bucket{dependency="db",le="0.1"} histogram 5
  retry_request_duration_seconds_bucket{dependency="db",le="+Inf"} histogram 10
  retry_request_duration_seconds_count{dependency="db"} histogram 10
  retry_request_duration_seconds_sum{dependency="db"} histogram 1.5
client @1741057965000
  retry_attempts_total{dependency="db",outcome="success"} counter 7
app @1741057966500
  retry_active_calls{dependency="db"} gauge 4
  retry_attempts_total{dependency="db",outcome="success"} counter 25
`},
		{"query_range.json", FormatPromJSON, `app @1741057965000
  retry_attempts_total{dependency="db",job="svc",outcome="success"} counter 10
  retry_request_duration_seconds_bucket{dependency="db",job="svc",le="0.1"} histogram 5
  retry_request_duration_seconds_bucket{dependency="db",job="svc",le="+Inf"} histogram 5
  retry_request_duration_seconds_count{dependency="db",job="svc"} histogram 5
  retry_request_duration_seconds_sum{dependency="db",job="svc"} histogram NaN
app @1741057966500
  retry_attempts_total{dependency="db",job="svc",outcome="success"} counter 25
  retry_request_duration_seconds_bucket{dependency="db",job="svc",le="0.1"} histogram NaN
  retry_request_duration_seconds_bucket{dependency="db",job="svc",le="+Inf"} histogram NaN
  retry_request_duration_seconds_count{dependency="db",job="svc"} histogram NaN
  retry_request_duration_seconds_sum{dependency="db",job="svc"} histogram NaN
`},
		{"export.jsonl", FormatVMJSON, `app @1741057965000
  retry_attempts_total{dependency="db",outcome="success"} counter 10
client @1741057965000
  retry_active_calls{dependency="db"} untyped 3
app @1741057966500
  retry_attempts_total{dependency="db",outcome="success"} counter 25
client @1741057966500
  retry_active_calls{dependency="db"} untyped NaN
`},
		{"snapshots.prom", FormatConcat, `app @1741057965000
  retry_attempts_total{dependency="db",outcome="success"} counter 10
client @1741057965000
  retry_active_calls{dependency="db"} untyped 3
app @1741057966500
  retry_attempts_total{dependency="db",outcome="success"} counter 25
`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "import", tt.file)
			head, _ := os.ReadFile(path)
			if got, err := DetectFormat(head); err != nil || got != tt.format {
				t.Fatalf("detected %q, %v; want %q", got, err, tt.format)
			}
			snaps, err := Import(path, "", ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := flat(snaps); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			rec, err := OpenRecording(path, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Format() != tt.format || rec.Len() != len(snaps) {
				t.Errorf("recording: %s, %d entries", rec.Format(), rec.Len())
			}
		})
	}
}

func TestImportDefaultTarget(t *testing.T) {
	snaps, err := ImportBytes([]byte("x_total 1 100\nx_total 2 101\n# EOF\n"), "f.om", FormatOpenMetrics, ImportOptions{Target: "svc"})
	if err != nil || len(snaps) != 2 || snaps[0].Target != "svc" || !snaps[1].Time.Equal(time.Unix(101, 0)) {
		t.Fatalf("%v %v", flat(snaps), err)
	}
}

// TestImportErrors: every error names the file and the line (or offset).
func TestImportErrors(t *testing.T) {
	tests := []struct {
		format, in, want string
	}{
		{FormatOpenMetrics, "# TYPE x counter\nx_total 1\n", "f:2: sample of \"x_total\" has no timestamp"},
		{FormatOpenMetrics, "x{a=\"b} 1 2\n", "f:1: label \"a\": unterminated string"},
		{FormatOpenMetrics, "x 1 2\n# EOF\nx 1 3\n", "f:3: content after # EOF"},
		{FormatOpenMetrics, "x one 2\n", "f:1: bad value \"one\""},
		{FormatOpenMetrics, "x 1 two\n", "f:1: bad timestamp \"two\""},
		{FormatOpenMetrics, "# TYPE x frobnicator\n", "f:1: unknown metric type"},
		{FormatPromJSON, "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error\"}", "f: the query failed: bad_data: parse error"},
		{FormatPromJSON, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}", "resultType \"vector\": want \"matrix\""},
		{FormatPromJSON, "{\n\"status\": \"success\",\n\"data\": [1,\n}", "f:4: invalid JSON"},
		{FormatPromJSON, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]]}]}}`, "series 0 ({}) has no __name__"},
		{FormatPromJSON, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"x"},"values":[[1,1]]}]}}`, "value must be a string"},
		{FormatVMJSON, "{\"metric\":{\"__name__\":\"x\"},\"values\":[1],\"timestamps\":[1]}\n{\"metric\":{\"__name__\":\"x\"},\"values\":[1,2],\"timestamps\":[1]}\n", "f:2: 2 values for 1 timestamps"},
		{FormatVMJSON, "{\"metric\":{\"__name__\":\"x\"},\"values\":[1],\"timestamps\":[1]}\n{oops\n", "f:2: invalid JSON"},
		{FormatVMJSON, "{\"metric\":{\"__name__\":\"x\"},\"values\":[true],\"timestamps\":[1]}\n", "f:1: value 0: bad value true"},
		{FormatOpenMetrics, "x_bucket{le=\"fast\"} 1 2\n", "f:1: x_bucket: le \"fast\" is not a number"},
		{FormatPromJSON, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"x","quantile":"p99"},"values":[[1,"1"]]}]}}`, "f: series 0, value 0: x: quantile \"p99\" is not a number"},
		{FormatVMJSON, "{\"metric\":{\"__name__\":\"x_bucket\",\"le\":\"\"},\"values\":[1],\"timestamps\":[1]}\n", "f:1: value 0: x_bucket: le \"\" is not a number"},
		{FormatConcat, "x 1\n", "f:1: expected a timestamp line"},
		{FormatConcat, "1741057965\nx 1\nx{ 2\n", "f:3: "},
		{FormatConcat, "\n\n", "f: no snapshot found"},
	}
	for _, tt := range tests {
		_, err := ImportBytes([]byte(tt.in), "f", tt.format, ImportOptions{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %q: error %v, want %q", tt.format, tt.in, err, tt.want)
		}
	}
}

func TestDetectFormat(t *testing.T) {
	tests := map[string]string{
		"RTOPDUMP\x01":                           FormatDump,
		"{\n  \"status\": \"success\",\n":        FormatPromJSON,
		`{"metric":{"__name__":"x"},"values":[]`: FormatVMJSON,
		"\n1741057965\nx 1\n":                    FormatConcat,
		"2025-03-04T03:12:45Z app\n":             FormatConcat,
		"# TYPE x gauge\nx 1 1741057965\n":       FormatOpenMetrics,
		"# TYPE x gauge\n# EOF\n":                FormatOpenMetrics,
	}
	for in, want := range tests {
		if got, err := DetectFormat([]byte(in)); got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x 1\n", "{\"foo\":1}\n", "hello"} {
		if got, err := DetectFormat([]byte(in)); err == nil {
			t.Errorf("%q detected as %q", in, got)
		}
	}
}

func TestStampLines(t *testing.T) {
	for in, want := range map[string]int64{
		"1741057965":                     1741057965000,
		"1741057965.5":                   1741057965500,
		"1741057965.123456789 app":       1741057965123,
		"# 1741057965 app":               1741057965000,
		"2025-03-04T03:12:45+01:00":      1741054365000,
		"2025-03-04T03:12:45.25Z client": 1741057965250,
		"1741057965123":                  1741057965123,
		"1741057965123.5 app":            1741057965123,
		"# SCRAPE 1741057965123 app":     1741057965123,
		"# SCRAPE 1741057965.5 app":      1741057965500,
		"SCRAPE 2025-03-04T03:12:45Z":    1741057965000,
	} {
		ts, _, ok := parseStampLine(in)
		if !ok || ts.UnixMilli() != want {
			t.Errorf("%q: %v %v, want %d", in, ts.UnixMilli(), ok, want)
		}
	}
	for _, in := range []string{"x 1", "1e9", "NaN", "# HELP x y", "12 a b", "-5", "1741057965 \"app\"", "123456789012345", "# SCRAPE", "# SCRAPE x app", "1741057965123.1234567"} {
		if _, _, ok := parseStampLine(in); ok {
			t.Errorf("%q read as a timestamp line", in)
		}
	}
}

// TestConcatStampForms: Unix seconds, Unix milliseconds (with or without
// "# SCRAPE") and RFC 3339 headers give the same snapshots.
func TestConcatStampForms(t *testing.T) {
	body := "# TYPE x_total counter\nx_total 1\n"
	var want string
	for i, stamps := range [][2]string{
		{"1741057965 app", "1741057966.5 app"},
		{"1741057965000 app", "1741057966500 app"},
		{"# SCRAPE 1741057965000 app", "# SCRAPE 1741057966500 app"},
		{"2025-03-04T03:12:45Z app", "2025-03-04T03:12:46.5Z app"},
	} {
		in := stamps[0] + "\n" + body + stamps[1] + "\n" + body
		if f, err := DetectFormat([]byte(in)); f != FormatConcat {
			t.Errorf("%q detected as %q %v", stamps[0], f, err)
		}
		snaps, err := ImportBytes([]byte(in), "f", FormatConcat, ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := flat(snaps)
		if i == 0 {
			want = got
			if !strings.Contains(want, "app @1741057966500") {
				t.Fatalf("seconds: %s", want)
			}
		} else if got != want {
			t.Errorf("%q:\n%s\nwant\n%s", stamps[0], got, want)
		}
	}
}

// TestImportPromtoolStyle: a file as promtool and real exporters write it,
// one block per family, samples by series then time, each family stamped a
// millisecond or two apart, gives one snapshot per scrape, at its earliest
// family's time, with histograms whole and _created on their samples.
func TestImportPromtoolStyle(t *testing.T) {
	in := `# TYPE rpc_calls counter
rpc_calls_total{instance="app",code="OK"} 10 100.001
rpc_calls_total{instance="app",code="OK"} 20 101.001
rpc_calls_created{instance="app",code="OK"} 50 100.001
rpc_calls_created{instance="app",code="OK"} 50 101.001
# TYPE rpc_duration_seconds histogram
rpc_duration_seconds_bucket{instance="app",le="0.1"} 4 100.002
rpc_duration_seconds_bucket{instance="app",le="0.1"} 8 101.002
rpc_duration_seconds_bucket{instance="app",le="+Inf"} 5 100.002
rpc_duration_seconds_bucket{instance="app",le="+Inf"} 9 101.002
rpc_duration_seconds_count{instance="app"} 5 100.002
rpc_duration_seconds_count{instance="app"} 9 101.002
rpc_duration_seconds_sum{instance="app"} 0.5 100.002
rpc_duration_seconds_sum{instance="app"} 0.9 101.002
# TYPE up gauge
up{instance="app"} 1 100
up{instance="app"} 1 101
# EOF
`
	snaps, err := ImportBytes([]byte(in), "f", FormatOpenMetrics, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `app @100000
  rpc_calls_total{code="OK"} counter 10
  rpc_duration_seconds_bucket{le="0.1"} histogram 4
  rpc_duration_seconds_bucket{le="+Inf"} histogram 5
  rpc_duration_seconds_count{} histogram 5
  rpc_duration_seconds_sum{} histogram 0.5
  up{} gauge 1
app @101000
  rpc_calls_total{code="OK"} counter 20
  rpc_duration_seconds_bucket{le="0.1"} histogram 8
  rpc_duration_seconds_bucket{le="+Inf"} histogram 9
  rpc_duration_seconds_count{} histogram 9
  rpc_duration_seconds_sum{} histogram 0.9
  up{} gauge 1
`
	if got := flat(snaps); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for _, sn := range snaps {
		if c := sn.Families[0].Samples[0].CreatedMs; c != 50000 {
			t.Errorf("@%d: created %d, want 50000", sn.Time.UnixMilli(), c)
		}
	}
}

// TestImportShapesByName: without # TYPE (JSON), families are told by
// Prometheus' naming, as the parser would type them with their TYPE lines.
func TestImportShapesByName(t *testing.T) {
	line := func(name, labels string, v float64) string {
		return fmt.Sprintf(`{"metric":{"__name__":%q%s},"values":[%g],"timestamps":[1000]}`+"\n", name, labels, v)
	}
	in := line("rpc_latency", `,"quantile":"0.50"`, 0.2) + line("rpc_latency_count", "", 4) + line("rpc_latency_sum", "", 1) +
		line("acquire_seconds_count", "", 3) + line("acquire_seconds_sum", "", 0.3) +
		line("lonely_count", "", 5) +
		line("req_seconds_bucket", `,"le":"1"`, 2) + line("req_seconds_bucket", `,"le":"+Inf"`, 3) + line("req_seconds_count", "", 3) +
		line("calls_total", "", 9) + line("calls_created", "", 500.25) +
		line("temperature", "", 21) +
		line("queue", "", 2) + line("queue_count", "", 3) + line("queue_sum", "", 4) // a gauge beside a count and a sum: not a summary
	snaps, err := ImportBytes([]byte(in), "f", FormatVMJSON, ImportOptions{Target: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 {
		t.Fatalf("%d snapshots", len(snaps))
	}
	var got []string
	for _, f := range snaps[0].Families {
		s := f.Samples[0]
		got = append(got, fmt.Sprintf("%s %s n=%d created=%d", f.Name, f.Type, len(f.Samples), s.CreatedMs))
	}
	want := []string{
		"acquire_seconds summary n=1 created=0",
		"calls_total counter n=1 created=500250",
		"lonely_count untyped n=1 created=0",
		"queue untyped n=1 created=0",
		"queue_count untyped n=1 created=0",
		"queue_sum untyped n=1 created=0",
		"req_seconds histogram n=1 created=0",
		"rpc_latency summary n=1 created=0",
		"temperature untyped n=1 created=0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The sum of a histogram without one is absent, never 0.
	for _, f := range snaps[0].Families {
		if f.Name == "req_seconds" && !math.IsNaN(f.Samples[0].Sum) {
			t.Errorf("req_seconds sum %v, want NaN (absent)", f.Samples[0].Sum)
		}
	}
}
