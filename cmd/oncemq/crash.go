package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/oncemq/oncemq/session"
)

// crashEnv names the test-only environment variable that makes `oncemq serve` kill itself at a
// crash point, so that crash tests can stop the real binary between a commit and the packet the
// commit allows (DESIGN.md section 3). ONCEMQ_CRASH_AT=POINT[:N] sends SIGKILL to the process at
// the Nth hit (default 1) of POINT, one of session.CrashPoints. It is for crash tests only: it is
// not a flag and not in the usage text, and production runs leave it unset.
const crashEnv = "ONCEMQ_CRASH_AT"

// crashSpec is a parsed ONCEMQ_CRASH_AT: die at the nth hit of point.
type crashSpec struct {
	point string
	n     uint64 // >= 1
}

// parseCrashAt parses the value of ONCEMQ_CRASH_AT. An empty value (after trimming) means no crash
// point: nil and no error. The error names the variable and lists the valid points.
func parseCrashAt(v string) (*crashSpec, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	point, count, hasCount := strings.Cut(v, ":")
	if !slices.Contains(session.CrashPoints, point) {
		return nil, fmt.Errorf("invalid value %q for environment variable %s: unknown crash point %q; want POINT[:N] with POINT one of %s",
			v, crashEnv, point, strings.Join(session.CrashPoints, ", "))
	}
	spec := &crashSpec{point: point, n: 1}
	if hasCount {
		n, err := strconv.ParseUint(count, 10, 64)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("invalid value %q for environment variable %s: hit count %q must be a whole number of at least 1",
				v, crashEnv, count)
		}
		spec.n = n
	}
	return spec, nil
}

// hook returns the function for mqtt.Config.Crash: it calls die at the nth hit of the point; hits
// of other points are ignored. Safe for concurrent use. A nil spec gives a nil hook (no crash).
func (c *crashSpec) hook(die func()) func(point string) {
	if c == nil {
		return nil
	}
	var hits atomic.Uint64
	return func(point string) {
		if point == c.point && hits.Add(1) == c.n {
			die()
		}
	}
}

// killSelf ends the process as `kill -9` would: no deferred function, no shutdown, no flush. The
// calling goroutine, which is about to send the packet the crash point guards, blocks until the
// signal lands.
func killSelf() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
