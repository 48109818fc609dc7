package record

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
)

func TestFormatSize(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{5 << 20, "5.0 MiB"}, {3 << 30, "3.0 GiB"},
	} {
		if got := FormatSize(tt.n); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestProgressLine: the clock given, totals, write errors and each
// target's scrapes, its name made safe for the terminal.
func TestProgressLine(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	st := []model.TargetStatus{{Name: "app", Scrapes: 10, Failures: 2}, {Name: "db\x1b[2J", Scrapes: 7}}
	got := ProgressLine(now, st, dump.Stats{Bytes: 2048, Errors: 1})
	want := `15:04:05  scrapes 17, failed 2  written 2.0 KiB, 1 write error(s)  app 10 (2 failed), db\x1b[2J 7`
	if got != want {
		t.Errorf("progress line\n%q\nwant\n%q", got, want)
	}
}

// TestDashboardStatus: the REC badge after the previous badge, and the
// last write error cut at 48 bytes.
func TestDashboardStatus(t *testing.T) {
	d := &Dashboard{}
	prev := ""
	status := d.Status(func() string { return prev })
	if got := status(); got != "● REC" {
		t.Errorf("no error, no previous badge: %q", got)
	}
	prev = "discovery: x"
	d.OnErr(errors.New(strings.Repeat("e", 60)))
	if got, want := status(), "discovery: x ● REC ERROR: "+strings.Repeat("e", 48)+"…"; got != want {
		t.Errorf("badge %q, want %q", got, want)
	}
	if got := d.Status(nil)(); !strings.HasPrefix(got, "● REC ERROR: eee") {
		t.Errorf("without a previous badge function: %q", got)
	}
}
