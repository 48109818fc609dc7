package analysis

import (
	"math"

	"github.com/retrytop/retrytop/model"
)

// Budget models a Budget can be read with: the balance the emitter exports
// (retry_budget_balance), or one rebuilt from the counts seen with the
// policy model of the emitter's dialect.
const (
	BudgetExported = "exported"
	BudgetGRPC     = "grpc"
	BudgetEnvoy    = "envoy"
	BudgetFinagle  = "finagle"
)

// The models' published defaults, as package policy has them (gRFC A6's
// example retryThrottling; Envoy's RetryBudget; Finagle's RetryBudget).
// No emitter exports its configuration: a reconstruction assumes these.
const (
	GRPCMaxTokens          = 10.0
	GRPCTokenRatio         = 0.1
	EnvoyBudgetPercent     = 20.0
	EnvoyMinRetryConc      = 3.0
	FinagleTTLSeconds      = 10.0
	FinagleMinRetriesPerS  = 10.0
	FinaglePercentCanRetry = 0.2
)

// Budget is how much retry budget a dependency has left at the end of a
// window and how soon it runs out at the window's net drain. Every figure
// may be Absent (JSON null, screen "-"): an input the emitter does not
// export leaves what depends on it unknown, never 0.
type Budget struct {
	// Model is BudgetExported or the policy model the balance was rebuilt
	// with; Reconstructed is true for the latter.
	Model         string `json:"model"`
	Reconstructed bool   `json:"reconstructed"`
	// Unit of Balance, Capacity and StopAt: "tokens" (gRPC), "retries"
	// (Envoy: retries that may start now; Finagle: retries the bucket
	// pays for), "" for an exported balance, whose unit the emitter knows.
	Unit string `json:"unit"`
	// Balance at the end of the window; Capacity what it is with no retry
	// in progress or paid (gRPC max_tokens, Envoy's allowance, Finagle's
	// reserve plus deposits); StopAt the balance at which retries stop
	// (gRPC: at or below max_tokens/2; Envoy: at or below 0; Finagle:
	// below one retry's withdrawal).
	Balance  model.Value `json:"balance"`
	Capacity model.Value `json:"capacity"`
	StopAt   model.Value `json:"stop_at"`
	// DrainPerS is the balance's net loss per second over the window
	// (negative: it fills); TimeToExhaustionS is (Balance - StopAt) /
	// DrainPerS, 0 when retries have already stopped, Absent when not
	// draining.
	DrainPerS         model.Value `json:"drain_per_s"`
	TimeToExhaustionS model.Value `json:"time_to_exhaustion_s"`
	// Timeline is the balance at the end of each bin of the timeline it
	// was computed from (dependencies[].timeline in analyze's JSON).
	Timeline []model.Value `json:"timeline"`
}

// BudgetModelFor picks the model whose budget a target's dialects implement
// (TargetDialects): gRPC's retryThrottling for the gRPC dialects, Envoy's
// retry budget for Envoy and Istio, Finagle's RetryBudget for Linkerd 1
// (Finagle-based). "" when none does: a budget is then never guessed.
func BudgetModelFor(dialects []string) string {
	for _, d := range dialects {
		switch d {
		case "grpc", "grpc-prometheus":
			return BudgetGRPC
		case "envoy", "istio":
			return BudgetEnvoy
		case "linkerd1":
			return BudgetFinagle
		}
	}
	return ""
}

// BudgetFor is a row's budget over window, with bins its timeline (bins
// ending at or before window's end): the exported balance when the row
// has one, else the reconstruction of the dialects' model with its
// defaults, else nil (nothing to say).
func BudgetFor(dialects []string, window model.Signals, bins []model.Signals) *Budget {
	if window.BudgetBalance.OK() {
		b := Budget{Model: BudgetExported, Balance: window.BudgetBalance, Timeline: make([]model.Value, len(bins))}
		for i := range bins {
			b.Timeline[i] = bins[i].BudgetBalance
		}
		return &b
	}
	var b Budget
	switch BudgetModelFor(dialects) {
	case BudgetGRPC:
		b = GRPCBudget(window, bins, GRPCMaxTokens, GRPCTokenRatio)
	case BudgetEnvoy:
		b = EnvoyBudget(window, bins, EnvoyBudgetPercent, EnvoyMinRetryConc)
	case BudgetFinagle:
		b = FinagleBudget(window, bins, FinagleTTLSeconds, FinagleMinRetriesPerS, FinaglePercentCanRetry)
	default:
		return nil
	}
	return &b
}

// GRPCBudget rebuilds gRPC's retryThrottling token count (GRPCTokens) at
// the end of the window; the drain is A6's own accounting at the window's
// rates: an attempt failed with a retryable status costs 1, a success adds
// ratio (no expiry).
//
// A6 starts the count full when the channel is created, which a recording
// seldom holds: the count before its first bin is unknown. It is rebuilt
// from both ends, empty and full, and known (else Absent) from the first
// bin where the two agree, the clamp at 0 or at maxTokens having erased
// the start.
func GRPCBudget(window model.Signals, bins []model.Signals, maxTokens, ratio float64) Budget {
	b := Budget{Model: BudgetGRPC, Reconstructed: true, Unit: "tokens",
		Capacity: model.Some(maxTokens), StopAt: model.Some(maxTokens / 2)}
	b.Timeline = GRPCTokens(bins, maxTokens, ratio)
	empty := grpcTokensFrom(bins, 0, maxTokens, ratio)
	for i := range b.Timeline {
		if !empty[i].OK() || math.Abs(b.Timeline[i].V()-empty[i].V()) > 1e-9 {
			b.Timeline[i] = model.Absent
		}
	}
	b.Balance = lastAtOrBefore(bins, b.Timeline, window.EndMs)
	if failed, ok, known := grpcCounted(&window); known {
		b.DrainPerS = model.Some(failed - ratio*ok)
	}
	// Full and filling: the cap holds it where it is.
	if d, ok := b.DrainPerS.Get(); ok && d < 0 && b.Balance.OK() && b.Balance.V() >= maxTokens {
		b.DrainPerS = model.Some(0)
	}
	b.TimeToExhaustionS = timeToExhaustion(b.Balance, b.StopAt, b.DrainPerS, true)
	return b
}

// EnvoyBudget rebuilds Envoy's retry-budget headroom per bin (envoy
// config.cluster.v3.CircuitBreakers.Thresholds.RetryBudget): retries may
// be in progress up to the allowance max(percent % of active + pending
// requests, minConcurrency), truncated to an integer as Envoy's uint64
// does; the headroom is the allowance less the retries in progress.
// Active is upstream_rq_active (retry_active_calls), pending
// upstream_rq_pending_active (retry_pending_calls). Without
// track_remaining Envoy exports no gauge of retries in progress (with it,
// the envoy dialect reads remaining_retries as the exported balance):
// they are the retries' share of the attempts in flight (Little's law,
// retries assumed as long as first tries; a retry waiting out its backoff
// holds the budget too and is not counted, so the headroom reads high).
// The drain is the headroom's slope from the window's first bin to its
// last.
func EnvoyBudget(window model.Signals, bins []model.Signals, percent, minConcurrency float64) Budget {
	b := Budget{Model: BudgetEnvoy, Reconstructed: true, Unit: "retries", StopAt: model.Some(0), Timeline: make([]model.Value, len(bins))}
	capacity := make([]model.Value, len(bins))
	for i := range bins {
		capacity[i], b.Timeline[i] = envoyHeadroom(&bins[i], percent, minConcurrency)
	}
	b.Capacity = lastAtOrBefore(bins, capacity, window.EndMs)
	b.Balance = lastAtOrBefore(bins, b.Timeline, window.EndMs)
	b.DrainPerS = slopeDrain(window, bins, b.Timeline)
	b.TimeToExhaustionS = timeToExhaustion(b.Balance, b.StopAt, b.DrainPerS, true)
	return b
}

func envoyHeadroom(s *model.Signals, percent, minConcurrency float64) (capacity, headroom model.Value) {
	active, ok1 := s.ActiveCalls.Get()
	pending, ok2 := s.QueueDepth.Get()
	if !ok1 || !ok2 {
		return model.Absent, model.Absent
	}
	allowance := math.Max(math.Floor(percent/100*(active+pending)), minConcurrency)
	att, ok1 := s.AttemptsPerS.Get()
	ret, ok2 := s.RetriesPerS.Get()
	if !ok1 || !ok2 {
		return model.Some(allowance), model.Absent
	}
	inProgress := 0.0
	if att > 0 {
		inProgress = active * min(ret/att, 1)
	}
	return model.Some(allowance), model.Some(max(allowance-inProgress, 0))
}

// FinagleBudget rebuilds Finagle's RetryBudget (TokenRetryBudget over a
// LeakyTokenBucket) in retries at the end of each bin: a reserve of
// minRetriesPerS x ttl retries, plus percent of the originals of the last
// ttl (each deposits one token, a retry withdraws 1/percent), less the
// retries of the last ttl. Rates are taken as even inside a bin. Finagle's
// window is ten slices, so its deposits live 9/10 to 10/10 of ttl; this
// keeps them ttl. A bin less than ttl after the timeline's start is Absent:
// what was deposited before it is unknown. The drain is the balance's
// slope from the window's first bin to its last.
func FinagleBudget(window model.Signals, bins []model.Signals, ttlSeconds, minRetriesPerS, percent float64) Budget {
	b := Budget{Model: BudgetFinagle, Reconstructed: true, Unit: "retries", StopAt: model.Some(1), Timeline: make([]model.Value, len(bins))}
	capacity := make([]model.Value, len(bins))
	ttlMs := int64(ttlSeconds * 1000)
	reserve := minRetriesPerS * ttlSeconds
	for i := range bins {
		from := bins[i].EndMs - ttlMs
		if from < bins[0].StartMs {
			continue
		}
		deposits, withdrawals, known := 0.0, 0.0, true
		for j := 0; j <= i; j++ {
			lo, hi := max(bins[j].StartMs, from), bins[j].EndMs
			if hi <= lo {
				continue
			}
			sec := float64(hi-lo) / 1000
			o, ok1 := bins[j].OriginalsPerS.Get()
			r, ok2 := bins[j].RetriesPerS.Get()
			if !ok1 || !ok2 {
				known = false
				break
			}
			deposits += o * sec
			withdrawals += r * sec
		}
		if !known {
			continue
		}
		c := reserve + percent*deposits
		capacity[i], b.Timeline[i] = model.Some(c), model.Some(c-withdrawals)
	}
	b.Capacity = lastAtOrBefore(bins, capacity, window.EndMs)
	b.Balance = lastAtOrBefore(bins, b.Timeline, window.EndMs)
	b.DrainPerS = slopeDrain(window, bins, b.Timeline)
	b.TimeToExhaustionS = timeToExhaustion(b.Balance, b.StopAt, b.DrainPerS, false)
	return b
}

// lastAtOrBefore is vals at the last bin ending at or before endMs (any
// bin when endMs is 0); Absent when that bin's value is.
func lastAtOrBefore(bins []model.Signals, vals []model.Value, endMs int64) model.Value {
	for i := len(bins) - 1; i >= 0; i-- {
		if endMs == 0 || bins[i].EndMs <= endMs {
			return vals[i]
		}
	}
	return model.Absent
}

// slopeDrain is the loss per second of vals from the last bin ending at
// or before the window's start (or the timeline's first bin) to the last
// bin ending at or before its end; Absent unless both are known and apart.
func slopeDrain(window model.Signals, bins []model.Signals, vals []model.Value) model.Value {
	last := -1
	for i := len(bins) - 1; i >= 0; i-- {
		if window.EndMs == 0 || bins[i].EndMs <= window.EndMs {
			last = i
			break
		}
	}
	if last < 0 || !vals[last].OK() {
		return model.Absent
	}
	first := -1
	for i := range last {
		if bins[i].EndMs <= window.StartMs {
			first = i // the bin ending at the window's start, where its increase starts
		}
	}
	if first < 0 && last > 0 {
		first = 0 // a window longer than the timeline: from its first bin
	}
	if first < 0 || !vals[first].OK() || bins[last].EndMs <= bins[first].EndMs {
		return model.Absent
	}
	return model.Some((vals[first].V() - vals[last].V()) / (float64(bins[last].EndMs-bins[first].EndMs) / 1000))
}

// timeToExhaustion is (balance - stopAt) / drain, 0 once retries have
// stopped (at or below stopAt when atOrBelow, else below it), Absent when
// an input is or the balance is not draining.
func timeToExhaustion(balance, stopAt, drain model.Value, atOrBelow bool) model.Value {
	if !balance.OK() || !stopAt.OK() {
		return model.Absent
	}
	if balance.V() < stopAt.V() || (atOrBelow && balance.V() == stopAt.V()) {
		return model.Some(0)
	}
	if !drain.OK() || drain.V() <= 0 {
		return model.Absent
	}
	return model.Some((balance.V() - stopAt.V()) / drain.V())
}
