package inflight

import (
	"cmp"
	"slices"
)

// Messages are the recovered messages (Recovered.Messages): their Handles in sequence order, as
// bucket msgidx holds them (a key out of order is damage and left out). Start-up used a map of
// every message; with a million queued messages, filling and searching it took a fifth of the
// restart (its hashing and a cache miss per lookup).
type Messages []*Handle

// Get returns the Handle of message seq, or nil when no recovered message has that sequence.
func (ms Messages) Get(seq uint64) *Handle {
	if len(ms) == 0 {
		return nil
	}
	if i := guessPlace(ms[0].Seq, ms[len(ms)-1].Seq, seq, len(ms)); i >= 0 && ms[i].Seq == seq {
		return ms[i]
	}
	i, ok := slices.BinarySearchFunc(ms, seq, func(h *Handle, seq uint64) int { return cmp.Compare(h.Seq, seq) })
	if !ok {
		return nil
	}
	return ms[i]
}

// guessPlace returns where seq would be among n ascending sequences from first to last if they
// were evenly spread, or -1 when seq is outside them. Sequences are handed out one after another
// and the messages that stay are mostly those of a run, so the guess is usually the place, and a
// lookup one read instead of twenty steps of a bisection.
func guessPlace(first, last, seq uint64, n int) int {
	if seq < first || seq > last {
		return -1
	}
	if first == last {
		return 0
	}
	return int(float64(seq-first) / float64(last-first) * float64(n-1))
}
