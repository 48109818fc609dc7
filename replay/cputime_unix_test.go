//go:build unix

package replay

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used (user and system), for
// benchmarks' CPU figures, steadier than wall time on a shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
