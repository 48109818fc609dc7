package testpeer

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortRunBelowEphemeral: the run lies below the ephemeral range,
// where no outgoing connection is given a local port, and every port of it
// can be listened on.
func TestFreePortRunBelowEphemeral(t *testing.T) {
	lo, hi := belowEphemeral()
	if lo != 10000 || hi <= lo {
		t.Fatalf("span %d..%d", lo, hi)
	}
	const n = 6
	base := FreePortRun(t, n)
	if base < lo || base+n > hi {
		t.Fatalf("run %d..%d outside %d..%d", base, base+n-1, lo, hi)
	}
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
		if err != nil {
			t.Fatalf("port %d of the run: %v", base+i, err)
		}
		_ = l.Close()
	}
}
