//go:build failpoint

package failpoint

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/session/reason"
)

// Enabled reports whether this binary was built with crash points.
const Enabled = true

// armed is the point read from Env at start; nil when Env is unset.
var armed = mustParse(os.Getenv(Env))

// spec is a parsed ONCEMQ_CRASH_AT: die at the nth hit of point.
type spec struct {
	point string
	n     uint64 // >= 1
	hits  atomic.Uint64
}

func mustParse(v string) *spec {
	s, err := parse(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "oncemq: %v\n", err)
		os.Exit(2)
	}
	if s != nil {
		fmt.Fprintf(os.Stderr, "oncemq: crash point armed: the process will SIGKILL itself at hit %d of %s\n", s.n, s.point)
	}
	return s
}

// parse reads a value of ONCEMQ_CRASH_AT. An empty value means no point: nil and no error.
func parse(v string) (*spec, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	point, count, hasCount := strings.Cut(v, ":")
	if !slices.Contains(Points, point) {
		return nil, fmt.Errorf("invalid value %q for environment variable %s: unknown crash point %q; want POINT[:N] with POINT one of %s",
			v, Env, point, strings.Join(Points, ", "))
	}
	s := &spec{point: point, n: 1}
	if hasCount {
		n, err := strconv.ParseUint(count, 10, 64)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("invalid value %q for environment variable %s: hit count %q must be a whole number of at least 1",
				v, Env, count)
		}
		s.n = n
	}
	return s, nil
}

// BeforeSend is called after the commit that allows a packet and before the packet is handed to
// its connection: typ is its type, qos a PUBLISH's QoS, code an acknowledgement's reason code. It
// SIGKILLs the process at the armed hit of the packet's crash point.
func BeforeSend(typ, qos byte, code reason.Code) {
	p := pointOf(typ, qos, code)
	if armed == nil || p != armed.point || armed.hits.Add(1) != armed.n {
		return
	}
	// As kill -9 would: no deferred function, no flush. This goroutine, about to send the packet
	// the point guards, blocks until the signal lands.
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// pointOf names the crash point before sending a packet, or "" for packets that promise nothing.
func pointOf(typ, qos byte, code reason.Code) string {
	switch typ {
	case packets.Pubrec:
		if !code.IsFailure() {
			return BeforePubrec
		}
	case packets.Puback:
		if !code.IsFailure() {
			return BeforePuback
		}
	case packets.Pubcomp:
		return BeforePubcomp
	case packets.Publish:
		if qos > 0 {
			return BeforePublish
		}
	case packets.Pubrel:
		return BeforePubrel
	}
	return ""
}
