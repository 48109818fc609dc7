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

// TestOutcome: a closed recording that lost scrapes, or whose close
// failed, is a *LossError naming how many and when; one that holds every
// scrape is nil.
func TestOutcome(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	if err := Outcome("rec.rtd", dump.Stats{Frames: 10}, nil); err != nil {
		t.Errorf("nothing lost: %v", err)
	}
	err := Outcome("rec.rtd", dump.Stats{Frames: 10, Lost: 3, FirstLost: t0, LastLost: t0.Add(2 * time.Second)}, nil)
	var le *LossError
	if !errors.As(err, &le) || le.Lost != 3 || err.Error() != "rec.rtd: 3 scrape(s) could not be written between 2026-12-04T12:00:00Z and 2026-12-04T12:00:02Z; the recording lacks them" {
		t.Errorf("lost 3: %v", err)
	}
	err = Outcome("rec.rtd", dump.Stats{Frames: 10}, errors.New("dump: sync: no space left on device"))
	if !errors.As(err, &le) || le.Lost != 0 || !strings.Contains(err.Error(), "closing it failed (dump: sync: no space left on device); what was written reads without its index") {
		t.Errorf("close failed: %v", err)
	}
	var sum strings.Builder
	WriteSummary(&sum, "rec.rtd", nil, dump.Stats{Frames: 10, Lost: 3, FirstLost: t0, LastLost: t0.Add(2 * time.Second)})
	if !strings.Contains(sum.String(), "LOST 3 scrape(s) that could not be written, from 2026-12-04T12:00:00Z to 2026-12-04T12:00:02Z") {
		t.Errorf("summary:\n%s", sum.String())
	}
}
