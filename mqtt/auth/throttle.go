package auth

import (
	"context"
	"net"
	"sync"
	"time"
)

// throttle slows failed logins per remote address (IP, without the port): the n-th failure in a
// row waits base x 2^(n-1), at most limit, before its CONNACK. A success from the address, or quiet
// for quiet, starts it over. The table holds at most maxAddrs addresses, so that a flood from many
// addresses costs bounded memory: when it is full, entries past their quiet period go first, then
// any one.
type throttle struct {
	base, limit, quiet time.Duration
	maxAddrs           int
	now                func() time.Time

	mu       sync.Mutex
	failures map[string]failure
}

type failure struct {
	count int
	last  time.Time
}

func newThrottle(base, limit, quiet time.Duration, maxAddrs int) *throttle {
	return &throttle{base: base, limit: limit, quiet: quiet, maxAddrs: maxAddrs, now: time.Now,
		failures: make(map[string]failure)}
}

// hostOf is the address a remote is throttled by: its IP, so that new ports do not start over.
func hostOf(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// fail records a failure from addr and waits the delay it earns, or until ctx ends. It returns the
// delay it meant to wait.
func (t *throttle) fail(ctx context.Context, addr net.Addr) time.Duration {
	d := t.record(hostOf(addr))
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	return d
}

// record counts a failure from host and returns its delay.
func (t *throttle) record(host string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	f, ok := t.failures[host]
	if !ok || now.Sub(f.last) > t.quiet {
		f = failure{}
		if !ok && len(t.failures) >= t.maxAddrs {
			t.evict(now)
		}
	}
	f.count++
	f.last = now
	t.failures[host] = f
	d := t.base
	for i := 1; i < f.count && d < t.limit; i++ {
		d *= 2
	}
	return min(d, t.limit)
}

// evict makes room for one address. Caller holds t.mu.
func (t *throttle) evict(now time.Time) {
	for h, f := range t.failures {
		if now.Sub(f.last) > t.quiet {
			delete(t.failures, h)
		}
	}
	for h := range t.failures {
		if len(t.failures) < t.maxAddrs {
			return
		}
		delete(t.failures, h)
	}
}

// succeed forgets the failures of addr.
func (t *throttle) succeed(addr net.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.failures, hostOf(addr))
}

// tracked is the number of addresses in the table.
func (t *throttle) tracked() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.failures)
}
