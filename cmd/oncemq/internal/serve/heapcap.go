package serve

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
)

// Heap cap. At GOGC=400 the heap may grow to five times what is live before the collector runs, so
// a broker whose live heap is a 64 MiB session queue while large refused PUBLISHes stream through
// would sit at 350 MiB of mostly garbage. A soft memory limit of three times the live heap, and never
// under heapCapFloor, bounds that slack without changing anything for a broker whose live heap is
// small (its GOGC goal is under the floor) or large (three times live stays well above the goal of a
// broker at rest). It follows the live heap as the collector measures it; GOMEMLIMIT, if set, wins.
const heapCapFloor = 160 << 20

// heapCap keeps the soft memory limit at three times the live heap; it does nothing when the
// GOMEMLIMIT variable is set.
type heapCap struct {
	on     bool
	sample []metrics.Sample
}

func newHeapCap() *heapCap {
	h := &heapCap{on: os.Getenv("GOMEMLIMIT") == "", sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	h.update()
	return h
}

// update sets the limit from the live heap the last collection measured.
func (h *heapCap) update() {
	if !h.on {
		return
	}
	metrics.Read(h.sample)
	live := h.sample[0].Value.Uint64()
	limit := max(uint64(heapCapFloor), 3*live)
	debug.SetMemoryLimit(int64(min(limit, math.MaxInt64/2)))
}
