package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

func reportFixture() analysis.Report {
	row := analysis.DependencyReport{
		Signals: model.Signals{
			Target: "app", Dependency: "db\x1b[2J|x",
			OriginalsPerS: model.Some(50), AttemptsPerS: model.Some(71.2), Amplification: model.Some(1.424),
			ProviderErrorsPerS: model.Some(0), TimeoutsPerS: model.Some(20.1),
			ActiveCalls: model.Some(21),
		},
		LatencyP99: map[string]model.Value{model.ClassSuccess: model.Some(0.95)},
	}
	return analysis.Report{
		WindowSeconds: 30, StartUnix: 1000, EndUnix: 1060,
		Targets:      []model.TargetStatus{{Name: "app", URL: "http://127.0.0.1:9/metrics", Up: true, Scrapes: 61, Series: 40}},
		Dependencies: []analysis.DependencyReport{row},
	}
}

func TestWriteAnalysisFormats(t *testing.T) {
	tests := []struct {
		format string
		want   []string
		never  []string
	}{
		{"text", []string{"window 30s", "app up http://127.0.0.1:9/metrics", "50.0", "71.2", "1.42x", "20.1", "21/-", "950ms"}, []string{"\x1b"}},
		{"markdown", []string{"## retrytop analyze", "| TARGET | DEPENDENCY |", `db\\x1b\[2J\|x`, "| 1.42x |"}, []string{"\x1b"}},
		{"json", []string{`"amplification": 1.424`, `"budget_denied_per_s": null`, `"latency_p99_s"`}, nil},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := WriteAnalysis(&b, reportFixture(), tt.format, 0); err != nil {
			t.Fatalf("%s: %v", tt.format, err)
		}
		out := b.String()
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s output lacks %q:\n%s", tt.format, w, out)
			}
		}
		for _, n := range tt.never {
			if strings.Contains(out, n) {
				t.Errorf("%s output contains %q:\n%q", tt.format, n, out)
			}
		}
	}
	if err := WriteAnalysis(&bytes.Buffer{}, reportFixture(), "xml", 0); err == nil || !strings.Contains(err.Error(), "xml") {
		t.Errorf("unknown format error = %v", err)
	}
}

func TestWriteAnalysisAbsentIsDashNotZero(t *testing.T) {
	var b bytes.Buffer
	if err := WriteAnalysis(&b, reportFixture(), "text", 0); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	var row string
	for _, l := range lines {
		if strings.Contains(l, "app") && strings.Contains(l, "1.42x") {
			row = l
		}
	}
	fields := strings.Fields(row)
	// BUDGET-DENIED/s and ADMISSION-REJ/s are absent in the fixture, provider errors a real 0.
	idx := func(head string) int {
		for i, c := range reportColumns {
			if c.head == head {
				return i
			}
		}
		t.Fatalf("no column %s", head)
		return -1
	}
	if got := fields[idx("BUDGET-DENIED/s")]; got != "-" {
		t.Errorf("budget denied = %q, want -", got)
	}
	if got := fields[idx("PROVIDER-ERR/s")]; got != "0" {
		t.Errorf("provider errors = %q, want 0", got)
	}
}

// The services table carries every ServiceSignals field, in text and
// markdown: present values in their own column, absent ones as "-",
// a queue limit of 0 as "unbounded".
func TestWriteAnalysisServices(t *testing.T) {
	v := model.Some
	full := model.ServiceSignals{
		Target: "inventory", Source: "sim",
		ReceivedPerS: v(100), InFlight: v(58), Slots: v(64),
		QueueDepth: v(37), QueueLimit: v(0), QueueOldestAge: v(1.84), QueueWaitP99: v(1.52), QueueWaitMean: v(0.9),
		ServiceTimeP50: v(0.118), ServiceTimeP99: v(0.47), SuccessServiceTimeP50: v(0.121), SuccessServiceTimeP99: v(0.41),
		ErrorServiceTimeP50: v(0.0032), ErrorServiceTimeP99: v(0.9),
		Responses2xxPerS: v(70), Responses429PerS: v(5), Responses503PerS: v(20), Responses503RetryAfterPerS: v(15),
		ResponsesOther5xxPerS: v(1), Responses5xxPerS: v(21), WorkAfterCancelPerS: v(12), CancelledPerS: v(3),
	}
	rep := reportFixture()
	rep.Services = []model.ServiceSignals{full, {Target: "bare|svc\x1b[2J"}}
	want := map[string]string{
		"SERVICE": "inventory", "SOURCE": "sim", "RECV/s": "100", "IN-FLIGHT": "58", "SLOTS": "64",
		"QUEUE": "37", "QUEUE-LIMIT": "unbounded", "QUEUE-OLDEST": "1.84s", "QUEUE-WAIT-p99": "1.52s", "QUEUE-WAIT-MEAN": "900ms",
		"SVC-p50": "118ms", "SVC-p99": "470ms", "OK-SVC-p50": "121ms", "OK-SVC-p99": "410ms",
		"ERR-SVC-p50": "3.2ms", "ERR-SVC-p99": "900ms",
		"2xx/s": "70.0", "429/s": "5.00", "503/s": "20.0", "503-RETRY-AFTER/s": "15.0", "5xx/s": "1.00",
		"AFTER-CANCEL/s": "12.0", "CANCELLED/s": "3.00",
	}
	if len(want) != len(serviceColumns) {
		t.Fatalf("test covers %d columns, the table has %d", len(want), len(serviceColumns))
	}

	var b bytes.Buffer
	if err := WriteAnalysis(&b, rep, "text", 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out[strings.Index(out, "\nServices\n"):], "\n")
	head, row, bare := strings.Fields(lines[3]), strings.Fields(lines[4]), strings.Fields(lines[5])
	if len(head) != len(serviceColumns) || len(row) != len(head) || len(bare) != len(head)-1 {
		t.Fatalf("services table shape: %d heads, rows of %d and %d fields:\n%s", len(head), len(row), len(bare), out)
	}
	for i, h := range head {
		if row[i] != want[h] {
			t.Errorf("text %s = %q, want %q", h, row[i], want[h])
		}
	}
	// The bare service has no source: every field after its name is "-".
	if bare[0] != `bare|svc\x1b[2J` { // the escape shown, never obeyed
		t.Errorf("bare service name %q", bare[0])
	}
	for i, f := range bare[1:] {
		if f != "-" {
			t.Errorf("text absent %s = %q, want -", head[i+2], f)
		}
	}

	b.Reset()
	if err := WriteAnalysis(&b, rep, "markdown", 0); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	var heads, cells []string
	for _, l := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(l, "| SERVICE |"):
			heads = strings.Split(strings.Trim(l, "| "), " | ")
		case strings.HasPrefix(l, "| inventory |"):
			cells = strings.Split(strings.Trim(l, "| "), " | ")
		}
	}
	if len(heads) != len(serviceColumns) || len(cells) != len(heads) {
		t.Fatalf("markdown services table: %q / %q\n%s", heads, cells, md)
	}
	for i, h := range heads {
		if cells[i] != want[h] {
			t.Errorf("markdown %s = %q, want %q", h, cells[i], want[h])
		}
	}
	if !strings.Contains(md, `| bare\|svc\\x1b\[2J |`) || strings.Contains(md, "\x1b") {
		t.Errorf("markdown does not escape the service name:\n%s", md)
	}
}

// analyze's text and markdown list the reconstructed budgets after the
// table, escaped; an exported balance or none adds nothing.
func TestReportBudgets(t *testing.T) {
	b := &analysis.Budget{Model: "grpc", Reconstructed: true, Unit: "tokens", Balance: model.Some(4.2), Capacity: model.Some(10), StopAt: model.Some(5), DrainPerS: model.Some(1.8), TimeToExhaustionS: model.Some(0)}
	dep := func(target string, b *analysis.Budget) analysis.DependencyReport {
		d := analysis.DependencyReport{Signals: model.Signals{Target: target, Dependency: "db|x"}}
		d.Fates.Budget = b
		return d
	}
	rep := analysis.Report{Dependencies: []analysis.DependencyReport{
		dep("grpc\x1b[2Japp", b), dep("native", nil), dep("bounded", &analysis.Budget{Model: "exported", Balance: model.Some(120)}),
	}}
	var text, md strings.Builder
	if err := WriteAnalysis(&text, rep, "text", 0); err != nil {
		t.Fatal(err)
	}
	if err := WriteAnalysis(&md, rep, "markdown", 0); err != nil {
		t.Fatal(err)
	}
	line := " -> db|x: 4.20 of 10 tokens, retries stop at 5, drain 1.80/s, exhausted now (grpc model, reconstructed)"
	for name, c := range map[string]struct{ out, want string }{
		"text":     {text.String(), "\nRetry budget left, reconstructed"},
		"text row": {text.String(), "\ngrpc\\x1b[2Japp" + line}, // the escape shown, never obeyed
		"markdown": {md.String(), "### Retry budget left, reconstructed"},
		"md row":   {md.String(), "- grpc\\\\x1b\\[2Japp -> db\\|x: 4.20 of 10 tokens"},
	} {
		if !strings.Contains(c.out, c.want) {
			t.Errorf("%s lacks %q:\n%s", name, c.want, c.out)
		}
	}
	for _, out := range []string{text.String(), md.String()} {
		if strings.Contains(out, "\x1b") || strings.Contains(out, "bounded ->") || strings.Contains(out, "native ->") {
			t.Errorf("escape, exported or absent budget listed:\n%q", out)
		}
	}
}

// A target line says what the store's series caps refused: by the
// per-target cap, or by the total cap across targets, and what was kept.
func TestTargetLineSeriesCap(t *testing.T) {
	for _, tt := range []struct {
		cap  model.SeriesCap
		want string
	}{
		{model.SeriesCap{ByTarget: 2, PerTarget: 6, Kept: 6}, "[2 series refused by the per-target cap of 6, 6 kept]"},
		{model.SeriesCap{ByTotal: 1, Total: 10, Kept: 4}, "[1 series refused: the store's total cap of 10 series across targets is full; 4 kept]"},
		{model.SeriesCap{ByTotal: 2, Total: 10, Kept: 0}, "[2 series refused: the store's total cap of 10 series across targets is full; 0 kept]"},
	} {
		c := tt.cap
		if line := targetLine(model.TargetStatus{Name: "a", Up: true, Series: 8, SeriesCap: &c}); !strings.HasSuffix(line, tt.want) {
			t.Errorf("target line %q, want it to end %q", line, tt.want)
		}
	}
}

// TestDownTargetNamedOnce: a target's line names it once: its name, then
// the scraper's error, which does not name it again.
func TestDownTargetNamedOnce(t *testing.T) {
	rep := analysis.Report{Targets: []model.TargetStatus{{
		Name: "app", URL: "http://127.0.0.1:1/metrics", Scrapes: 2, Failures: 2,
		LastError: "GET http://127.0.0.1:1/metrics: connection refused",
	}}}
	var b strings.Builder
	if err := WriteAnalysis(&b, rep, "text", 0); err != nil {
		t.Fatal(err)
	}
	want := "  app DOWN http://127.0.0.1:1/metrics (2 scrapes, 2 failed, 0 series): GET http://127.0.0.1:1/metrics: connection refused\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("the target's line is not %q:\n%s", want, b.String())
	}
}
