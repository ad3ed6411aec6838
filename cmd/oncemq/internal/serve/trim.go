package serve

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Memory trimming. Between bursts the Go runtime keeps the garbage of the last burst and returns
// freed pages to the OS only slowly, so a broker that just accepted 50,000 devices, which then sit
// idle, would look several times its real size for minutes. When the broker has been quiet for a
// trim interval after allocating a fair amount, it collects and returns the memory at once. It never
// runs under load: a busy broker allocates more than quietBytes per interval.
const (
	trimInterval = 5 * time.Second
	quietBytes   = 1 << 20  // allocated in one interval: still quiet
	trimAfter    = 32 << 20 // allocated since the last trim: worth a trim
)

// startTrimming starts the trimming loop; the function it returns stops it and waits for it.
func startTrimming() (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		trimLoop(done)
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// trimLoop runs until done is closed.
func trimLoop(done <-chan struct{}) {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	allocated := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	last := allocated()
	lastTrim := last
	ticker := time.NewTicker(trimInterval)
	defer ticker.Stop()
	for {
		select {
		case <-done:
			return
		case <-ticker.C:
		}
		now := allocated()
		if now-last < quietBytes && now-lastTrim > trimAfter {
			debug.FreeOSMemory()
			now = allocated()
			lastTrim = now
		}
		last = now
	}
}
