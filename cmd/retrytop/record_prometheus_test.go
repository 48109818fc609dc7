package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// record --prometheus writes the query results as frames: analyze FILE on
// the recording reads the same row as analyze --prometheus (10 originals
// and 25 attempts per range: amplification 2.5).
func TestRecordPrometheus(t *testing.T) {
	srv := fakePrometheus(t)
	path := filepath.Join(t.TempDir(), "fleet.rtd")
	// Two evaluations make the amplification; 4 s leaves room for them
	// when a busy machine delays the command's start by seconds (1.5 s
	// recorded nothing beside a CPU hog).
	_, stderr, err := execute(t, "record", "--prometheus", srv.URL, "--selector", `{namespace="shop"}`,
		"-o", path, "--duration", "4s", "--interval", "500ms", "-q")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "app") {
		t.Errorf("summary does not name the target:\n%s", stderr)
	}
	out, stderr, err := execute(t, "analyze", path, "--format", "json", "--window", "1m")
	if err != nil {
		t.Fatalf("analyze FILE: %v\n%s", err, stderr)
	}
	var rep struct {
		Dependencies []struct {
			Target, Dependency string
			Amplification      *float64 `json:"amplification"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Dependencies) != 1 {
		t.Fatalf("rows: %s", out)
	}
	d := rep.Dependencies[0]
	if d.Target != "app" || d.Dependency != "db" || d.Amplification == nil || fmt.Sprintf("%.2f", *d.Amplification) != "2.50" {
		t.Errorf("row from the recording: %+v (amplification %v)", d, d.Amplification)
	}

	// Scraping flags make no sense with --prometheus.
	_, _, err = execute(t, "record", "--prometheus", srv.URL, "--file-sd", "x.json", "-o", filepath.Join(t.TempDir(), "x.rtd"))
	if err == nil || !strings.Contains(err.Error(), "--file-sd") {
		t.Errorf("--file-sd with --prometheus: %v", err)
	}
}
