//go:build !amd64

package model

// prefetch is a no-op where there is no prefetch of the amd64 kind.
func prefetch(p uintptr) {}
