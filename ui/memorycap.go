package ui

import (
	"fmt"

	"github.com/retrytop/retrytop/internal/celltext"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// memoryCapLines are the banner's lines for targets whose newest body
// was not parsed because parsing it needed more than --memory-limit
// leaves the scrapes: one target says its series and the bytes needed
// against the budget; more fold into one line that names them.
func memoryCapLines(targets []model.TargetStatus) []string {
	var names []string
	var first *model.TargetStatus
	for i := range targets {
		if targets[i].MemoryCap == nil {
			continue
		}
		if first == nil {
			first = &targets[i]
		}
		names = append(names, targets[i].Name)
	}
	switch len(names) {
	case 0:
		return nil
	case 1:
		return []string{safetext.Terminal(fmt.Sprintf("WARNING SERIES_CAP %s: %s; its signals are missing until it fits",
			first.Name, celltext.MemoryCapText(first.MemoryCap)))}
	}
	return []string{safetext.Terminal(fmt.Sprintf("WARNING SERIES_CAP %d targets' bodies refused by --memory-limit (%s): their signals are missing (retrytop analyze: targets[].series_cap)",
		len(names), someNames(names)))}
}

// capNotes are the info pane's notes on what a target's newest scrape
// could not keep for want of memory.
func capNotes(t *model.TargetStatus) []string {
	if t.MemoryCap == nil {
		return nil
	}
	return []string{"memory: " + celltext.MemoryCapText(t.MemoryCap)}
}
