package mqtt

import (
	"math"
	"time"

	"github.com/oncemq/oncemq/inflight"
)

// LatencyBuckets is the number of buckets of a LatencyHistogram.
const LatencyBuckets = inflight.LatencyBuckets

// LatencyHistogram counts durations in buckets: h[i] observations took more than LatencyBound(i-1)
// and at most LatencyBound(i) (not cumulative). The bounds are powers of two from 1µs; the last
// bucket has no bound and holds everything slower.
type LatencyHistogram [LatencyBuckets]uint64

// LatencyBound is the upper bound of bucket i of a LatencyHistogram; 0 for the last bucket, which
// has none.
func LatencyBound(i int) time.Duration { return inflight.LatencyBound(i) }

// Sub is what was observed since prev, an earlier snapshot of the same histogram.
func (h LatencyHistogram) Sub(prev LatencyHistogram) LatencyHistogram {
	for i := range h {
		h[i] -= prev[i]
	}
	return h
}

// Quantile is the upper bound of the bucket that holds quantile q (0 < q <= 1) of the
// observations: the true value is at most that, and more than half of it. It is 0 without
// observations, and twice the largest bound when the quantile lies in the unbounded bucket.
func (h LatencyHistogram) Quantile(q float64) time.Duration {
	var total uint64
	for _, c := range h {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(total))), 1)
	var seen uint64
	for i, c := range h {
		seen += c
		if seen >= rank && i < LatencyBuckets-1 {
			return LatencyBound(i)
		}
	}
	return 2 * LatencyBound(LatencyBuckets-2)
}
