package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/retrytop/retrytop/retry"
)

// HopPolicy is how one hop calls its next hop.
type HopPolicy struct {
	// Retry is the retry owner's policy (attempt cap, deadlines, backoff).
	Retry retry.Policy
	// Limit is the admission limiter's slots for attempts in flight to the
	// next hop; 0 means no admission limit.
	Limit int
	// Budget is the shared retry budget's rules; nil means no budget.
	Budget *retry.BudgetConfig
	// PropagateDeadline makes the hop honour the caller's remaining time
	// (retry.HeaderTimeout, read by a retry.DeadlineHandler that counts
	// retry_server_requests_total) as its operation deadline, capped by
	// Retry.Deadline. Without it the hop only sees the caller hang up.
	PropagateDeadline bool
	// Method is the request method (default GET); another one labels the
	// owner's metrics with it and is retried anyway (route.go).
	Method string
	// Breaker is a circuit breaker in front of the retry owner; nil: none.
	Breaker *BreakerConfig
}

// Layer is one retrying service between the browser and the provider.
type Layer struct {
	// Name is the target name (and the dependency name its caller uses).
	Name string
	// Role is the Target.Layer value (default: Name).
	Role   string
	Policy HopPolicy
	// Hidden layers retry but expose no /metrics and are left out of
	// Targets, like a proxy or SDK nobody instrumented. A hidden layer's
	// caller names its dependency after the next visible target.
	Hidden bool
}

// hopCounts is one hop's ground truth, counted by the sim around the retry
// owner, apart from the owner's own metrics.
type hopCounts struct {
	originals, attempts atomic.Int64
	inFlight, peak      atomic.Int64
	// Counted at the moments the metric contract counts them, for the
	// per-bin truth (Counters): attempts that ended, those of them that
	// succeeded (2xx) or timed out, retries (attempts after an operation's
	// first, counted when they start), and the operations that ended after
	// at least one attempt with the attempts they made.
	ended, endedOK, timedOut atomic.Int64
	retries                  atomic.Int64
	admitted, opAttempts     atomic.Int64
	results                  [numResults]atomic.Int64
	// answered counts operations by what the hop answered its caller,
	// mapped like the end user's outcome (decisions made below included).
	answered [numOutcomes]atomic.Int64
}

// numResults is the number of retry.Result values the sim knows.
const numResults = int(retry.ResultCancelled) + 1

// hop is the calling side of a browser or layer: a retry.HTTPClient (a
// retry owner and retry.Transport) over a counting transport to the next hop.
type hop struct {
	name, role, dep string
	hidden          bool
	next            string // URL of the next hop's work endpoint
	policy          HopPolicy
	owner           *retry.Owner
	client          *retry.HTTPClient
	transport       http.RoundTripper // to the next hop: loopback or in-process
	counts          hopCounts
	server          http.Handler // what serves the hop's callers
	breaker         *breaker     // nil without one
}

// newHop builds a hop that calls next through transport (nil: a loopback
// HTTP transport of its own).
func newHop(name, role, dep, next string, hidden bool, pol HopPolicy, reg prometheus.Registerer, rnd func(int64) int64, transport http.RoundTripper) (*hop, error) {
	var lim *retry.Limiter
	if pol.Limit > 0 {
		lim = retry.NewLimiter(pol.Limit, 0)
	}
	var bud *retry.Budget
	if pol.Budget != nil {
		bud = retry.NewBudget(*pol.Budget)
	}
	// A nil reg leaves the metrics unregistered: the hidden hop's.
	owner, err := retry.New(retry.Config{
		Dependency: dep,
		Policy:     pol.Retry,
		Limiter:    lim,
		Budget:     bud,
		Metrics:    retry.NewMetrics(routeRegisterer(reg, pol)),
		Rand:       rnd,
	})
	if err != nil {
		return nil, fmt.Errorf("sim: hop %s: %w", name, err)
	}
	h := &hop{
		name: name, role: role, dep: dep, hidden: hidden, next: next, policy: pol,
		owner: owner, transport: transport,
	}
	if h.transport == nil {
		h.transport = newTransport()
	}
	// Every hop sends its attempt's remaining time; only hops with
	// PropagateDeadline honour what they receive.
	h.client = retry.NewHTTPClient(owner, countingTransport{h}, pol.httpOptions()...)
	h.breaker = newBreaker(pol.Breaker, dep, routeRegisterer(reg, pol))
	h.server = http.HandlerFunc(h.serve)
	if pol.PropagateDeadline {
		// OmitExhausted: the sim's layers retry what the layer below
		// already retried, which is the amplification it measures.
		h.server = &retry.DeadlineHandler{Next: h.server, Metrics: retry.NewServerMetrics(reg), OmitExhausted: true}
	}
	if reg != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "sim_hop_active_calls_peak",
			Help:        "Highest number of attempts this hop had in flight to its dependency at once (sim ground truth).",
			ConstLabels: prometheus.Labels{"dependency": dep},
		}, func() float64 { return float64(h.counts.peak.Load()) }))
	}
	return h, nil
}

// countingTransport is the base under retry.Transport: every round trip is
// one attempt on the wire. It counts it (from request to closed body) and
// sends it; retry.Transport has already set retry.HeaderTimeout.
type countingTransport struct{ h *hop }

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := &t.h.counts
	c.attempts.Add(1)
	if n, ok := req.Context().Value(opAttemptsKey{}).(*atomic.Int64); ok && n.Add(1) > 1 {
		c.retries.Add(1)
	}
	n := c.inFlight.Add(1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	resp, err := t.h.transport.RoundTrip(req)
	if err != nil {
		// The owner counts a failed round trip's attempt now, a timeout
		// when the error is one (a cancel is not).
		if !errors.Is(err, context.Canceled) && isTimeout(err) {
			c.timedOut.Add(1)
		}
		c.ended.Add(1)
		c.inFlight.Add(-1)
		return nil, err
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	resp.Body = &countedBody{ReadCloser: resp.Body, done: func() {
		// The owner has read the body and counts the attempt next.
		if ok {
			c.endedOK.Add(1)
		}
		c.ended.Add(1)
		c.inFlight.Add(-1)
	}}
	return resp, nil
}

// opAttemptsKey carries, in an operation's context, the number of attempts
// it has sent so far (*atomic.Int64), so that the counting transport can
// tell a retry from a first attempt.
type opAttemptsKey struct{}

type countedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *countedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

// callResult is how one operation through a hop ended.
type callResult struct {
	err    error  // nil on success
	result string // the deciding result (HeaderResult vocabulary)
}

// call runs one operation to the next hop through the retry owner.
func (h *hop) call(ctx context.Context) callResult {
	h.counts.originals.Add(1)
	res := h.do(ctx)
	h.counts.answered[userOutcome(res)].Add(1)
	return res
}

func (h *hop) doOwner(ctx context.Context) callResult {
	n := new(atomic.Int64)
	ctx = context.WithValue(ctx, opAttemptsKey{}, n)
	defer func() {
		if a := n.Load(); a > 0 {
			h.counts.opAttempts.Add(a)
			h.counts.admitted.Add(1)
		}
	}()
	req, err := http.NewRequestWithContext(ctx, h.policy.method(), h.next, nil)
	if err != nil {
		h.counts.results[retry.ResultPermanentError].Add(1)
		return callResult{err: err, result: retry.ResultPermanentError.String()}
	}
	resp, err := h.client.Do(ctx, retry.Sheddable, req)
	if err == nil {
		_ = resp.Body.Close()
		h.counts.results[retry.ResultSuccess].Add(1)
		if resp.StatusCode != http.StatusOK { // 4xx: the owner counts it a success
			return callResult{err: fmt.Errorf("HTTP %s", resp.Status), result: retry.ResultPermanentError.String()}
		}
		return callResult{result: retry.ResultSuccess.String()}
	}
	var re *retry.Error
	if !errors.As(err, &re) || int(re.Result) >= numResults {
		// Do promises an *Error with a known result; count anything else
		// as a provider error.
		h.counts.results[retry.ResultProviderError].Add(1)
		return callResult{err: err, result: retry.ResultProviderError.String()}
	}
	h.counts.results[re.Result].Add(1)
	res := callResult{err: err, result: re.Result.String()}
	if re.Result == retry.ResultProviderError || re.Result == retry.ResultPermanentError {
		// The next hop's answer decided: say what decided it there.
		var se *retry.StatusError
		switch {
		case errors.As(re.Err, &se) && se.Header.Get(HeaderResult) != "":
			res.result = se.Header.Get(HeaderResult)
		case re.Err != nil && isTimeout(re.Err):
			res.result = "timeout"
		}
	}
	return res
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// ServeHTTP makes h a layer's server: every request is one operation to
// the next hop, within the caller's propagated deadline when the hop
// honours it. Every failure is answered 503 with HeaderResult saying what
// decided it, as the seed suggests for "temporarily unavailable"; 503 is no
// permission to retry at once, but a naive caller will.
func (h *hop) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.server.ServeHTTP(w, r) }

func (h *hop) serve(w http.ResponseWriter, r *http.Request) {
	res := h.call(r.Context())
	if res.err == nil {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	w.Header().Set(HeaderResult, res.result)
	http.Error(w, res.result, http.StatusServiceUnavailable)
}

// userOutcome maps how the browser's operation ended to what the user saw.
func userOutcome(res callResult) Outcome {
	if res.err == nil {
		return OutcomeSuccess
	}
	switch res.result {
	case retry.ResultCapacityRejected.String(), retry.ResultBudgetExhausted.String():
		return OutcomeRejected
	case retry.ResultDeadlineExhausted.String(), retry.ResultCancelled.String(), "timeout":
		return OutcomeTimeout
	}
	return OutcomeError
}

// HopTruth is one calling hop's ground truth: the browser or a layer.
type HopTruth struct {
	Name       string
	Layer      string
	Dependency string
	Hidden     bool
	// MaxAttempts and Limit (0: none) are the policy in force; Budget says
	// whether a shared retry budget applies.
	MaxAttempts int
	Limit       int
	Budget      bool
	// Originals are operations this hop started (requests it served, or
	// user actions for the browser); Attempts the calls it made to its
	// dependency, first tries and retries.
	Originals, Attempts int64
	// Amplification is Attempts / Originals (0 without originals).
	Amplification float64
	// Results counts operations by their retry result label value
	// (success, capacity_rejected, budget_exhausted, deadline_exhausted,
	// provider_error, permanent_error, cancelled).
	Results map[string]int64
	// Successes, Rejections, Timeouts and Errors partition the finished
	// operations by what the hop answered its caller, classified like the
	// end user's outcome: a rejection or timeout decided further down the
	// path counts here too (Results has only this hop's own decisions).
	Successes, Rejections, Timeouts, Errors int64
	// InFlight is attempts in flight to the dependency now; PeakInFlight
	// the most at once since start.
	InFlight, PeakInFlight int64
}

func (h *hop) truth() HopTruth {
	t := HopTruth{
		Name: h.name, Layer: h.role, Dependency: h.dep, Hidden: h.hidden,
		MaxAttempts: h.policy.Retry.MaxAttempts, Limit: h.policy.Limit, Budget: h.policy.Budget != nil,
		InFlight:     h.counts.inFlight.Load(),
		PeakInFlight: h.counts.peak.Load(),
		Results:      make(map[string]int64, numResults),
	}
	for r := range numResults {
		t.Results[retry.Result(r).String()] = h.counts.results[r].Load()
	}
	// Read the flows after the results, so a finished operation is never
	// missing from Originals.
	t.Originals = h.counts.originals.Load()
	t.Attempts = h.counts.attempts.Load()
	t.Amplification = ratio(t.Attempts, t.Originals)
	a := &h.counts.answered
	t.Successes = a[OutcomeSuccess].Load()
	t.Rejections = a[OutcomeRejected].Load()
	t.Timeouts = a[OutcomeTimeout].Load()
	t.Errors = a[OutcomeError].Load() + a[OutcomeLate].Load()
	return t
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
