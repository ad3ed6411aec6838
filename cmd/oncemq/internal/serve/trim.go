package serve

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Memory trimming. Between bursts the Go runtime keeps the garbage of the last burst and returns
// freed pages to the OS only slowly (at GOGC=400 the next collection may be gigabytes away), so a
// broker that held a large queue for a subscriber that was then dropped would keep that memory for
// minutes. When the broker has been quiet for a trim interval, it collects and returns memory at
// once, if either it allocated a fair amount since the last trim, or the heap it holds from the OS
// is large: garbage it cannot see without a collection, such as a dropped connection's queue. The
// second kind backs off while trims find nothing to return, so that a broker whose large heap is
// all live is not collected every interval. It never runs under load: a busy broker allocates more
// than quietBytes per interval.
const (
	trimInterval = 5 * time.Second
	quietBytes   = 1 << 20  // allocated in one interval: still quiet
	trimAfter    = 32 << 20 // allocated since the last trim, or held from the OS: worth a trim
	maxBackoff   = time.Minute
)

// startTrimming starts the trimming loop; the function it returns stops it and waits for it.
func startTrimming() (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		trimLoop(done, trimInterval)
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// memSample reads what trimming decides on.
type memSample struct{ allocated, held uint64 }

func readMem() memSample {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	return memSample{allocated: s[0].Value.Uint64(), held: s[1].Value.Uint64() + s[2].Value.Uint64() + s[3].Value.Uint64()}
}

// trimLoop runs until done is closed.
func trimLoop(done <-chan struct{}, interval time.Duration) {
	heap := newHeapCap()
	capTicker := time.NewTicker(time.Second)
	defer capTicker.Stop()
	last := readMem()
	lastTrim := last.allocated
	backoff, nextSpeculative := interval, time.Time{}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-done:
			return
		case <-capTicker.C:
			heap.update()
			continue
		case <-ticker.C:
		}
		now := readMem()
		quiet := now.allocated-last.allocated < quietBytes
		switch {
		case !quiet:
			backoff = interval // activity: the next quiet spell may leave garbage behind
		case now.allocated-lastTrim > trimAfter:
			now = trim()
			lastTrim = now.allocated
		case now.held > trimAfter && !time.Now().Before(nextSpeculative):
			before := now.held
			now = trim()
			lastTrim = now.allocated
			if before-min(before, now.held) < trimAfter {
				backoff = min(2*backoff, maxBackoff) // the heap was live: ask less often
			} else {
				backoff = interval
			}
			nextSpeculative = time.Now().Add(backoff)
		}
		last = now
	}
}

// trim collects and returns the freed memory to the OS.
func trim() memSample {
	debug.FreeOSMemory()
	return readMem()
}
