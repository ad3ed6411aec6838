package inflight

import (
	"cmp"
	"slices"
)

// Messages are the recovered messages (Recovered.Messages): their Handles in sequence order, as
// bucket msgidx holds them (a key out of order is damage and left out). Start-up used a map of
// every message; with a million queued messages, filling and searching it took a fifth of the
// restart (its hashing and a cache miss per lookup), where a search in a sorted slice mostly
// walks cache lines the previous lookup of the same queue brought in.
type Messages []*Handle

// Get returns the Handle of message seq, or nil when no recovered message has that sequence.
func (ms Messages) Get(seq uint64) *Handle {
	i, ok := slices.BinarySearchFunc(ms, seq, func(h *Handle, seq uint64) int { return cmp.Compare(h.Seq, seq) })
	if !ok {
		return nil
	}
	return ms[i]
}
