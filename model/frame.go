package model

import "time"

// TargetStatus is the health of one scrape target as the collector sees it.
type TargetStatus struct {
	Name  string `json:"name"`
	URL   string `json:"url"` // credentials already removed
	Layer string `json:"layer,omitempty"`
	// Dialect names the dialect(s) the target is read with, detected from
	// its exposition or forced with name=URL@dialect ("native", "envoy",
	// "native+pools"; "" before the first successful scrape or when no
	// dialect applies).
	Dialect string `json:"dialect,omitempty"`
	// Dialects is Dialect as a list (analysis.TargetDialects fills it in
	// reports): every dialect that reads the target, [] when none does.
	Dialects []string `json:"dialects"`
	// DialectsSetAside lists the dialects that detected the target but do
	// not read it, each with the reason: a custom mapping that reads the
	// same families replaces a built-in dialect (dialect.Translator's
	// SetAside). Omitted when none was.
	DialectsSetAside []string `json:"dialects_set_aside,omitempty"`
	// Backend names the server a Prometheus API source reads and its
	// version ("victoriametrics 1.79.5", "prometheus 2.53.0"), in that
	// server's own status; "" for scraped targets and before it is known.
	Backend string `json:"backend,omitempty"`
	// Service is the service the target belongs to and NameSource how
	// that is known ("user", "target_info", "job", "address"); filled by
	// analysis.ServiceFrame, empty before.
	Service    string `json:"service,omitempty"`
	NameSource string `json:"name_source,omitempty"`
	Up         bool   `json:"up"`
	// LastError is the newest scrape error, sanitised for display ("" when
	// the newest scrape succeeded).
	LastError      string        `json:"last_error,omitempty"`
	LastScrape     time.Time     `json:"last_scrape"`
	LastSuccess    time.Time     `json:"last_success"`
	ScrapeDuration time.Duration `json:"scrape_duration_ns"`
	Series         int           `json:"series"`
	DroppedSeries  int           `json:"dropped_series,omitempty"`
	// SeriesCap says which of the store's caps refused DroppedSeries and
	// what the store holds, for the target and in total (nil when nothing
	// was refused, or the source does not say).
	SeriesCap *SeriesCap `json:"series_cap,omitempty"`
	// MemoryCap says what the newest scrape refused to parse for want of
	// memory (nil when it refused nothing); JSON writes it inside
	// series_cap (status_json.go).
	MemoryCap *MemoryCap `json:"-"`
	Scrapes   int        `json:"scrapes"`
	Failures  int        `json:"failures"`
	// Late counts the scrapes not started because the target's previous
	// one was still running (a slow body, a parse, a wait for memory) or
	// still waiting for a worker at its next tick: a target's scrapes
	// never overlap.
	Late int `json:"late_scrapes,omitempty"`
}

// Frame is everything a view shows at one moment: target health, the
// signals of every row over the rate window, and per-row timelines of
// consecutive bins (oldest first) ending at Time.
type Frame struct {
	Time      time.Time // data time: the newest scrape the frame covers
	Window    time.Duration
	Bin       time.Duration
	Targets   []TargetStatus
	Rows      []Signals
	Timelines map[Key]*Timeline
	// FinalMs says, per row, up to when its timeline is final: every
	// target the row reads had scraped at or past that time when the frame
	// was built, so no later scrape can change a bin ending there or
	// earlier. A later frame may reuse those bins (analysis.FrameOptions.Prev).
	FinalMs map[Key]int64 `json:"-"`
}
