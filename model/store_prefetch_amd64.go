package model

// prefetch asks for the cache line at p without waiting for it (PREFETCHT0):
// Append's loop names the series it will check a few positions on, whose
// first line it otherwise waited for (issue 19). p is never dereferenced
// by Go code, so any address is safe.
//
//go:noescape
func prefetch(p uintptr)
