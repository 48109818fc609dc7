package ui

import (
	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/celltext"
)

// chainLine and gaveUpText are celltext's: the chains pane and analyze's
// chains (package report) read alike.
func chainLine(c analysis.ChainResult) string { return celltext.ChainLine(c) }

func gaveUpText(p *analysis.ChainProvider) string { return celltext.GaveUpText(p) }
