package session

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/oncemq/oncemq/inflight"
)

// BenchmarkDedupWindow is what dedup adds to one PUBLISH when the window is full (1,000,000 ids):
// build the key, look it up (a miss: a new message), evict the oldest, add the new one. It also
// reports the heap the window holds per id, keys included (client id "device-1234", ids
// "reading-NNNNNNN": a 32-byte key).
func BenchmarkDedupWindow(b *testing.B) {
	const full = 1_000_000
	key := func(i int) string {
		return inflight.DedupKey(inflight.DedupScopeClient, "device-1234", "reading-"+strconv.Itoa(10_000_000+i))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	w := newDedupWindow()
	now := time.Now().UnixNano()
	for i := range full {
		w.add(key(i), now, 0)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perID := float64(after.HeapAlloc-before.HeapAlloc) / full
	b.ResetTimer()
	for i := range b.N {
		k := key(full + i)
		if w.lookup(k) != nil {
			b.Fatal("a new key found")
		}
		w.removeOldest()
		w.add(k, now, 0)
	}
	b.StopTimer()
	runtime.KeepAlive(w)
	b.ReportMetric(perID, "bytes/id") // after ResetTimer, which clears reported metrics
}
