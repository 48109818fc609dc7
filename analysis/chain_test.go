package analysis

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/model"
)

func rowsOf(hops ...string) []model.Signals {
	var out []model.Signals
	for _, h := range hops {
		t, d, _ := strings.Cut(h, ">")
		out = append(out, model.Signals{Target: t, Dependency: d})
	}
	return out
}

func chainNames(cs []Chain) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestInferChains(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows []model.Signals
		want []string
	}{
		{"sim chain", rowsOf("client>provider", "browser>app", "app>client"),
			[]string{"browser -> app -> client -> provider"}},
		{"branching shares the first hops", rowsOf("browser>app", "app>client", "app>cache", "client>provider"),
			[]string{"browser -> app -> client -> provider", "browser -> app -> cache"}},
		{"unlinked rows are chains of one", rowsOf("svc>db", "svc>auth", "edge>svc"),
			[]string{"edge -> svc -> auth", "edge -> svc -> db"}},
		{"lone hops", rowsOf("svc>db", "svc>auth"), []string{"svc -> auth", "svc -> db"}},
		{"duplicates count once", rowsOf("a>b", "a>b", "b>c"), []string{"a -> b -> c"}},
		{"a cycle without entry stops before repeating", rowsOf("a>b", "b>a"),
			[]string{"a -> b -> a"}},
		{"a cycle behind an entry", rowsOf("u>a", "a>b", "b>a"), []string{"u -> a -> b -> a"}},
		{"self call", rowsOf("a>a"), []string{"a -> a"}},
		{"rows without a dependency are ignored", rowsOf("a>", "a>b"), []string{"a -> b"}},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := InferChains(tc.rows)
			if names := chainNames(got); !reflect.DeepEqual(names, tc.want) {
				t.Fatalf("chains = %q, want %q", names, tc.want)
			}
			for _, c := range got {
				for i := 1; i < len(c.Hops); i++ {
					if c.Hops[i].Target != c.Hops[i-1].Dependency {
						t.Errorf("%s: hop %d does not link", c.Name, i)
					}
				}
			}
			// Any order of the rows gives the same chains.
			rng := rand.New(rand.NewPCG(1, 2))
			for range 20 {
				rows := append([]model.Signals(nil), tc.rows...)
				rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
				if again := InferChains(rows); !reflect.DeepEqual(again, got) {
					t.Fatalf("order-dependent: %v vs %v", chainNames(again), chainNames(got))
				}
			}
		})
	}
}

// hopRow is a row with originals, attempts, retries and max attempts;
// NaN leaves a field absent.
func hopRow(target, dep string, originals, attempts, maxAttempts float64) model.Signals {
	s := model.Signals{Target: target, Dependency: dep}
	s.OriginalsPerS, s.AttemptsPerS, s.MaxAttempts = val(originals), val(attempts), val(maxAttempts)
	s.Amplification = ratio(s.AttemptsPerS, s.OriginalsPerS)
	if s.OriginalsPerS.OK() && s.AttemptsPerS.OK() {
		s.RetriesPerS = model.Some(attempts - originals)
	}
	return s
}

func val(v float64) model.Value {
	if v != v {
		return model.Absent
	}
	return model.Some(v)
}

var simChain = Chain{Name: "sim", Hops: []Hop{{"browser", "app"}, {"app", "client"}, {"client", "provider"}}}

func TestEvaluateChain(t *testing.T) {
	rows := []model.Signals{
		hopRow("browser", "app", 50, 60, 3),
		hopRow("app", "client", 60, 90, 3),
		hopRow("client", "provider", 90, 180, 3),
	}
	r := EvaluateChain(simChain, rows)
	if r.Name != "sim" || len(r.Hops) != 3 || len(r.Gaps) != 0 || r.Gaps == nil {
		t.Fatalf("result = %+v", r)
	}
	checkValue(t, "end to end", r.EndToEndAmplification, 180.0/50)
	checkValue(t, "product", r.ProductAmplification, 1.2*1.5*2)
	checkValue(t, "worst case", r.WorstCaseAmplification, 27)
	checkValue(t, "hop 1 amplification", r.Hops[1].Amplification, 1.5)
	checkValue(t, "hop 2 originals", r.Hops[2].OriginalsPerS, 90)
	checkValue(t, "hop 2 attempts", r.Hops[2].AttemptsPerS, 180)
	checkValue(t, "hop 2 retries", r.Hops[2].RetriesPerS, 90)
	checkValue(t, "hop 0 max attempts", r.Hops[0].MaxAttempts, 3)

	// One hop without a max-attempts gauge: no worst case; a missing hop:
	// no product, no end-to-end through it.
	rows[1].MaxAttempts = model.Absent
	r = EvaluateChain(simChain, rows)
	checkValue(t, "worst case without a gauge", r.WorstCaseAmplification, absent)
	checkValue(t, "product with all hops", r.ProductAmplification, 3.6)
	r = EvaluateChain(simChain, rows[:2])
	checkValue(t, "end to end without the last hop", r.EndToEndAmplification, absent)
	checkValue(t, "product without the last hop", r.ProductAmplification, absent)
	if r.Hops[2].Found || !r.Hops[1].Found {
		t.Errorf("found = %v %v", r.Hops[1].Found, r.Hops[2].Found)
	}
	if r := EvaluateChain(Chain{}, rows); r.ProductAmplification.OK() || r.WorstCaseAmplification.OK() {
		t.Errorf("empty chain: %+v", r)
	}
	// The default name.
	if r := EvaluateChain(Chain{Hops: simChain.Hops}, rows); r.Name != "browser -> app -> client -> provider" {
		t.Errorf("name = %q", r.Name)
	}
}

func TestChainGaps(t *testing.T) {
	withReceived := func(s model.Signals, v float64) model.Signals {
		s.DependencyReceivedPerS = model.Some(v)
		return s
	}
	type gapWant struct {
		code                     string
		from                     Hop
		to                       string
		sent, arrived, rel, fact float64
		tolerance                float64
	}
	for _, tc := range []struct {
		name string
		rows []model.Signals
		want []gapWant
	}{
		{
			name: "consistent",
			rows: []model.Signals{hopRow("browser", "app", 50, 50, 1), hopRow("app", "client", 50, 50, 1), hopRow("client", "provider", 50, 150, 3)},
		},
		{
			// Within 15 % + 0.5/s of what was sent: 100 sent, 105.4 arrived.
			name: "within tolerance",
			rows: []model.Signals{hopRow("browser", "app", 100, 100, 1), hopRow("app", "client", 105.4, 106, 1), hopRow("client", "provider", 101, 100, 3)},
		},
		{
			// app sends 50/s, client starts 150/s: something retries x3
			// in between.
			name: "hidden layer between two targets",
			rows: []model.Signals{hopRow("browser", "app", 50, 50, 1), hopRow("app", "client", 50, 50, 1), hopRow("client", "provider", 150, 150, 1)},
			want: []gapWant{{CodeHiddenRetries, Hop{"app", "client"}, "client", 50, 150, 2, 3, 8}},
		},
		{
			name: "loss between two targets",
			rows: []model.Signals{hopRow("browser", "app", 50, 50, 1), hopRow("app", "client", 40, 40, 1), hopRow("client", "provider", 40, 40, 1)},
			want: []gapWant{{CodeHopLoss, Hop{"browser", "app"}, "app", 50, 40, -0.2, 0.8, 8}},
		},
		{
			// The provider is a target and says what it received.
			name: "hidden layer before the provider",
			rows: []model.Signals{hopRow("browser", "app", 50, 50, 1), hopRow("app", "client", 50, 50, 1),
				withReceived(hopRow("client", "provider", 50, 60, 3), 180)},
			want: []gapWant{{CodeHiddenRetries, Hop{"client", "provider"}, "provider", 60, 180, 2, 3, 9.5}},
		},
		{
			name: "provider received what was sent",
			rows: []model.Signals{hopRow("browser", "app", 50, 50, 1), hopRow("app", "client", 50, 50, 1),
				withReceived(hopRow("client", "provider", 50, 60, 3), 61)},
		},
		{
			// A second visible caller of client: its attempts count as sent.
			name: "two visible callers",
			rows: []model.Signals{hopRow("browser", "app", 50, 50, 1), hopRow("app", "client", 50, 50, 1),
				hopRow("batch", "client", 20, 30, 3), hopRow("client", "provider", 80, 80, 1)},
		},
		{
			name: "absent sides are not compared",
			rows: []model.Signals{hopRow("browser", "app", 50, absent, 1), hopRow("app", "client", 50, 50, 1), hopRow("client", "provider", absent, 50, 1)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := EvaluateChain(simChain, tc.rows)
			if len(r.Gaps) != len(tc.want) {
				t.Fatalf("gaps = %+v, want %d", r.Gaps, len(tc.want))
			}
			for i, w := range tc.want {
				g := r.Gaps[i]
				if g.Code != w.code || g.From != w.from || g.To != w.to {
					t.Errorf("gap %d = %s %v -> %s, want %s %v -> %s", i, g.Code, g.From, g.To, w.code, w.from, w.to)
				}
				for _, c := range []struct {
					name      string
					got, want float64
				}{
					{"sent", g.SentPerS, w.sent}, {"arrived", g.ArrivedPerS, w.arrived},
					{"gap", g.GapPerS, w.arrived - w.sent}, {"tolerance", g.TolerancePerS, w.tolerance},
				} {
					if !near(c.got, c.want) {
						t.Errorf("gap %d %s = %v, want %v", i, c.name, c.got, c.want)
					}
				}
				checkValue(t, "relative", g.Relative, w.rel)
				checkValue(t, "factor", g.Factor, w.fact)
			}
		})
	}

	// A stricter tolerance turns a small difference into a gap; nothing
	// sent means no relative size.
	rows := []model.Signals{hopRow("browser", "app", 100, 100, 1), hopRow("app", "client", 103, 103, 1)}
	if r := EvaluateChainWith(simChain, rows, GapTolerance{Relative: 0.01}); len(r.Gaps) != 1 || r.Gaps[0].Code != CodeHiddenRetries {
		t.Errorf("strict tolerance: %+v", r.Gaps)
	}
	rows = []model.Signals{hopRow("browser", "app", 0, 0, 1), hopRow("app", "client", 5, 5, 1)}
	r := EvaluateChain(simChain, rows)
	if len(r.Gaps) != 1 || r.Gaps[0].Relative.OK() || r.Gaps[0].Factor.OK() || r.Gaps[0].GapPerS != 5 {
		t.Errorf("nothing sent: %+v", r.Gaps)
	}
}

func TestEvaluateChainsInfers(t *testing.T) {
	rows := []model.Signals{hopRow("browser", "app", 50, 50, 1), hopRow("app", "client", 50, 50, 1)}
	rs := EvaluateChains(rows, nil, DefaultGapTolerance())
	if len(rs) != 1 || rs[0].Name != "browser -> app -> client" {
		t.Fatalf("inferred = %+v", rs)
	}
	rs = EvaluateChains(rows, []Chain{simChain, {Name: "x", Hops: []Hop{{"app", "client"}}}}, DefaultGapTolerance())
	if len(rs) != 2 || rs[0].Name != "sim" || rs[1].Name != "x" {
		t.Fatalf("declared = %+v", rs)
	}
}
