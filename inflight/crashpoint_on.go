//go:build failpoint

package inflight

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// crashEnv is session/internal/failpoint's variable, which also checks its value at start.
const crashEnv = "ONCEMQ_CRASH_AT"

// crashAt and crashN are the armed point of this package and its hit count; "" when none.
var crashAt, crashN = parseCrashAt(os.Getenv(crashEnv))

var crashHits atomic.Uint64

func parseCrashAt(v string) (string, uint64) {
	point, count, hasCount := strings.Cut(strings.TrimSpace(v), ":")
	n := uint64(1)
	if hasCount {
		var err error
		if n, err = strconv.ParseUint(count, 10, 64); err != nil || n < 1 {
			return "", 0 // session/internal/failpoint stops the process with the message
		}
	}
	for _, p := range CrashPoints {
		if p == point {
			return point, n
		}
	}
	return "", 0
}

// crashPoint SIGKILLs the process at the armed hit of point, as kill -9 would.
func crashPoint(point string) {
	if crashAt == "" || point != crashAt || crashHits.Add(1) != crashN {
		return
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
