package policy

import (
	"errors"
	"testing"
	"time"
)

const ms = time.Millisecond

// maxRand draws the largest value (the ceiling of every jitter), zeroRand
// the smallest: the two ends of every hand-computed sequence.
func maxRand(n int64) int64  { return n - 1 }
func zeroRand(n int64) int64 { return 0 }

func TestBackoffSequences(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Backoff
		want []time.Duration // retries 1..len
	}{
		// retry.Policy full jitter: ceiling min(25ms*2^(n-1), 200ms).
		{"full jitter 25..200", Backoff{Kind: "full_jitter", Base: 25 * ms, Cap: 200 * ms}, []time.Duration{25 * ms, 50 * ms, 100 * ms, 200 * ms, 200 * ms}},
		// Envoy: ceiling (2^n-1)*25ms, at most max_interval 250ms.
		{"envoy 25ms", Backoff{Kind: "envoy", Base: 25 * ms, Cap: 250 * ms}, []time.Duration{25 * ms, 75 * ms, 175 * ms, 250 * ms}},
		// AWS: U[0,1)*2^n s, capped at 20 s; the largest draw is (2^20-1)/2^20.
		{"aws", Backoff{Kind: "exponential_jitter", Base: time.Second, Cap: 20 * time.Second}, []time.Duration{
			1999998092, // 2 s x (2^20-1)/2^20, truncated to ns
			3999996185,
			7999992370,
			15999984741,
			20 * time.Second,
		}},
		{"none", Backoff{Kind: "none"}, []time.Duration{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, w := range tc.want {
				if got := tc.b.Delay(i+1, maxRand); got != w {
					t.Errorf("retry %d: max draw %v, want %v", i+1, got, w)
				}
				if got := tc.b.Delay(i+1, zeroRand); got != 0 {
					t.Errorf("retry %d: zero draw %v, want 0", i+1, got)
				}
			}
		})
	}
}

// step is one call of a hand-computed sequence and what it must answer.
type step struct {
	at   time.Duration
	call string // start, acquire, release:<outcome>, retry:<outcome>, end:<outcome>
	op   int    // which operation
	want Reason
}

func outcomeOf(s string) Outcome {
	for o := Success; o <= Cancelled; o++ {
		if o.String() == s {
			return o
		}
	}
	panic("unknown outcome " + s)
}

func run(t *testing.T, p Policy, steps []step) {
	t.Helper()
	ops := map[int]*Op{}
	for i, s := range steps {
		op := ops[s.op]
		if op == nil {
			op = &Op{Start: s.at}
			ops[s.op] = op
		}
		var got Reason
		switch name, arg, _ := cut(s.call); name {
		case "start":
			got = p.Start(s.at, op)
		case "acquire":
			got = p.Acquire(s.at, op)
			if got == Allowed {
				op.Attempts++
			}
		case "release":
			p.Release(s.at, op, outcomeOf(arg))
		case "retry":
			got = p.Retry(s.at, op, outcomeOf(arg))
		case "end":
			p.End(s.at, op, outcomeOf(arg))
			delete(ops, s.op)
		default:
			t.Fatalf("step %d: unknown call %q", i, s.call)
		}
		if got != s.want {
			t.Fatalf("step %d (%s op %d at %v): got %q, want %q", i, s.call, s.op, s.at, got, s.want)
		}
	}
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func repeat(n int, s step) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = s
		out[i].op = s.op + i
	}
	return out
}

func cat(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// The bounded owner, from retry.Budget and retry.Limiter: the budget starts
// empty, an original earns 1 credit, a retry costs 10, a paid retry that is
// not made is refunded; 4 slots, never queued.
func TestBoundedSequence(t *testing.T) {
	p := Bounded(maxRand)
	run(t, p, cat(
		[]step{{0, "start", 0, Allowed}, {0, "acquire", 0, Allowed}, {0, "release:failure", 0, Allowed},
			{0, "retry:failure", 0, ReasonBudget}}, // 1 credit < 10
		repeat(9, step{0, "start", 100, Allowed}), // 10 credits
		[]step{{0, "retry:failure", 0, Allowed}},  // 0 credits, paid
		[]step{{0, "retry:failure", 1, ReasonBudget}},
		[]step{{0, "end:failure", 0, Allowed}},   // not made: refunded, 10
		[]step{{0, "retry:failure", 1, Allowed}}, // 0
	))
	if p.Credits() != 0 {
		t.Fatalf("credits %d, want 0", p.Credits())
	}
	run(t, p, repeat(250, step{0, "start", 1000, Allowed}))
	if p.Credits() != 200 {
		t.Fatalf("credits after 250 originals %d, want the cap 200", p.Credits())
	}
	// The limiter: 4 attempts in flight, the fifth is refused at once.
	q := Bounded(maxRand)
	run(t, q, cat(
		repeat(4, step{0, "acquire", 0, Allowed}),
		[]step{{0, "acquire", 4, ReasonLimiter}, {ms, "release:success", 0, Allowed}, {ms, "acquire", 4, Allowed}},
	))
}

// Envoy: retries in progress < max(20% of active, 3); a request holds its
// retry until its next decision or its end.
func TestEnvoySequence(t *testing.T) {
	e := NewEnvoy(maxRand)
	run(t, e, cat(
		[]step{{0, "retry:failure", 1, Allowed}, {0, "retry:failure", 2, Allowed}, {0, "retry:failure", 3, Allowed},
			{0, "retry:failure", 4, ReasonBudget}, // 3 in progress, allowance max(0, 3)
			{0, "retry:failure", 1, Allowed},      // op 1's own retry is released first
			{0, "end:success", 2, Allowed},
			{0, "retry:failure", 4, Allowed}},
	))
	// 20 active requests: allowance max(int(0.2*20), 3) = 4.
	f := NewEnvoy(maxRand)
	run(t, f, repeat(20, step{0, "acquire", 100, Allowed}))
	if got := f.Allowance(); got != 4 {
		t.Fatalf("allowance with 20 active %d, want 4", got)
	}
	run(t, f, cat(repeat(4, step{0, "retry:failure", 200, Allowed}), []step{{0, "retry:failure", 300, ReasonBudget}}))
	// Without a budget, the circuit breaker's max_retries 3.
	g, err := New(Spec{Name: "envoy", Params: []Param{{Key: "budget", Value: "none"}}}, Base{}, maxRand)
	if err != nil {
		t.Fatal(err)
	}
	run(t, g, cat(repeat(3, step{0, "retry:failure", 1, Allowed}), []step{{0, "retry:failure", 9, ReasonBreaker}}))
	if e.MaxAttempts() != 2 {
		t.Fatalf("envoy attempts %d, want num_retries 1 + 1", e.MaxAttempts())
	}
}

// Finagle: reserve 10/s x 10 s = 100 retries; each original deposits 1/0.2 =
// a fifth of a retry; everything in the window expires after the ttl.
func TestFinagleSequence(t *testing.T) {
	f := NewFinagle(Base{MaxAttempts: 3}, maxRand)
	run(t, f, cat(
		repeat(100, step{0, "retry:failure", 0, Allowed}),
		[]step{{0, "retry:failure", 200, ReasonBudget}},
		repeat(5, step{500 * ms, "start", 300, Allowed}), // 5 deposits = 1 retry
		[]step{{500 * ms, "retry:failure", 400, Allowed}, {500 * ms, "retry:failure", 401, ReasonBudget}},
		// 9.999 s: the first slice still counts; 10 s: it has expired, the
		// reserve is whole again but the 0.5 s slice still holds -5 (one
		// deposit of 5 and one withdrawal of 5 cancel): 100 retries.
		[]step{{9999 * ms, "retry:failure", 402, ReasonBudget}},
		repeat(100, step{10 * time.Second, "retry:failure", 500, Allowed}),
		[]step{{10 * time.Second, "retry:failure", 700, ReasonBudget}},
	))
	if f.MaxAttempts() != 3 {
		t.Fatalf("attempts %d, want the base's 3", f.MaxAttempts())
	}
}

// gRPC A6: 10 tokens, a failure with a retryable status costs 1, a success
// adds 0.1, no retry at or below 5. A permanent error (a status not
// retryable) neither retries nor counts; timeouts are retryable, as the
// hop retried them.
func TestGRPCSequence(t *testing.T) {
	g := NewGRPC(Base{MaxAttempts: 7}, maxRand)
	run(t, g, cat(
		repeat(4, step{0, "release:failure", 0, Allowed}), // 6
		[]step{{0, "retry:failure", 9, Allowed}},
		[]step{{0, "release:permanent", 0, Allowed}}, // not retryable: 6
		[]step{{0, "retry:failure", 9, Allowed}},
		[]step{{0, "release:timeout", 0, Allowed}}, // 5
		[]step{{0, "retry:failure", 9, ReasonBudget}},
		[]step{{0, "release:cancelled", 0, Allowed}}, // no answer: still 5
		[]step{{0, "retry:failure", 9, ReasonBudget}},
		[]step{{0, "release:success", 0, Allowed}}, // 5.1
		[]step{{0, "retry:failure", 9, Allowed}},
	))
	if g.Tokens() != 5.1 {
		t.Fatalf("tokens %v, want 5.1", g.Tokens())
	}
	run(t, g, repeat(100, step{0, "release:success", 0, Allowed}))
	if g.Tokens() != 10 {
		t.Fatalf("tokens %v, want the cap 10", g.Tokens())
	}
	if g.MaxAttempts() != 5 {
		t.Fatalf("attempts %d, want the cap 5", g.MaxAttempts())
	}

	// A6's example policy, UNAVAILABLE only: a timeout neither retries
	// nor counts.
	p, err := New(Spec{Name: "grpc", Params: []Param{{Key: "retry_timeouts", Value: "none"}}}, Base{MaxAttempts: 3}, maxRand)
	if err != nil {
		t.Fatal(err)
	}
	run(t, p, cat(
		repeat(4, step{0, "release:failure", 0, Allowed}), // 6
		repeat(3, step{0, "release:timeout", 0, Allowed}), // still 6
		[]step{{0, "retry:timeout", 9, ReasonNonRetry}},
		[]step{{0, "retry:failure", 9, Allowed}},
		[]step{{0, "release:failure", 0, Allowed}}, // 5
		[]step{{0, "retry:failure", 9, ReasonBudget}},
	))
}

// SRE: P = max(0, (requests - 2 accepts) / (requests + 1)) over 2 minutes;
// zeroRand rejects whenever P > 0.
func TestSRESequence(t *testing.T) {
	s := NewSRE(Base{MaxAttempts: 3}, zeroRand)
	run(t, s, []step{
		{0, "acquire", 0, Allowed}, // P = 0
		{0, "release:timeout", 0, Allowed},
		{0, "acquire", 1, ReasonLimiter}, // P = (1 - 0) / 2
	})
	if p := s.RejectProbability(0); p != 2.0/3 {
		t.Fatalf("P after 2 requests, 0 accepts = %v, want 2/3", p)
	}
	// Two minutes later the window is empty: P = 0 again, and accepted
	// requests keep it there: (3 - 2*3)/4 < 0.
	later := 2 * time.Minute
	run(t, s, []step{
		{later, "acquire", 2, Allowed}, {later, "release:success", 2, Allowed},
		{later, "acquire", 3, Allowed}, {later, "release:success", 3, Allowed},
		{later, "acquire", 4, Allowed}, {later, "release:success", 4, Allowed},
	})
	if p := s.RejectProbability(later); p != 0 {
		t.Fatalf("P with every request accepted = %v, want 0", p)
	}
}

// AWS standard: 500 tokens, 5 per retry, 10 after a timeout, a success
// refunds the retry's cost or adds 1.
func TestAWSSequence(t *testing.T) {
	a := NewAWS(maxRand)
	run(t, a, []step{
		{0, "acquire", 0, Allowed}, {0, "release:failure", 0, Allowed},
		{0, "retry:failure", 0, Allowed}, // 495
		{0, "acquire", 0, Allowed}, {0, "release:timeout", 0, Allowed},
		{0, "retry:timeout", 0, Allowed}, // 485
		{0, "acquire", 0, Allowed}, {0, "release:success", 0, Allowed},
		{0, "end:success", 0, Allowed}, // refund 10: 495
		{0, "acquire", 1, Allowed}, {0, "release:success", 1, Allowed},
		{0, "end:success", 1, Allowed}, // no retry: +1 = 496
	})
	if a.Quota() != 496 {
		t.Fatalf("quota %d, want 496", a.Quota())
	}
	b, _ := New(Spec{Name: "aws", Params: []Param{{Key: "quota", Value: "9"}}}, Base{}, maxRand)
	// 9 - 5 = 4 left: neither a retry (5) nor one after a timeout (10).
	run(t, b, []step{{0, "retry:failure", 0, Allowed}, {0, "retry:timeout", 1, ReasonBudget}, {0, "retry:failure", 2, ReasonBudget}})
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in    string
		names []string
		texts []string
		nparm []int
	}{
		{"envoy", []string{"envoy"}, []string{"envoy"}, []int{0}},
		{"finagle,grpc", []string{"finagle", "grpc"}, []string{"finagle", "grpc"}, []int{0, 0}},
		{"attempts=3,budget=none,limiter=none", []string{"custom"}, []string{"attempts=3,budget=none,limiter=none"}, []int{3}},
		{"envoy:budget_percent=30", []string{"envoy"}, []string{"envoy:budget_percent=30"}, []int{1}},
		{"envoy:budget_percent=30,attempts=3,finagle", []string{"envoy", "finagle"}, []string{"envoy:budget_percent=30,attempts=3", "finagle"}, []int{2, 0}},
		{" recorded , bounded ", []string{"recorded", "bounded"}, []string{"recorded", "bounded"}, []int{0, 0}},
	} {
		specs, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if len(specs) != len(tc.names) {
			t.Fatalf("%q: %d specs, want %d", tc.in, len(specs), len(tc.names))
		}
		for i, s := range specs {
			if s.Name != tc.names[i] || s.Text != tc.texts[i] || len(s.Params) != tc.nparm[i] {
				t.Errorf("%q spec %d: %q %q %d params, want %q %q %d", tc.in, i, s.Name, s.Text, len(s.Params), tc.names[i], tc.texts[i], tc.nparm[i])
			}
			if _, err := New(s, Base{MaxAttempts: 3}, maxRand); err != nil {
				t.Errorf("%q spec %d: New: %v", tc.in, i, err)
			}
		}
	}
}

// TestParseParenthesesSuggestGrammar: a call-like spec is answered with
// the grammar, naming the policy it was written for.
func TestParseParenthesesSuggestGrammar(t *testing.T) {
	_, err := Parse("grpc(maxAttempts=3)")
	if err == nil || err.Error() != "--policy at column 5: parameters are written NAME:KEY=VALUE,KEY=VALUE (e.g. grpc:attempts=3), not in parentheses" {
		t.Errorf("error %v", err)
	}
}

func TestParseErrorsNamePosition(t *testing.T) {
	for _, tc := range []struct {
		in  string
		pos int // 1-based column in the message
	}{
		{"", 1},
		{"envoy,,finagle", 7},
		{"envoy,finagel", 7},
		{"envoy:budget_percent", 7},
		{"recorded,envoy:budget_percent=300", 16},
		{"envoy,attempts=x", 7},
		{"finagle:ttl=2m", 9},
		{"grpc:colour=red", 6},
		{"envoy,grpc(maxAttempts=3)", 11},
	} {
		specs, err := Parse(tc.in)
		if err == nil {
			for _, s := range specs {
				if _, err = New(s, Base{MaxAttempts: 3}, maxRand); err != nil {
					break
				}
			}
		}
		var pe *PosError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v, want a position", tc.in, err)
			continue
		}
		if pe.Pos+1 != tc.pos {
			t.Errorf("%q: column %d (%v), want %d", tc.in, pe.Pos+1, err, tc.pos)
		}
	}
}

func TestCustomOverridesRecorded(t *testing.T) {
	specs, err := Parse("attempts=3,budget=none,limiter=none,backoff=none")
	if err != nil {
		t.Fatal(err)
	}
	base := Base{MaxAttempts: 2, Limit: 4, Budget: &BudgetRules{1, 10, 200}, Backoff: Backoff{Kind: "full_jitter", Base: 25 * ms, Cap: 200 * ms}}
	p, err := New(specs[0], base, maxRand)
	if err != nil {
		t.Fatal(err)
	}
	o := p.(*Owner)
	if o.MaxAttempts() != 3 || o.lim != nil || o.budget != nil || o.Backoff(&Op{Attempts: 1}) != 0 {
		t.Fatalf("custom = %+v, want 3 attempts, no limiter, no budget, no backoff", o)
	}
	if o.Name() != "custom" {
		t.Fatalf("name %q", o.Name())
	}
}

// attempt_timeout and deadline are the hop's timing, set through any
// model's spec.
func TestTimingOverride(t *testing.T) {
	specs, err := Parse("bounded:attempt_timeout=300ms,deadline=2s,envoy")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(specs[0], Base{MaxAttempts: 3}, maxRand)
	if err != nil {
		t.Fatal(err)
	}
	tp, ok := p.(Timed)
	if !ok || tp.Timing() != (Timing{AttemptTimeout: 300 * ms, Deadline: 2 * time.Second}) || tp.Name() != "bounded" {
		t.Fatalf("bounded with timing: %#v", p)
	}
	q, _ := New(specs[1], Base{MaxAttempts: 3}, maxRand)
	if _, ok := q.(Timed); ok {
		t.Fatalf("envoy without timing parameters must not override the hop's")
	}
}
