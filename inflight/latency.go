package inflight

import (
	"sync/atomic"
	"time"
)

// LatencyBuckets is the number of buckets of a commit latency histogram: bucket i counts commits
// that took at most 2^i microseconds (1µs to about 4.2s), and the last one every slower commit.
const LatencyBuckets = 24

// LatencyBound is the upper bound of bucket i; the last bucket has none (it returns 0).
func LatencyBound(i int) time.Duration {
	if i < 0 || i >= LatencyBuckets-1 {
		return 0
	}
	return time.Duration(1<<i) * time.Microsecond
}

// latencyHistogram counts commit durations (the bbolt transaction with its fsync) in
// LatencyBuckets buckets. Observing is one atomic add, cheap enough for every commit.
type latencyHistogram struct {
	counts [LatencyBuckets]atomic.Uint64
}

func (h *latencyHistogram) observe(d time.Duration) {
	i := 0
	for i < LatencyBuckets-1 && d > LatencyBound(i) {
		i++
	}
	h.counts[i].Add(1)
}

func (h *latencyHistogram) snapshot() [LatencyBuckets]uint64 {
	var out [LatencyBuckets]uint64
	for i := range out {
		out[i] = h.counts[i].Load()
	}
	return out
}
