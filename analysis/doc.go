// Package analysis turns stored series into retry signals: counter increases
// and rates, classic-histogram quantiles, the signals of every (target,
// dependency) over a window, per-row timelines, and the Frame a view shows.
//
// Everything here is a pure function of its inputs. It does no I/O, never
// reads a clock (time is data: Unix milliseconds and the store's scrape
// times) and imports only model and the standard library.
//
// # Counters
//
// Increase and Rate use the samples inside [start, end], both ends
// included: windows are aligned on scrape times, not on the nominal edges.
//
//   - Resets: a sample lower than the one before it means the process
//     restarted; the value after the reset counts in full (Prometheus'
//     rule, computed as last - first + the value before each reset).
//   - No extrapolation: unlike Prometheus' rate/increase, which stretch the
//     observed increase towards the window's edges, the increase is exactly
//     the sum of sample-to-sample increases between the first and the last
//     sample, and Rate divides it by the time between those two samples.
//     That is what a ground truth counted between two scrapes compares to.
//   - Fewer than two samples in the window is "not enough data": ok is
//     false and the signal is Absent, never a made-up zero.
//   - Gaps (scrapes where the series was absent, i.e. stale) are skipped; a
//     series that comes back is compared with its last sample before the
//     gap, so a restart during an outage is still a reset. As in Prometheus,
//     a counter that restarted and grew past its old value unseen is taken
//     for plain growth.
//   - A series created inside the window counts from 0: the store gives a
//     counter series that appears on a target already being scraped a 0 at
//     the scrape before (client libraries create labelled counters lazily
//     at their first increment), unless the target restarted or the sample
//     is marked Baseline; then, as in Prometheus, its first value is the
//     baseline and is not counted.
//
// # Signals
//
// SignalsFor evaluates the contract families of model/signals.go for one
// (target, dependency) over [start, end]:
//
//   - A per-second signal is the sum over the family's series (priorities,
//     outcomes, ...) of each series' increase in the window, divided by the
//     time between the target's first and last scrape in the window. For
//     series present throughout, that is sum(rate(...)); a series present
//     for part of the window contributes what it counted, spread over the
//     whole window.
//   - A family with no series, or whose series all have fewer than two
//     samples in the window, is Absent. When the family has data, a label
//     value with no series is a present zero: no timeouts were counted, say.
//   - Attempts are split by outcome. Provider errors are the errors the
//     provider answered with: outcome temporary_error plus permanent_error.
//     Timeouts (outcome timeout) are reported apart and are not provider
//     errors; admission rejections never reached the provider and are
//     neither attempts nor provider errors.
//   - Results are listed by result; when the family has data, every result
//     of the contract is present (zero if never counted).
//     SuccessesPerS and DeadlineExhaustedPerS are its success and
//     deadline_exhausted entries. AdmissionRejectedBy lists the (reason,
//     priority) pairs with data, keyed "reason/priority", sorted by key.
//   - Ratios are Absent when either side is Absent or the denominator is 0:
//     amplification = attempts/originals (so 0 originals gives no
//     amplification, even with retries of older originals still running),
//     effective success = results{success}/originals, attempt success =
//     attempts{success}/attempts. They are not clamped: results lag
//     originals by the operations' latency, so effective success can
//     briefly exceed 1 when traffic falls.
//   - Gauges are read at the target's newest scrape in the window; a series
//     absent from that scrape is stale and not counted (a concurrency limit
//     that disappeared means unlimited: Absent, never its old value). One
//     scrape is enough data for a gauge. Active calls, concurrency limit
//     and budget balance are summed over label sets; policy max attempts
//     and deadline take the largest.
//   - Histograms: the window's histogram is each bucket series' increase,
//     summed by le over label sets (PromQL's sum by (le)). Pool wait and
//     backoff are over all label sets of the dependency; latency is per
//     result_class (Latency, LatencyHist), and MixedLatency is all classes
//     summed by le. A class without observations has Absent quantiles.
//   - Series without a dependency label belong to no row; Dependencies lists
//     the dependency values seen in any contract family within the store's
//     retained history.
//
// # Histogram quantiles
//
// HistogramQuantile follows PromQL's histogram_quantile for classic
// histograms exactly: linear interpolation inside the bucket, a lower bound
// of 0 for the first bucket when its upper bound is positive (and that
// bound itself when it is <= 0), the second-highest bound for a rank in the
// +Inf bucket, equal bounds added together, float noise (relative 1e-12)
// and decreasing counts raised to the running maximum, -Inf for q < 0 and
// +Inf for q > 1. Where PromQL returns NaN (no +Inf bucket, fewer than two
// bounds, zero observations, NaN q, 0/0 in the first bucket at q = 0) the
// result is absent; so is a negative or NaN total, which PromQL would turn
// into an arbitrary bound.
//
// # Timelines
//
// Timeline bins are consecutive, [start+i*bin, start+(i+1)*bin], the last
// one cut at end. A bin holds every increase inside it: a counter's value at
// a bin edge is read on the line between its samples around the edge, and a
// bin's rate is its increase over the part of it between the target's
// first and last scrapes (its width inside the recording). Each
// sample-to-sample increase is shared among the bins it spans, so the sum
// over bins of rate x covered time equals the increase over the whole
// range, the partial first and last bins included, whatever the scrape
// jitter or interval; across a target outage the bins read the mean rate
// over it. (The rows' windows instead use only the samples inside them;
// with scrapes on the range's edges the two agree exactly.) Gauges are read
// at the newest scrape inside each bin.
//
// # Server side, chains, findings and phases
//
// When a row's dependency is itself a target exporting the server-side
// families (model.MetricServer*, without a dependency label), the row also
// carries that target's received requests, service-time p50 and work after
// cancel over the same window or bin (Signals.Dependency*).
//
// InferChains links rows into call paths, EvaluateChain computes per-hop
// and end-to-end amplification and the gaps between hops, Evaluate and
// EvaluateHistory run the finding rules, and Phases tells a row's timeline
// as an incident story. Recovery says when goodput came back after the
// trigger, read inside a bin; IncidentSpan picks the span a recording's
// report covers (the incident, or the whole recording); Detect says when
// the rules would have shown the incident live. docs/findings.md documents
// every rule, its thresholds and the phase classification.
//
// # Frames and cost
//
// BuildFrame copies each target's contract series out of the store once
// (one Select per family) and evaluates every row's window and bins on
// those copies. A series without gaps is indexed against the target's
// scrape times, so a window finds its samples without searching them.
package analysis
