package ui

import "github.com/retrytop/retrytop/internal/celltext"

// Sanitize makes untrusted text safe to print in a terminal cell
// (celltext.Sanitize).
func Sanitize(s string) string { return celltext.Sanitize(s) }
