// Package whatif replays an incident under other retry policies: it fits a
// small model of the incident from a recording (Fit: open-loop arrivals
// per bin at the user-facing hop, the provider's slots and service time per
// bin, each hop's deadline and recorded policy) and runs it through a
// deterministic discrete-event model in virtual time (Run: one event
// queue, no goroutines, no sockets, no sleeping, fixed seeds), once per
// policy from package policy. The model follows the sim's provider (FIFO
// queue in front of execution slots, cancellation frees a queued request
// or its slot) and the retry owner's rules (retry/owner.go). docs/whatif.md
// describes the model, its assumptions and its measured fit.
package whatif
