package sim

import (
	"context"
	"testing"
	"testing/synctest"
)

// TestVirtualBaselineRun runs the baseline scenario's full schedule (50 s
// of virtual time, 2,500 originals) in process with no scrapes: its -v
// duration is the sim's own cost of a run in virtual time
// (docs/testing.md records it). It also holds the run's truth to the
// schedule, so that it is a test and not only a stopwatch.
func TestVirtualBaselineRun(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement first: TestVirtualBinsAgreeWithTruth runs the baseline in full")
	}
	synctest.Test(t, func(t *testing.T) {
		sc, _ := ScenarioByName("baseline")
		s, err := Start(context.Background(), sc, Options{InProcess: true, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		s.Wait()
		tr := s.Truth()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		slow, ok := tr.slowPhase()
		if !tr.Done || tr.User.Sent != 2500 || tr.User.Dropped != 0 || tr.Elapsed < sc.Schedule.Total() || !ok {
			t.Fatalf("done %v, sent %d, dropped %d, elapsed %v", tr.Done, tr.User.Sent, tr.User.Dropped, tr.Elapsed)
		}
		// The seed's incident: the slowdown's retries reach the provider
		// as more attempts than there were user actions, and users time out.
		if slow.Amplification <= 1.5 || tr.User.Timeout == 0 {
			t.Errorf("slow phase: provider amplification %.2f, user timeouts %d", slow.Amplification, tr.User.Timeout)
		}
		t.Logf("virtual %v: sent %d, success %d, timeout %d; slow phase provider amplification %.2f",
			tr.Elapsed, tr.User.Sent, tr.User.Success, tr.User.Timeout, slow.Amplification)
	})
}
