package main

import (
	"errors"
	"testing"

	"github.com/retrytop/retrytop/analysis"
)

func TestFailOnExitCodes(t *testing.T) {
	warn := []analysis.Finding{{Code: "RETRY_AMPLIFICATION", Severity: analysis.SeverityWarning}}
	tests := []struct {
		name     string
		findings []analysis.Finding
		flag     string
		wantCode int // 0 = no error
	}{
		{"no flag", warn, "", 0},
		{"below threshold", warn, "critical", 0},
		{"at threshold", warn, "warning", exitFinding},
		{"above threshold", warn, "info", exitFinding},
		{"no findings", nil, "info", 0},
		{"bad severity", warn, "loud", exitUsage},
	}
	for _, tt := range tests {
		err := failOn(tt.findings, tt.flag)
		var ee *exitError
		switch {
		case tt.wantCode == 0 && err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, err)
		case tt.wantCode != 0 && (!errors.As(err, &ee) || ee.code != tt.wantCode):
			t.Errorf("%s: error %v, want exit code %d", tt.name, err, tt.wantCode)
		}
	}
}
