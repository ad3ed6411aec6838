package mqtt

import (
	"math"
	"testing"
	"time"
)

// The load averages are mosquitto's: a moving average of the rate per minute, decaying over the
// window.
func TestNextLoad(t *testing.T) {
	// 10 messages in 10 s is 60 a minute; from 0, the 1-minute average moves by 1-e^(-10/60).
	if got, want := nextLoad(0, 10, 10, 60), 60*(1-math.Exp(-10.0/60)); math.Abs(got-want) > 1e-9 {
		t.Errorf("first step: %v, want %v", got, want)
	}
	load := 0.0
	for range 1000 {
		load = nextLoad(load, 10, 10, 300)
	}
	if math.Abs(load-60) > 1e-6 {
		t.Errorf("steady 60/min: 5-minute load %v, want 60", load)
	}
	if got := nextLoad(5, 3, 0, 60); got != 5 {
		t.Errorf("no time elapsed: %v, want the previous value 5", got)
	}
}

func TestLatencyQuantile(t *testing.T) {
	var h LatencyHistogram
	if got := h.Quantile(0.99); got != 0 {
		t.Errorf("empty: %v, want 0", got)
	}
	h[3] = 99 // at most 8µs
	h[10] = 1 // at most 1024µs
	if got := h.Quantile(0.99); got != 8*time.Microsecond {
		t.Errorf("p99: %v, want 8µs", got)
	}
	if got := h.Quantile(1); got != 1024*time.Microsecond {
		t.Errorf("p100: %v, want 1.024ms", got)
	}
	prev := h
	h[LatencyBuckets-1] = 5 // slower than every bound
	if got := h.Sub(prev).Quantile(0.5); got != 2*LatencyBound(LatencyBuckets-2) {
		t.Errorf("unbounded bucket: %v", got)
	}
}

func TestWireSize(t *testing.T) {
	for remaining, want := range map[int]int{0: 2, 127: 129, 128: 131, 16383: 16386, 16384: 16388} {
		if got := wireSize(remaining); got != want {
			t.Errorf("wireSize(%d) = %d, want %d", remaining, got, want)
		}
	}
}
