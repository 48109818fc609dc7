package dialect_test

import (
	"math"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
)

// TestTraefikAdmissionDerived reads a recorded run with an in-flight
// limiter (testdata/traefik_inflight.{1,2}.prom: two scrapes 60 s apart,
// counts known from the run) through the translator and the store: the
// router's 429s the service never answered are the limiter's 1,737
// rejections, derived, and the report marks them so. Counters are exact
// integers, so the derivation is exact: well inside the 3 % the rule is
// held to.
func TestTraefikAdmissionDerived(t *testing.T) {
	const (
		requests = 4000 // through the router between the scrapes
		rejected = 1737 // by the in-flight limiter
		tries    = 2351 // service requests
		span     = 60.0 // seconds between the scrapes
		goal     = 0.03
	)
	st := model.NewStore(model.StoreConfig{})
	tr := dialect.Auto()
	for i, f := range []string{"traefik_inflight.1.prom", "traefik_inflight.2.prom"} {
		s, name, err := tr.Translate("", &model.Snapshot{Target: "traefik", Time: t0.Add(time.Duration(i) * span * time.Second), Families: load(t, f)})
		if err != nil || name != dialect.NameTraefik {
			t.Fatalf("%s: %q, %v", f, name, err)
		}
		st.Append(s)
	}
	sig := analysis.SignalsFor(st, "traefik", "whoami@docker", t0.UnixMilli(), t0.Add(span*time.Second).UnixMilli())
	for _, c := range []struct {
		name  string
		got   model.Value
		truth float64
	}{
		{"admission rejections", sig.AdmissionRejectedPerS, rejected},
		{"capacity_rejected results", sig.ResultsPerS[model.ResultCapacityRejected], rejected},
		{"originals", sig.OriginalsPerS, requests},
		{"attempts", sig.AttemptsPerS, tries},
	} {
		if !c.got.OK() {
			t.Errorf("%s: absent, truth %v", c.name, c.truth)
			continue
		}
		got := c.got.V() * span
		if math.Abs(got-c.truth) > 1e-9*c.truth {
			t.Errorf("%s: %.3f, truth %v", c.name, got, c.truth)
		}
		if math.Abs(got-c.truth) > goal*c.truth {
			t.Errorf("%s: %.3f beyond the 3 %% goal of %v", c.name, got, c.truth)
		}
	}
	d := dialect.DerivedByDialect(dialect.Config{})[dialect.NameTraefik]
	if d["admission_rejected"] == "" {
		t.Errorf("traefik's derived families = %v, want admission_rejected", d)
	}
	rep := analysis.BuildReport(st, []model.TargetStatus{{Name: "traefik", Dialect: dialect.NameTraefik, Up: true}},
		analysis.ReportOptions{Window: span * time.Second, Derived: dialect.DerivedByDialect(dialect.Config{})})
	if len(rep.Dependencies) != 1 || rep.Dependencies[0].Derived["admission_rejected"] == "" {
		t.Errorf("report rows: %+v, want admission_rejected marked derived", rep.Dependencies)
	}
}
