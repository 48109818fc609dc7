package testpeer

import (
	"net"
	"strconv"
	"testing"
)

// FreePortRun finds n consecutive free loopback ports and returns the
// first, for a peer that must be told where its targets will listen before
// they do (a Prometheus configured ahead of the sim it scrapes). Another
// process may take one between this check and the caller's listen; the
// caller's listen then fails loudly. Skips the test when no run is found.
func FreePortRun(tb testing.TB, n int) int {
	tb.Helper()
	for try := 0; try < 20; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if base+n > 65535 {
			continue
		}
		ok := true
		for i := 0; i < n && ok; i++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				ok = false
				continue
			}
			_ = l.Close()
		}
		if ok {
			return base
		}
	}
	tb.Skip("no run of free loopback ports")
	return 0
}
