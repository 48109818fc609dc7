package testpeer

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// FreePortRun finds n consecutive free loopback ports and returns the
// first, for a peer that must be told where its targets will listen before
// they do (a Prometheus configured ahead of the sim it scrapes).
//
// The run is taken below the kernel's ephemeral range: every outgoing
// connection on the machine (a scrape, a test's client) is given a local
// port from that range, and one that lands on a chosen port between this
// check and the caller's listen makes the listen fail (seen beside other
// tests: "bind: address already in use"). Below it only a listener can
// take the port. Another process may still do so; the caller's listen
// then fails loudly. Skips the test when no run is found.
func FreePortRun(tb testing.TB, n int) int {
	tb.Helper()
	lo, hi := belowEphemeral()
	for try := 0; try < 50; try++ {
		// Where to look: not data a test compares, so not seeded.
		base := lo + rand.IntN(hi-lo-n)
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

// belowEphemeral is the span of ports FreePortRun takes runs from: from
// 10000 up to the first port of the kernel's ephemeral range (Linux's
// ip_local_port_range; 32768 when it cannot be read).
func belowEphemeral() (lo, hi int) {
	lo, hi = 10000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if first, err := strconv.Atoi(f[0]); err == nil && first > lo+1000 {
				hi = first
			}
		}
	}
	return lo, hi
}
