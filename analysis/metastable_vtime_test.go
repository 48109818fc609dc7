package analysis

import (
	"testing"
)

// METASTABLE on recordings of the sim's scenarios: critical on the client
// -> provider row of the stuck one, live (a frame at the recording's end,
// as the dashboard builds it) and in the report analyze and the report
// command write; on no row of a scenario that recovers.
func TestMetastableOnDemoRecordings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stuck bool
	}{
		{"metastable", true},
		{"metastable-bounded", false},
		{"baseline", false},
		{"bounded", false},
		{"healthy", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := recordDemo(t, tc.name)
			rep := BuildReport(d.store, d.targets, ReportOptions{})
			frame := BuildFrame(d.store, d.targets, FrameOptions{})
			live := Evaluate(frame, nil, DefaultThresholds())
			for _, c := range []struct {
				where string
				fs    []Finding
			}{{"report", rep.Findings}, {"live", live}} {
				var got []Finding
				for _, f := range c.fs {
					if f.Code == CodeMetastable {
						got = append(got, f)
					}
				}
				if !tc.stuck {
					for _, f := range got {
						t.Errorf("%s: %s", c.where, f.Message)
					}
					continue
				}
				if len(got) != 1 || got[0].Severity != SeverityCritical || got[0].Target != "client" || got[0].Dependency != "provider" {
					t.Errorf("%s: METASTABLE %+v, want one, critical, on client -> provider", c.where, got)
				}
			}
		})
	}
}
