package ui

import (
	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// Source is where the dashboard's data comes from: the collector's store
// and target health, and a channel that receives a value whenever either
// changed (collect.Scraper live; a replay source later). Updates may be
// closed when the source ends; a nil channel never fires.
type Source interface {
	Store() *model.Store
	Statuses() []model.TargetStatus
	Updates() <-chan struct{}
}

// buildFrame is the dashboard's one call into analysis. It runs inside a
// tea.Cmd, never in Update.
func buildFrame(src Source, req frameRequest) model.Frame {
	st := src.Store()
	if st == nil {
		return model.Frame{Window: req.Window, Bin: req.Bin, Targets: src.Statuses()}
	}
	return analysis.BuildFrame(st, src.Statuses(), analysis.FrameOptions{
		Window: req.Window,
		Bin:    req.Bin,
		EndMs:  req.EndMs,
		Bins:   req.Bins,
	})
}
