package analysis

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytop/retrytop/model"
)

// Finding codes. docs/findings.md explains each one, its rule and its
// default thresholds.
const (
	CodeRetryAmplification  = "RETRY_AMPLIFICATION"
	CodeMultipleRetryLayers = "MULTIPLE_RETRY_LAYERS"
	// CodeHiddenRetries and CodeHopLoss are defined with the chains.
	CodeBudgetExhausted   = "BUDGET_EXHAUSTED"
	CodeAdmissionShedding = "ADMISSION_SHEDDING"
	CodePoolSaturation    = "POOL_SATURATION"
	CodeCapacityShortfall = "CAPACITY_SHORTFALL"
	CodeMisleadingLatency = "MISLEADING_LATENCY"
	CodeWorkAfterCancel   = "WORK_AFTER_CANCEL"
	CodeMetastable        = "METASTABLE"
	CodeNestedRetryOwners = "NESTED_RETRY_OWNERS"
	CodeDeadlineDropped   = "DEADLINE_NOT_PROPAGATED"
	// Target findings: a CI gate (analyze --fail-on) must fail when what
	// it was pointed at could not be read.
	CodeTargetDown     = "TARGET_DOWN"
	CodeNoRetrySignals = "NO_RETRY_SIGNALS"
)

// Severity ranks findings: info < warning < critical. Its JSON and text
// form is the lower-case name.
type Severity int

// Severities, in increasing order.
const (
	SeverityInfo Severity = iota + 1
	SeverityWarning
	SeverityCritical
)

var severityNames = map[Severity]string{
	SeverityInfo: "info", SeverityWarning: "warning", SeverityCritical: "critical",
}

func (s Severity) String() string {
	if n, ok := severityNames[s]; ok {
		return n
	}
	return "severity(" + strconv.Itoa(int(s)) + ")"
}

// ParseSeverity reads "info", "warning" or "critical" (any case).
func ParseSeverity(s string) (Severity, error) {
	for sev, n := range severityNames {
		if strings.EqualFold(s, n) {
			return sev, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (want info, warning or critical)", s)
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) {
	if _, ok := severityNames[s]; !ok {
		return nil, fmt.Errorf("invalid severity %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a severity's name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Number is one named evidence value.
type Number struct {
	Name  string
	Value float64
}

// Evidence is a finding's numbers in a fixed order (the most telling
// first). Values are always finite. In JSON it is an object whose keys keep
// that order.
type Evidence []Number

// Get returns the value named name.
func (e Evidence) Get(name string) (float64, bool) {
	for _, n := range e {
		if n.Name == name {
			return n.Value, true
		}
	}
	return 0, false
}

func (e *Evidence) add(name string, v float64) {
	if finite(v) {
		*e = append(*e, Number{Name: name, Value: v})
	}
}

func (e *Evidence) addValue(name string, v model.Value) {
	if v.OK() {
		e.add(name, v.V())
	}
}

// MarshalJSON writes an object with the numbers in order.
func (e Evidence) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, n := range e {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(n.Name)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(model.AppendJSONFloat(nil, n.Value))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an object, keeping the keys' order.
func (e *Evidence) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t == nil {
		*e = nil
		return nil
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("evidence: want an object")
	}
	out := Evidence{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		v, err := model.ParseJSONFloat(raw)
		if err != nil {
			return fmt.Errorf("evidence %v: %w", kt, err)
		}
		out = append(out, Number{Name: kt.(string), Value: v})
	}
	*e = out
	return nil
}

// Finding is one diagnosis: a stable code, a severity, the row (or chain)
// it is about, a one-line message and the numbers behind it.
type Finding struct {
	Code       string   `json:"code"`
	Severity   Severity `json:"severity"`
	Target     string   `json:"target"`
	Dependency string   `json:"dependency"`
	// Chain names the chain of a chain finding (MULTIPLE_RETRY_LAYERS);
	// Target is then its first hop's target and Dependency its last hop's
	// dependency.
	Chain    string   `json:"chain,omitempty"`
	Message  string   `json:"message"`
	Evidence Evidence `json:"evidence"`
	// Advice is what to do about it (AdviceFor's Long), in reports.
	Advice string `json:"advice,omitempty"`
	// Start and End are the data times the evidence covers: the row's
	// window, the bins a history finding held in, or a METASTABLE stretch.
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
}

// Thresholds configure the rules. Start from DefaultThresholds: a zero
// field is taken literally. docs/findings.md gives the reasoning behind
// every default.
type Thresholds struct {
	// MinOriginalsPerS is the traffic below which a row's ratios are noise
	// and the ratio rules (and phases) skip it.
	MinOriginalsPerS float64 `json:"min_originals_per_s"`
	// MinEventsPerS is the rate below which counted events (retries,
	// denials, rejections, work after cancel) are ignored.
	MinEventsPerS float64 `json:"min_events_per_s"`

	// Amplification is the attempts per admitted original above which
	// RETRY_AMPLIFICATION fires (with a stress signal); at or above
	// AmplificationCritical it is critical, and so is a hidden layer that
	// multiplies by that much.
	Amplification         float64 `json:"amplification"`
	AmplificationCritical float64 `json:"amplification_critical"`
	// FailureShare is the share of attempts failing (provider errors plus
	// timeouts) that counts as "errors rising".
	FailureShare float64 `json:"failure_share"`
	// A latency is rising when it is at least LatencyRise times its
	// baseline (the lowest in the row's timeline) and at least
	// LatencyRiseMin above it.
	LatencyRise    float64       `json:"latency_rise"`
	LatencyRiseMin time.Duration `json:"latency_rise_min"`

	// RetryingShare: a hop retries when its retries/s are at least
	// MinEventsPerS and at least this share of its originals.
	RetryingShare float64 `json:"retrying_share"`

	// Gap is the tolerance of HIDDEN_RETRIES and HOP_LOSS.
	Gap GapTolerance `json:"gap"`

	// BudgetBalanceLow is the balance (retries allowed) at or below which
	// the budget counts as empty; denials of at least BudgetDeniedShare of
	// the originals make BUDGET_EXHAUSTED a warning instead of info.
	BudgetBalanceLow  float64 `json:"budget_balance_low"`
	BudgetDeniedShare float64 `json:"budget_denied_share"`

	// PoolUtilisation is the share of the concurrency limit in use that
	// counts as "at the limit"; PoolWaitHigh the pool-wait p99 that is
	// high whatever the baseline.
	PoolUtilisation float64       `json:"pool_utilisation"`
	PoolWaitHigh    time.Duration `json:"pool_wait_high"`

	// CapacityCritical: CAPACITY_SHORTFALL is critical when the slots
	// needed are at least this multiple of the limit.
	CapacityCritical float64 `json:"capacity_critical"`

	// MisleadingRatio: MISLEADING_LATENCY fires when the mixed p99 is at
	// most this fraction of the success p99 and fast failures are at least
	// FastFailureShare of the operations.
	MisleadingRatio  float64 `json:"misleading_ratio"`
	FastFailureShare float64 `json:"fast_failure_share"`

	// TriggerRise: the trigger (the dependency's service time) is on in a
	// bin when its p50 is at least this multiple of its baseline and at
	// least LatencyRiseMin above it.
	TriggerRise float64 `json:"trigger_rise"`
	// GoodputLow and GoodputOverloaded are effective-success levels
	// (successes / originals): below the first a bin is degraded, below the
	// second overloaded.
	GoodputLow        float64 `json:"goodput_low"`
	GoodputOverloaded float64 `json:"goodput_overloaded"`
	// MetastableAfter is how long goodput must stay low and amplification
	// high after the trigger ended for METASTABLE.
	MetastableAfter time.Duration `json:"metastable_after"`

	// HistoryMinBins is how many timeline bins a finding must hold in for
	// EvaluateHistory to report it.
	HistoryMinBins int `json:"history_min_bins"`
	// GapWindow is the span of bins EvaluateHistory compares hops over.
	GapWindow time.Duration `json:"gap_window"`

	// WorkAfterCancelShare is the share of the requests the dependency
	// received that it must finish after the caller gave up for
	// WORK_AFTER_CANCEL (when it exports what it received).
	WorkAfterCancelShare float64 `json:"work_after_cancel_share"`
}

// DefaultThresholds are the documented defaults (docs/findings.md).
func DefaultThresholds() Thresholds {
	return Thresholds{
		MinOriginalsPerS:      1,
		MinEventsPerS:         0.1,
		Amplification:         1.2,
		AmplificationCritical: 2,
		FailureShare:          0.05,
		LatencyRise:           2,
		LatencyRiseMin:        5 * time.Millisecond,
		RetryingShare:         0.02,
		Gap:                   DefaultGapTolerance(),
		BudgetBalanceLow:      1,
		BudgetDeniedShare:     0.05,
		PoolUtilisation:       0.9,
		PoolWaitHigh:          50 * time.Millisecond,
		CapacityCritical:      2,
		MisleadingRatio:       0.5,
		FastFailureShare:      0.1,
		TriggerRise:           2,
		GoodputLow:            0.9,
		GoodputOverloaded:     0.5,
		MetastableAfter:       30 * time.Second,
		HistoryMinBins:        2,
		GapWindow:             30 * time.Second,
		WorkAfterCancelShare:  0.05,
	}
}

// baseline is a row's reference levels: the lowest value of each signal
// over its timeline.
type baseline struct {
	successP50, poolWaitP99, serviceP50 model.Value
}

func minValue(cur, v model.Value) model.Value {
	if v.OK() && finite(v.V()) && (!cur.OK() || v.V() < cur.V()) {
		return v
	}
	return cur
}

func baselineOf(tl []model.Signals) baseline {
	var b baseline
	for i := range tl {
		b.successP50 = minValue(b.successP50, successP50(&tl[i]))
		b.poolWaitP99 = minValue(b.poolWaitP99, tl[i].PoolWaitP99)
		b.serviceP50 = minValue(b.serviceP50, tl[i].DependencyServiceTimeP50)
	}
	return b
}

// rising reports whether v is at least factor times base and at least
// minAbs (seconds) above it.
func rising(v, base model.Value, factor, minAbs float64) bool {
	return v.OK() && base.OK() && v.V() >= factor*base.V() && v.V()-base.V() >= minAbs
}

// successP50 is the success class's median latency, or the mixed one when
// the classes are not split.
func successP50(s *model.Signals) model.Value {
	if q, ok := s.Latency.Get(model.ClassSuccess); ok && q.P50.OK() {
		return q.P50
	}
	return s.MixedLatency.P50
}

// Evaluate runs the rules over a frame: the row rules over its rows (the
// current window, with baselines from the rows' timelines), the chain
// rules over chains (see EvaluateChains; build them with th.Gap), and
// METASTABLE over the timelines. Findings are sorted by severity (most
// severe first), then code, target, dependency and chain.
func Evaluate(frame model.Frame, chains []ChainResult, th Thresholds) []Finding {
	keys := sortedKeys(frame.Timelines)
	bases := make(map[model.Key]baseline, len(keys))
	var tlf []Finding
	var buf []model.Signals
	for _, k := range keys {
		tl := frame.Timelines[k]
		buf = tl.AppendRangeNoHist(buf[:0], 0, tl.Len())
		bases[k] = baselineOf(buf)
		tlf = timelineRules(tlf, k, buf, th)
	}
	out := evaluateRows(frame.Rows, bases, th)
	out = append(out, evaluateChains(chains, chains, frame.Rows, th)...)
	out = append(out, tlf...)
	sortFindings(out)
	return out
}

// timelineRules appends the findings of row k's whole timeline tl:
// METASTABLE and the timeline rules.
func timelineRules(out []Finding, k model.Key, tl []model.Signals, th Thresholds) []Finding {
	if f, ok := metastable(k, tl, th); ok {
		out = append(out, f)
	}
	return append(out, timelineFindings(k, tl, th)...)
}

// EvaluateHistory runs the row and chain rules over every bin of the
// frame's timelines as if each were the current window (chains declared,
// or inferred from the timelines' rows when none are), then METASTABLE over
// the timelines. A finding seen in several bins is reported once, from the
// bin where it was most severe (then largest first evidence number, the
// earliest of bins whose numbers differ only by rounding), with
// Start and End spanning the bins it held in and the evidence "bins";
// findings that held in fewer than th.HistoryMinBins bins are dropped.
// It answers "what happened" over a dump or a whole session, where Evaluate
// answers "what is wrong now".
//
// Gaps compare counts of different targets, each read at the bins' edges
// on the line between its own scrapes: a change of rate inside a scrape
// interval is spread over the interval, so two targets' bins may disagree
// by part of a scrape interval's count at either edge. So the gap rules
// see, at each bin, the rates over the last th.GapWindow of bins (skipped
// until that many bins exist, and where a side lacks data in one of them),
// where that error is small.
func EvaluateHistory(frame model.Frame, chains []Chain, th Thresholds) []Finding {
	h := newHistoryBins(frame, chains, th)
	keys, n := h.keys, h.n
	type acc struct {
		best       Finding
		bins       int
		start, end time.Time
	}
	merged := make(map[string]*acc)
	var order []string
	// Each bin's findings are made on up to GOMAXPROCS goroutines (the
	// bins are independent: 720 rows x 360 bins on a long recording)
	// and merged below in bin order, as one pass made them, a chunk of
	// bins at a time: the findings waiting to be merged are a chunk's,
	// not the recording's (every row firing in every bin of a day is 720
	// x 8,640 findings).
	chunk := max(historyChunk, 16*runtime.GOMAXPROCS(0))
	perBin := make([][]Finding, min(n, chunk))
	for from := 0; from < n; from += chunk {
		m := min(chunk, n-from)
		parallelFor(m, 16, func() func(i int) {
			sc := h.scratch()
			return func(slot int) { perBin[slot] = h.findings(from+slot, sc) }
		})
		for k := range m {
			for _, f := range perBin[k] {
				id := findingID(f)
				a := merged[id]
				if a == nil {
					a = &acc{best: f, start: f.Start}
					merged[id] = a
					order = append(order, id)
				} else if f.Severity > a.best.Severity ||
					(f.Severity == a.best.Severity && beyondRounding(firstEvidence(f), firstEvidence(a.best))) {
					a.best = f
				}
				a.bins++
				a.end = f.End
			}
			perBin[k] = nil
		}
	}
	var out []Finding
	for _, id := range order {
		a := merged[id]
		if a.bins < th.HistoryMinBins {
			continue
		}
		f := a.best
		f.Evidence = append(slices.Clone(f.Evidence), Number{Name: "bins", Value: float64(a.bins)})
		f.Start, f.End = a.start, a.end
		out = append(out, f)
	}
	var buf []model.Signals
	for _, k := range keys {
		tl := frame.Timelines[k]
		buf = tl.AppendRangeNoHist(buf[:0], 0, tl.Len())
		out = timelineRules(out, k, buf, th)
	}
	sortFindings(out)
	return out
}

// historyBins evaluates the rules of one bin of a frame's timelines as
// if it were the current window (EvaluateHistory's step).
type historyBins struct {
	keys   []model.Key
	tls    []*model.Timeline
	bases  map[model.Key]baseline
	chains []Chain
	th     Thresholds
	span   int // bins of the gap window
	n      int // the longest timeline's bins
}

func newHistoryBins(frame model.Frame, chains []Chain, th Thresholds) *historyBins {
	h := &historyBins{keys: sortedKeys(frame.Timelines), th: th}
	h.bases = make(map[model.Key]baseline, len(h.keys))
	h.tls = make([]*model.Timeline, len(h.keys))
	var buf []model.Signals
	for j, k := range h.keys {
		h.tls[j] = frame.Timelines[k]
		buf = h.tls[j].AppendRangeNoHist(buf[:0], 0, h.tls[j].Len())
		h.bases[k] = baselineOf(buf)
		h.n = max(h.n, h.tls[j].Len())
	}
	if len(chains) == 0 {
		rows := make([]model.Signals, 0, len(h.keys))
		for _, k := range h.keys {
			rows = append(rows, model.Signals{Target: k.Target, Dependency: k.Dependency})
		}
		chains = InferChains(rows)
	}
	h.chains = chains
	h.span = gapSpan(frame.Bin, frame.Timelines, h.keys, th)
	return h
}

// binScratch is one goroutine's buffers for historyBins.findings: nothing
// of a bin's rows outlives it (findings and chain results copy what they
// keep), and growing them afresh in each bin was most of
// EvaluateHistory's time on a long recording.
type binScratch struct {
	rows, agg []model.Signals
	win       []model.Signals // a row's bins of the gap window and the one before
	edges     map[model.Key]edgeRates
	layers    []ChainResult
	gaps      []ChainResult
}

func (h *historyBins) scratch() *binScratch {
	return &binScratch{rows: make([]model.Signals, 0, len(h.keys)), agg: make([]model.Signals, 0, len(h.keys)),
		edges: make(map[model.Key]edgeRates, len(h.keys)), layers: make([]ChainResult, 0, len(h.chains))}
}

// findings are bin i's findings, the rows and chain rules over its rows
// and the gap rules over the gap window ending with it.
func (h *historyBins) findings(i int, sc *binScratch) []Finding {
	sc.rows, sc.agg, sc.layers, sc.gaps = sc.rows[:0], sc.agg[:0], sc.layers[:0], sc.gaps[:0]
	clear(sc.edges)
	for j, k := range h.keys {
		tl := h.tls[j]
		if i >= tl.Len() {
			continue
		}
		if i+1 < h.span {
			sc.rows = append(sc.rows, tl.At(i))
			continue
		}
		// The samples at the span's start edge are at or before its
		// first bin: the bin before counts too. Only bin i's rules read
		// its histograms.
		from := max(i-h.span, 0)
		sc.win = tl.AppendRangeNoHist(sc.win[:0], from, i)
		sc.win = tl.AppendRange(sc.win, i, i+1)
		sc.rows = append(sc.rows, sc.win[len(sc.win)-1])
		sc.agg = append(sc.agg, aggregate(sc.win[i+1-h.span-from:]))
		sc.edges[k] = peakRates(sc.win)
	}
	rowsIdx, aggIdx := indexRows(sc.rows), indexRows(sc.agg)
	for _, c := range h.chains {
		sc.layers = append(sc.layers, rowsIdx.evaluate(c, h.th.Gap, nil))
		if len(sc.agg) > 0 {
			sc.gaps = append(sc.gaps, aggIdx.evaluate(c, h.th.Gap, sc.edges))
		}
	}
	fs := evaluateRows(sc.rows, h.bases, h.th)
	fs = append(fs, evaluateChains(sc.layers, nil, sc.rows, h.th)...)
	return append(fs, evaluateChains(nil, sc.gaps, sc.agg, h.th)...)
}

// historyChunk is how many bins EvaluateHistory makes findings for
// before merging them (at least 16 per core).
const historyChunk = 256

// parallelFor calls a function of worker for every i in [0, n), each
// worker on a goroutine of its own (up to GOMAXPROCS, at least minEach
// calls each: fewer are not worth a goroutine) taking the next i not yet
// taken: worker is called once per goroutine, for the state its calls
// share.
func parallelFor(n, minEach int, worker func() func(i int)) {
	g := min(runtime.GOMAXPROCS(0), n/max(minEach, 1))
	if g <= 1 {
		f := worker()
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range g {
		f := worker()
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// gapSpan is how many bins make th.GapWindow (at least 1), from the
// frame's bin width, or, when the frame does not say it, the widest of a
// timeline's first two bins: a report's first bin runs from the first
// scrape to the first edge of its grid (reportGrid), so it may be as
// short as half a bin, and counted from it the span was up to twice as
// many bins as the window.
func gapSpan(bin time.Duration, tls map[model.Key]*model.Timeline, keys []model.Key, th Thresholds) int {
	w := bin.Milliseconds()
	for _, k := range keys {
		if w > 0 {
			break
		}
		for i := range min(2, tls[k].Len()) {
			start, end := tls[k].Edges(i)
			w = max(w, end-start)
		}
	}
	if w <= 0 {
		return 1
	}
	return max(1, int((th.GapWindow.Milliseconds()+w-1)/w))
}

// aggregate is the rates a chain's gaps use over consecutive bins: each
// rate's increase summed over the bins (rate x the time it is a mean
// over: rateSeconds, the part of the bin the scrapes cover) over their
// total time, so the mean over exactly the span from the first bin's
// covered start to the last bin's covered end (SampledFromMs, SampledToMs:
// the span sampleSkew takes each side's rate to be over); absent unless every bin
// has it, so that both sides of a gap cover the same time. Weighted by
// the bins' widths instead, bins sampled over unequal spans (a scrape
// interval that does not divide the bin) read a mean that was no count's
// across a step in the traffic.
func aggregate(bins []model.Signals) model.Signals {
	first, last := &bins[0], &bins[len(bins)-1]
	s := model.Signals{Target: first.Target, Dependency: first.Dependency, StartMs: first.StartMs, EndMs: last.EndMs,
		SampledFromMs: first.SampledFromMs, SampledToMs: last.SampledToMs}
	var width float64
	for i := range bins {
		width += rateSeconds(&bins[i])
	}
	sum := func(get func(*model.Signals) model.Value) model.Value {
		var total float64
		for i := range bins {
			v, ok := get(&bins[i]).Get()
			if !ok {
				return model.Absent
			}
			total += v * rateSeconds(&bins[i])
		}
		if width <= 0 {
			return model.Absent
		}
		return model.Some(total / width)
	}
	s.OriginalsPerS = sum(func(s *model.Signals) model.Value { return s.OriginalsPerS })
	s.AttemptsPerS = sum(func(s *model.Signals) model.Value { return s.AttemptsPerS })
	s.ActiveCallsChangePerS = sum(func(s *model.Signals) model.Value { return s.ActiveCallsChangePerS })
	s.RetriesPerS = sum(func(s *model.Signals) model.Value { return s.RetriesPerS })
	s.DependencyReceivedPerS = sum(func(s *model.Signals) model.Value { return s.DependencyReceivedPerS })
	s.CompletedPerS = sum(func(s *model.Signals) model.Value { return s.CompletedPerS })
	s.AdmittedPerS = sum(func(s *model.Signals) model.Value { return s.AdmittedPerS })
	s.OperationAttemptsPerS = sum(func(s *model.Signals) model.Value { return s.OperationAttemptsPerS })
	s.AdmissionRejectedPerS = sum(func(s *model.Signals) model.Value { return s.AdmissionRejectedPerS })
	s.SuccessesPerS = sum(func(s *model.Signals) model.Value { return s.SuccessesPerS })
	if c := sum(func(s *model.Signals) model.Value { return s.ResultsPerS[model.ResultCapacityRejected] }); c.OK() {
		s.ResultsPerS = map[string]model.Value{model.ResultCapacityRejected: c}
	}
	deriveRatios(&s)
	s.MaxAttempts = last.MaxAttempts
	return s
}

// peakRates are the highest attempts/s and arrivals/s over bins, the
// rates a gap's sample skew is multiplied by.
func peakRates(bins []model.Signals) edgeRates {
	var e edgeRates
	for i := range bins {
		if v, ok := bins[i].AttemptsPerS.Get(); ok && finite(v) {
			e.sent = max(e.sent, v)
		}
		if v, ok := arrivedAt(&bins[i]).Get(); ok && finite(v) {
			e.arrived = max(e.arrived, v)
		}
	}
	return e
}

// evidenceRounding is how far apart, relatively, two bins' evidence may
// be and still be the same number: a bin's rate is its interpolated
// increase over the time it covers, so bins of the same steady rate differ
// in their last digits when their edges cut scrape intervals differently
// (a partial bin of 4.249 s against a whole one of 5 s).
const evidenceRounding = 1e-9

// beyondRounding reports whether a exceeds b by more than rounding, so that
// the bin a finding quotes (and with it the rest of its evidence) does not
// turn on the last digit of its first number.
func beyondRounding(a, b float64) bool {
	return a-b > evidenceRounding*max(math.Abs(a), math.Abs(b))
}

func firstEvidence(f Finding) float64 {
	if len(f.Evidence) == 0 {
		return 0
	}
	return math.Abs(f.Evidence[0].Value)
}

func sortedKeys[V any](m map[model.Key]V) []model.Key {
	keys := make([]model.Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b model.Key) int {
		if c := cmp.Compare(a.Target, b.Target); c != 0 {
			return c
		}
		return cmp.Compare(a.Dependency, b.Dependency)
	})
	return keys
}

func sortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		if c := cmp.Compare(b.Severity, a.Severity); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Code, b.Code); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Target, b.Target); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Dependency, b.Dependency); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Chain, b.Chain); c != 0 {
			return c
		}
		return cmp.Compare(a.Message, b.Message)
	})
}

// evaluateRows runs the row rules over rows.
func evaluateRows(rows []model.Signals, bases map[model.Key]baseline, th Thresholds) []Finding {
	var out []Finding
	wac := make(map[string]Finding) // WORK_AFTER_CANCEL, one per dependency
	for i := range rows {
		s := &rows[i]
		b := bases[s.Key()]
		for _, rule := range rowRules {
			if f, ok := rule(s, b, th); ok {
				f.Target, f.Dependency = s.Target, s.Dependency
				f.Start, f.End = msTime(s.StartMs), msTime(s.EndMs)
				out = append(out, f)
			}
		}
		if f, ok := workAfterCancel(s, th); ok {
			f.Start, f.End = msTime(s.StartMs), msTime(s.EndMs)
			// Every caller of the dependency carries the same numbers:
			// report it once, on the caller that timed out most.
			if prev, seen := wac[s.Dependency]; !seen || timeoutsOf(f) > timeoutsOf(prev) {
				wac[s.Dependency] = f
			}
		}
	}
	for _, d := range sortedStrings(wac) {
		out = append(out, wac[d])
	}
	return out
}

// evaluateChains runs MULTIPLE_RETRY_LAYERS over layers and the gap rules
// over gaps, one finding per (code, target, dependency, chain), stamped
// with the span of rows' windows.
func evaluateChains(layers, gaps []ChainResult, rows []model.Signals, th Thresholds) []Finding {
	var start, end int64
	for i := range rows {
		if s := rows[i].StartMs; s != 0 && (start == 0 || s < start) {
			start = s
		}
		end = max(end, rows[i].EndMs)
	}
	var out []Finding
	seen := make(map[string]bool)
	add := func(fs []Finding) {
		for _, f := range fs {
			id := f.Code + "\x00" + f.Target + "\x00" + f.Dependency + "\x00" + f.Chain
			if !seen[id] {
				seen[id] = true
				f.Start, f.End = msTime(start), msTime(end)
				out = append(out, f)
			}
		}
	}
	for _, c := range layers {
		add(layerFindings(c, th))
	}
	for _, c := range gaps {
		add(gapFindings(c, th))
	}
	return out
}

func sortedStrings[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func timeoutsOf(f Finding) float64 {
	v, _ := f.Evidence.Get("caller_timeouts_per_s")
	return v
}

// msTime is a Unix millisecond as a time; 0 is the zero time.
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

type rowRule func(s *model.Signals, b baseline, th Thresholds) (Finding, bool)

var rowRules = []rowRule{
	retryAmplification,
	budgetExhausted,
	admissionShedding,
	poolSaturation,
	capacityShortfall,
	misleadingLatency,
	nestedRetryOwners,
	deadlineNotPropagated,
	unsafeRetries,
	emitterDataOff,
}

func hop(s *model.Signals) string { return s.Target + " -> " + s.Dependency }

// EvaluateTargets reports targets that say nothing: TARGET_DOWN for one
// whose newest scrape failed (critical when no scrape ever succeeded),
// NO_RETRY_SIGNALS (warning) for one that answers but exports neither a
// row of the contract nor a service shape (a forced dialect reading zero
// series, an exporter of something else). Without them a CI gate passes
// on a load test whose targets it never saw.
func EvaluateTargets(targets []model.TargetStatus, rows []model.Signals, services []model.ServiceSignals) []Finding {
	has := make(map[string]bool, len(rows)+len(services))
	for i := range rows {
		has[rows[i].Target] = true
	}
	for i := range services {
		has[services[i].Target] = true
	}
	var out []Finding
	for _, t := range targets {
		if strings.HasPrefix(t.Dialect, "prometheus-api") {
			continue // the Prometheus server a --prometheus report reads: a source, not a target
		}
		switch {
		case !t.Up:
			f := Finding{Code: CodeTargetDown, Severity: SeverityWarning, Target: t.Name}
			when := "its newest scrape failed"
			if t.LastSuccess.IsZero() {
				f.Severity, when = SeverityCritical, "no scrape succeeded"
			}
			f.Message = fmt.Sprintf("%s is down: %s (%s); its signals are missing from this report", t.Name, when, t.LastError)
			f.Evidence.add("failures", float64(t.Failures))
			f.Evidence.add("scrapes", float64(t.Scrapes))
			out = append(out, f)
		case !has[t.Name]:
			f := Finding{Code: CodeNoRetrySignals, Severity: SeverityWarning, Target: t.Name}
			dialect := t.Dialect
			if dialect == "" {
				dialect = "no dialect"
			}
			f.Message = fmt.Sprintf("%s answers (%d series, %s) but exports none of the retry or service families retrytop reads: check the URL, the dialect (docs/dialects.md) or write a custom mapping",
				t.Name, t.Series, dialect)
			f.Evidence.add("series", float64(t.Series))
			out = append(out, f)
		}
	}
	return out
}

// busy reports whether the row has enough originals for its ratios.
func busy(s *model.Signals, th Thresholds) bool {
	v, ok := s.OriginalsPerS.Get()
	return ok && v >= th.MinOriginalsPerS && v > 0
}

func retryAmplification(s *model.Signals, b baseline, th Thresholds) (Finding, bool) {
	amp, ok := s.Amplification.Get()
	if !ok || !busy(s, th) || amp <= th.Amplification {
		return Finding{}, false
	}
	// In a short bin the first attempts of operations that end in the next
	// one can show as amplification on a hop whose calls pile up; without
	// retries there is none.
	if r, ok := s.RetriesPerS.Get(); ok && r < th.MinEventsPerS {
		return Finding{}, false
	}
	failShare := model.Absent
	if att, ok := s.AttemptsPerS.Get(); ok && att > 0 && (s.ProviderErrorsPerS.OK() || s.TimeoutsPerS.OK()) {
		failShare = model.Some((s.ProviderErrorsPerS.Or(0) + s.TimeoutsPerS.Or(0)) / att)
	}
	failing := failShare.OK() && failShare.V() >= th.FailureShare
	lat := successP50(s)
	slower := rising(lat, b.successP50, th.LatencyRise, th.LatencyRiseMin.Seconds())
	if !failing && !slower {
		return Finding{}, false
	}
	f := Finding{Code: CodeRetryAmplification, Severity: SeverityWarning}
	if amp >= th.AmplificationCritical {
		f.Severity = SeverityCritical
	}
	var why []string
	if failing {
		why = append(why, fmt.Sprintf("%s of attempts fail (errors %s, timeouts %s)",
			pct(failShare.V()), perS(s.ProviderErrorsPerS.Or(0)), perS(s.TimeoutsPerS.Or(0))))
	}
	if slower {
		why = append(why, fmt.Sprintf("success p50 rose %s -> %s", secs(b.successP50.V()), secs(lat.V())))
	}
	f.Message = fmt.Sprintf("%s: %s attempts per admitted original (%s for %s started) while %s; the retries add load to a struggling provider",
		hop(s), x2(amp), perS(s.AttemptsPerS.V()), perS(s.OriginalsPerS.V()), strings.Join(why, " and "))
	f.Evidence.add("amplification", amp)
	f.Evidence.addValue("originals_per_s", s.OriginalsPerS)
	f.Evidence.addValue("attempts_per_s", s.AttemptsPerS)
	f.Evidence.addValue("provider_errors_per_s", s.ProviderErrorsPerS)
	f.Evidence.addValue("timeouts_per_s", s.TimeoutsPerS)
	f.Evidence.addValue("failure_share", failShare)
	f.Evidence.addValue("success_p50_s", lat)
	f.Evidence.addValue("baseline_success_p50_s", b.successP50)
	return f, true
}

// nestedRetryOwners fires when one owner's operations start inside
// another owner's attempts in the same process: two retry owners on one
// call path. Our library stops the multiplication (an owner's result is
// final), other code may not, and either way a deadline or budget is spent
// twice. Any nesting counts: it is a design fact, not a rate to wait for.
func nestedRetryOwners(s *model.Signals, _ baseline, th Thresholds) (Finding, bool) {
	n, ok := s.NestedPerS.Get()
	if !ok || n <= 0 || len(s.NestedIn) == 0 {
		return Finding{}, false
	}
	outer := make([]string, len(s.NestedIn))
	for i, b := range s.NestedIn {
		outer[i] = b.Key
	}
	f := Finding{Code: CodeNestedRetryOwners, Severity: SeverityWarning}
	f.Message = fmt.Sprintf("%s: the retry owner of %s runs inside attempts of %s (%s operations): two owners on one call path; keep one owner per call path and give the other MaxAttempts 1",
		s.Target, s.Dependency, strings.Join(outer, ", "), perS(n))
	f.Evidence.add("nested_operations_per_s", n)
	f.Evidence.addValue("max_attempts", s.MaxAttempts)
	f.Evidence.addValue("attempts_per_s", s.AttemptsPerS)
	return f, true
}

// deadlineNotPropagated fires when the dependency, which reads propagated
// deadlines (it exports retry_server_requests_total), receives most of its
// requests without one: it keeps working on requests its callers have
// given up on, the seed's "work for nobody". Reported on every row that
// calls such a dependency: any of them may be the one that drops it.
func deadlineNotPropagated(s *model.Signals, _ baseline, th Thresholds) (Finding, bool) {
	missing, ok1 := s.DependencyDeadlineMissingPerS.Get()
	prop, ok2 := s.DependencyDeadlinePropagatedPerS.Get()
	if !ok1 || !ok2 || missing < th.MinEventsPerS || missing+prop <= 0 {
		return Finding{}, false
	}
	share := missing / (missing + prop)
	if share < 0.5 {
		return Finding{}, false
	}
	f := Finding{Code: CodeDeadlineDropped, Severity: SeverityInfo}
	f.Message = fmt.Sprintf("%s: %s of the requests arriving at %s carry no deadline (%s): it works on after its callers gave up; send the remaining time along (retry.WithDeadlinePropagation, grpc-timeout)",
		hop(s), pct(share), s.Dependency, perS(missing))
	f.Evidence.add("deadline_missing_per_s", missing)
	f.Evidence.add("deadline_propagated_per_s", prop)
	f.Evidence.add("share_missing", share)
	return f, true
}

func budgetExhausted(s *model.Signals, _ baseline, th Thresholds) (Finding, bool) {
	denied, ok := s.BudgetDeniedPerS.Get()
	if !ok || denied < th.MinEventsPerS || denied <= 0 {
		return Finding{}, false
	}
	if bal, ok := s.BudgetBalance.Get(); ok && bal > th.BudgetBalanceLow {
		return Finding{}, false
	}
	share := model.Absent
	if o, ok := s.OriginalsPerS.Get(); ok && o > 0 {
		share = model.Some(denied / o)
	}
	f := Finding{Code: CodeBudgetExhausted, Severity: SeverityInfo}
	if share.OK() && share.V() >= th.BudgetDeniedShare {
		f.Severity = SeverityWarning
	}
	bal := "no balance exported"
	if s.BudgetBalance.OK() {
		bal = "balance " + num(s.BudgetBalance.V())
	}
	shareText := ""
	if share.OK() {
		shareText = fmt.Sprintf(", %s of originals", pct(share.V()))
	}
	f.Message = fmt.Sprintf("%s: retry budget empty (%s): %s retries denied%s; those operations fail as budget_exhausted instead of adding load",
		hop(s), bal, perS(denied), shareText)
	f.Evidence.add("budget_denied_per_s", denied)
	f.Evidence.addValue("budget_balance", s.BudgetBalance)
	f.Evidence.addValue("denied_share", share)
	f.Evidence.addValue("budget_exhausted_per_s", s.ResultsPerS[model.ResultBudgetExhausted])
	f.Evidence.addValue("originals_per_s", s.OriginalsPerS)
	return f, true
}

func admissionShedding(s *model.Signals, _ baseline, th Thresholds) (Finding, bool) {
	rej, ok := s.AdmissionRejectedPerS.Get()
	if !ok || rej < th.MinEventsPerS || rej <= 0 {
		return Finding{}, false
	}
	share := model.Absent
	if o, ok := s.OriginalsPerS.Get(); ok && o > 0 {
		shed := rej
		if v, ok := s.ResultsPerS[model.ResultCapacityRejected].Get(); ok {
			shed = v
		}
		share = model.Some(shed / o)
	}
	byPrio := make(map[string]float64)
	for _, b := range s.AdmissionRejectedBy {
		p := b.Labels.Get(model.LabelPriority)
		if p == "" {
			if _, after, ok := strings.Cut(b.Key, "/"); ok {
				p = after
			}
		}
		if p == "" {
			p = "unknown"
		}
		byPrio[p] += b.PerS
	}
	prios := sortedStrings(byPrio)
	slices.SortStableFunc(prios, func(a, b string) int { return cmp.Compare(byPrio[b], byPrio[a]) })
	var parts []string
	for _, p := range prios {
		if byPrio[p] > 0 {
			parts = append(parts, p+" "+perS(byPrio[p]))
		}
	}
	f := Finding{Code: CodeAdmissionShedding, Severity: SeverityInfo}
	shareText := perS(rej) + " rejected"
	if share.OK() {
		shareText = fmt.Sprintf("%s of originals (%s rejected)", pct(share.V()), perS(rej))
	}
	shed := ""
	if len(parts) > 0 {
		shed = "; shed: " + strings.Join(parts, ", ")
	}
	f.Message = fmt.Sprintf("%s: admission control refused %s%s; protection working, not provider errors",
		hop(s), shareText, shed)
	f.Evidence.add("admission_rejected_per_s", rej)
	f.Evidence.addValue("share_of_originals", share)
	f.Evidence.addValue("capacity_rejected_per_s", s.ResultsPerS[model.ResultCapacityRejected])
	for _, p := range sortedStrings(byPrio) {
		f.Evidence.add("rejected_per_s."+p, byPrio[p])
	}
	return f, true
}

func poolSaturation(s *model.Signals, b baseline, th Thresholds) (Finding, bool) {
	active, ok1 := s.ActiveCalls.Get()
	limit, ok2 := s.ConcurrencyLimit.Get()
	wait, ok3 := s.PoolWaitP99.Get()
	if !ok1 || !ok2 || !ok3 || limit <= 0 || active < th.PoolUtilisation*limit {
		return Finding{}, false
	}
	high := wait >= th.PoolWaitHigh.Seconds()
	up := rising(s.PoolWaitP99, b.poolWaitP99, th.LatencyRise, th.LatencyRiseMin.Seconds())
	if !high && !up {
		return Finding{}, false
	}
	f := Finding{Code: CodePoolSaturation, Severity: SeverityWarning}
	was := ""
	if b.poolWaitP99.OK() {
		was = " (baseline " + secs(b.poolWaitP99.V()) + ")"
	}
	f.Message = fmt.Sprintf("%s: %s of %s slots busy and pool wait p99 %s%s: the pool is the bottleneck, whatever the CPU says",
		hop(s), num(active), num(limit), secs(wait), was)
	f.Evidence.add("active_calls", active)
	f.Evidence.add("concurrency_limit", limit)
	f.Evidence.add("utilisation", active/limit)
	f.Evidence.add("pool_wait_p99_s", wait)
	f.Evidence.addValue("baseline_pool_wait_p99_s", b.poolWaitP99)
	return f, true
}

func capacityShortfall(s *model.Signals, _ baseline, th Thresholds) (Finding, bool) {
	limit, ok := s.ConcurrencyLimit.Get()
	att, ok2 := s.AttemptsPerS.Get()
	if !ok || !ok2 || limit <= 0 {
		return Finding{}, false
	}
	rej := s.AdmissionRejectedPerS.Or(0)
	arrival := att + rej
	if arrival < th.MinEventsPerS {
		return Finding{}, false
	}
	lat, how := model.Absent, "mean"
	if h, ok := s.LatencyHist.Get(model.ClassSuccess); ok && h.Count > 0 && h.Sum > 0 {
		lat = model.Some(h.Sum / h.Count)
	} else if q, ok := s.Latency.Get(model.ClassSuccess); ok && q.P50.OK() {
		lat, how = q.P50, "p50"
	}
	if !lat.OK() || lat.V() <= 0 {
		return Finding{}, false
	}
	needed := arrival * lat.V()
	if needed <= limit {
		return Finding{}, false
	}
	f := Finding{Code: CodeCapacityShortfall, Severity: SeverityWarning}
	if needed >= th.CapacityCritical*limit {
		f.Severity = SeverityCritical
	}
	f.Message = fmt.Sprintf("%s: needs %s slots, has %s (Little's law: %s arriving x %s %s success latency); the excess waits or is shed",
		hop(s), num(math.Ceil(needed)), num(limit), perS(arrival), secs(lat.V()), how)
	f.Evidence.add("needed_slots", needed)
	f.Evidence.add("concurrency_limit", limit)
	f.Evidence.add("arrival_per_s", arrival)
	f.Evidence.add("attempts_per_s", att)
	f.Evidence.addValue("admission_rejected_per_s", s.AdmissionRejectedPerS)
	f.Evidence.add("latency_s", lat.V())
	return f, true
}

func misleadingLatency(s *model.Signals, _ baseline, th Thresholds) (Finding, bool) {
	mixed, ok1 := s.MixedLatency.P99.Get()
	succ, ok2 := s.Latency.At(model.ClassSuccess).P99.Get()
	if !ok1 || !ok2 || succ <= 0 || !busy(s, th) || mixed > th.MisleadingRatio*succ {
		return Finding{}, false
	}
	var total float64
	for _, e := range s.LatencyHist {
		total += e.V.Count
	}
	fast := s.LatencyHist.At(model.ClassFastFailure).Count
	if total <= 0 || fast/total < th.FastFailureShare {
		return Finding{}, false
	}
	f := Finding{Code: CodeMisleadingLatency, Severity: SeverityWarning}
	f.Message = fmt.Sprintf("%s: mixed p99 %s looks fine but success p99 is %s: %s of operations are fast failures pulling it down",
		hop(s), secs(mixed), secs(succ), pct(fast/total))
	f.Evidence.add("mixed_p99_s", mixed)
	f.Evidence.add("success_p99_s", succ)
	f.Evidence.add("ratio", mixed/succ)
	f.Evidence.add("fast_failure_share", fast/total)
	f.Evidence.addValue("fast_failure_p99_s", s.Latency.At(model.ClassFastFailure).P99)
	return f, true
}

func workAfterCancel(s *model.Signals, th Thresholds) (Finding, bool) {
	w, ok := s.DependencyWorkAfterCancelPerS.Get()
	if !ok || w < th.MinEventsPerS || w <= 0 {
		return Finding{}, false
	}
	f := Finding{Code: CodeWorkAfterCancel, Severity: SeverityWarning, Target: s.Target, Dependency: s.Dependency}
	share := model.Absent
	if r, ok := s.DependencyReceivedPerS.Get(); ok && r > 0 {
		share = model.Some(w / r)
	}
	if share.OK() && share.V() < th.WorkAfterCancelShare {
		return Finding{}, false
	}
	shareText := ""
	if share.OK() {
		shareText = fmt.Sprintf(" (%s of what it received)", pct(share.V()))
	}
	f.Message = fmt.Sprintf("%s: %s still finishes %s of requests its callers gave up on%s; a local timeout frees the caller, not the provider",
		hop(s), s.Dependency, perS(w), shareText)
	f.Evidence.add("work_after_cancel_per_s", w)
	f.Evidence.addValue("dependency_received_per_s", s.DependencyReceivedPerS)
	f.Evidence.addValue("share_of_received", share)
	f.Evidence.addValue("caller_timeouts_per_s", s.TimeoutsPerS)
	return f, true
}

// retrying reports whether a hop retried in the window.
func retrying(h HopResult, th Thresholds) (float64, bool) {
	o, ok := h.OriginalsPerS.Get()
	if !ok || o <= 0 {
		return 0, false
	}
	r, ok := h.RetriesPerS.Get()
	if !ok {
		a, aok := h.AttemptsPerS.Get()
		if !aok {
			return 0, false
		}
		r = math.Max(a-o, 0)
	}
	return r, r >= th.MinEventsPerS && r >= th.RetryingShare*o && r > 0
}

// layerFindings is MULTIPLE_RETRY_LAYERS for the chain.
func layerFindings(c ChainResult, th Thresholds) []Finding {
	var out []Finding
	if len(c.Hops) >= 2 {
		var observed, configured []string
		var ev Evidence
		for _, h := range c.Hops {
			if r, ok := retrying(h, th); ok {
				observed = append(observed, h.Target)
				ev.add("retries_per_s."+h.Target, r)
			}
			if m, ok := h.MaxAttempts.Get(); ok && m > 1 {
				configured = append(configured, h.Target)
			}
		}
		if len(observed) >= 2 || len(configured) >= 2 {
			f := Finding{
				Code: CodeMultipleRetryLayers, Severity: SeverityWarning, Chain: c.Name,
				Target: c.Hops[0].Target, Dependency: c.Hops[len(c.Hops)-1].Dependency,
			}
			worst := ""
			if c.WorstCaseAmplification.OK() {
				worst = fmt.Sprintf("; worst case %s attempts per user action", num(c.WorstCaseAmplification.V()))
			}
			if len(observed) >= 2 {
				f.Message = fmt.Sprintf("%s: %d layers retry (%s), their attempts multiply%s; pick one retry owner",
					c.Name, len(observed), strings.Join(observed, ", "), worst)
			} else {
				f.Severity = SeverityInfo
				f.Message = fmt.Sprintf("%s: %d layers are configured to retry (%s), not retrying now%s; pick one retry owner",
					c.Name, len(configured), strings.Join(configured, ", "), worst)
			}
			f.Evidence.add("retrying_hops", float64(len(observed)))
			f.Evidence.add("configured_retry_hops", float64(len(configured)))
			f.Evidence.addValue("end_to_end_amplification", c.EndToEndAmplification)
			f.Evidence.addValue("product_amplification", c.ProductAmplification)
			f.Evidence.addValue("worst_case_amplification", c.WorstCaseAmplification)
			f.Evidence = append(f.Evidence, ev...)
			out = append(out, f)
		}
	}
	return out
}

// gapFindings are HIDDEN_RETRIES or HOP_LOSS for each of the chain's gaps
// beyond th.Gap.
func gapFindings(c ChainResult, th Thresholds) []Finding {
	var out []Finding
	for _, g := range c.Gaps {
		// th.Gap again (the chains may have been evaluated with another
		// tolerance), plus what the sampling moments explain.
		tol := g.allowed(th.Gap)
		if math.Abs(g.GapPerS) <= tol {
			continue
		}
		f := Finding{Code: g.Code, Severity: SeverityWarning, Target: g.From.Target, Dependency: g.From.Dependency}
		if g.Code == CodeHiddenRetries {
			if g.Factor.OK() && g.Factor.V() >= th.AmplificationCritical {
				f.Severity = SeverityCritical
			}
			factor := ""
			if g.Factor.OK() {
				factor = " (x" + x2(g.Factor.V()) + ")"
			}
			f.Message = fmt.Sprintf("%s -> %s: %s received %s but its visible callers sent %s: something in between adds %s%s, a hidden retry layer (SDK, proxy, sidecar)",
				g.From.Target, g.To, g.To, perS(g.ArrivedPerS), perS(g.SentPerS), perS(g.GapPerS), factor)
		} else {
			rel := ""
			if g.Relative.OK() {
				rel = " (" + pct(-g.Relative.V()) + ")"
			}
			f.Message = fmt.Sprintf("%s -> %s: its callers sent %s but %s received %s: %s%s lost, shed in between or not counted",
				g.From.Target, g.To, perS(g.SentPerS), g.To, perS(g.ArrivedPerS), perS(-g.GapPerS), rel)
		}
		f.Evidence.add("gap_per_s", g.GapPerS)
		f.Evidence.add("sent_per_s", g.SentPerS)
		f.Evidence.add("arrived_per_s", g.ArrivedPerS)
		f.Evidence.addValue("relative", g.Relative)
		f.Evidence.addValue("factor", g.Factor)
		f.Evidence.add("tolerance_per_s", tol)
		f.Evidence.addValue("sample_skew_per_s", g.SkewPerS)
		if v, ok := g.InFlightPerS.Get(); ok && v > 0 {
			f.Evidence.add("in_flight_per_s", v) // the allowance it made
		}
		f.Evidence.addValue("active_change_per_s", g.ActiveChangePerS)
		out = append(out, f)
	}
	return out
}

// Number formatting for messages.

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func perS(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "/s" }

func x2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 0, 64) + "%" }

// secs formats seconds as a duration rounded to 3 significant digits.
func secs(v float64) string {
	if !finite(v) {
		return "-"
	}
	d := time.Duration(v * float64(time.Second))
	switch {
	case d >= 10*time.Second:
		d = d.Round(100 * time.Millisecond)
	case d >= time.Second:
		d = d.Round(10 * time.Millisecond)
	case d >= 100*time.Millisecond:
		d = d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		d = d.Round(100 * time.Microsecond)
	default:
		d = d.Round(10 * time.Microsecond)
	}
	return d.String()
}
