package session

import "hash/maphash"

// dedupWindow is the in-memory index of the dedup ids in the window: the fast path in front of the
// journal's bucket dedup, which stays the authority. Entries are kept oldest first, which is also
// the order they leave in (by age or by count).
//
// Memory per id is one FIFO entry (the key, the time, the answer) and one map slot (a 64-bit hash
// of the key and the entry's number). The key itself is the one string the journal's record uses.
// A hash collision must not make a new message look like a duplicate (that would drop it): the
// index finds a candidate by hash and the key is compared whole; a key whose hash another live key
// already holds goes to spill, a map by the whole key, which is empty but for such collisions.
type dedupWindow struct {
	seed  maphash.Seed
	hash  func(seed maphash.Seed, key string) uint64 // maphash.String; tests force collisions
	index map[uint64]uint64                          // hash -> number of the entry holding it
	spill map[string]uint64                          // key -> number, for keys whose hash was taken
	fifo  []dedupEntry                               // fifo[head:] are live, oldest first
	head  int
	first uint64 // number of fifo[head]; numbers grow by one per entry
}

// dedupEntry is one dedup id: its journal key, when its message was accepted (unix nanoseconds),
// and the reason code it was answered with.
type dedupEntry struct {
	key    string
	at     int64
	reason byte
}

func newDedupWindow() *dedupWindow {
	return &dedupWindow{seed: maphash.MakeSeed(), hash: maphash.String, index: make(map[uint64]uint64),
		spill: make(map[string]uint64), first: 1}
}

// Len is the number of ids in the window.
func (w *dedupWindow) Len() int { return len(w.fifo) - w.head }

// entry returns the live entry numbered n, or nil.
func (w *dedupWindow) entry(n uint64) *dedupEntry {
	if n < w.first || n >= w.first+uint64(w.Len()) {
		return nil
	}
	return &w.fifo[w.head+int(n-w.first)]
}

// lookup returns the entry of key, or nil if key is not in the window.
func (w *dedupWindow) lookup(key string) *dedupEntry {
	if n, ok := w.index[w.hash(w.seed, key)]; ok {
		if e := w.entry(n); e != nil && e.key == key {
			return e
		}
	}
	if n, ok := w.spill[key]; ok {
		return w.entry(n)
	}
	return nil
}

// add puts key in the window as its newest entry. key must not be in it.
func (w *dedupWindow) add(key string, at int64, reason byte) {
	n := w.first + uint64(w.Len())
	h := w.hash(w.seed, key)
	if _, taken := w.index[h]; taken {
		w.spill[key] = n
	} else {
		w.index[h] = n
	}
	w.fifo = append(w.fifo, dedupEntry{key: key, at: at, reason: reason})
}

// oldest returns the oldest entry, or nil when the window is empty.
func (w *dedupWindow) oldest() *dedupEntry {
	if w.Len() == 0 {
		return nil
	}
	return &w.fifo[w.head]
}

// removeOldest takes the oldest entry out of the window and returns its key.
func (w *dedupWindow) removeOldest() string {
	e := w.fifo[w.head]
	n := w.first
	h := w.hash(w.seed, e.key)
	if w.index[h] == n {
		delete(w.index, h)
	} else {
		delete(w.spill, e.key)
	}
	w.fifo[w.head] = dedupEntry{}
	w.head++
	w.first++
	if w.head >= 1024 && w.head*2 >= len(w.fifo) {
		// Reuse the dead front: move the live entries down, so that the slice stops growing.
		w.fifo = append(w.fifo[:0], w.fifo[w.head:]...)
		w.head = 0
	}
	return e.key
}
